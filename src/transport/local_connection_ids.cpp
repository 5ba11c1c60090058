#include "transport/local_connection_ids.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ndm::transport {

void LocalConnectionIds::set_initial(const wire::ConnectionId& cid) {
    if (entries_.empty()) entries_.push_back(Entry{0, cid, {}});
    else if (entries_.front().sequence == 0) entries_.front().cid = cid;
}

void LocalConnectionIds::issue(std::uint64_t peer_limit, const NewCid& new_cid, const ResetToken& token) {
    const std::uint64_t target = std::min(peer_limit, kMaxIssuedConnectionIds);
    while (entries_.size() < target) {
        wire::ConnectionId cid = new_cid();
        // RFC 9000 §5.1: one ID, one sequence number; a repeat (2^-64 odds
        // from a random source) is drawn again.
        if (contains(cid.span())) continue;
        const std::uint64_t seq = next_sequence_++;
        entries_.push_back(Entry{seq, cid, token(cid.span())});
        to_send_.push_back(seq);
        changes_.push_back(Change{cid, true});
    }
}

const LocalConnectionIds::Entry* LocalConnectionIds::find(std::uint64_t sequence) const {
    const auto it = std::ranges::find(entries_, sequence, &Entry::sequence);
    return it == entries_.end() ? nullptr : &*it;
}

std::optional<std::uint64_t> LocalConnectionIds::sequence_of(std::span<const std::uint8_t> cid) const {
    for (const Entry& e : entries_)
        if (std::ranges::equal(e.cid.span(), cid)) return e.sequence;
    return std::nullopt;
}

std::optional<ConnectionIdError> LocalConnectionIds::on_retire(std::uint64_t sequence,
                                                               std::span<const std::uint8_t> arrived_on) {
    if (sequence >= next_sequence_)
        return ConnectionIdError{CloseCode::protocol_violation,
                                 fmt::format("RETIRE_CONNECTION_ID for sequence number {}, which was never issued "
                                             "(highest {})",
                                             sequence, next_sequence_ - 1)};
    const auto it = std::ranges::find(entries_, sequence, &Entry::sequence);
    if (it == entries_.end()) return std::nullopt;  // retired before: a repeat
    if (std::ranges::equal(it->cid.span(), arrived_on))
        return ConnectionIdError{CloseCode::protocol_violation,
                                 fmt::format("RETIRE_CONNECTION_ID for sequence number {} in a packet sent with "
                                             "that connection ID",
                                             sequence)};
    changes_.push_back(Change{it->cid, false});
    entries_.erase(it);
    std::erase(to_send_, sequence);
    return std::nullopt;
}

void LocalConnectionIds::write_frames(FrameSink& sink) {
    while (!to_send_.empty()) {
        const Entry* e = find(to_send_.front());
        if (e) {
            wire::NewConnectionIdFrame f;
            f.sequence = e->sequence;
            f.retire_prior_to = 0;
            f.cid = e->cid.span();
            f.reset_token = e->token;
            if (!sink.put(f, sent::NewConnectionId{e->sequence})) return;
        }
        to_send_.erase(to_send_.begin());
    }
}

void LocalConnectionIds::on_lost(std::uint64_t sequence) {
    if (find(sequence) && std::ranges::find(to_send_, sequence) == to_send_.end()) to_send_.push_back(sequence);
}

std::vector<LocalConnectionIds::Change> LocalConnectionIds::take_changes() {
    std::vector<Change> out;
    out.swap(changes_);
    return out;
}

}  // namespace ndm::transport
