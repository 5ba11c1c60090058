#include "transport/peer_connection_ids.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "crypto/stateless_reset.hpp"

namespace ndm::transport {

namespace {
// RFC 9000 §5.1.2: retirements not yet acknowledged are bounded; at least
// twice the active limit must be allowed.
constexpr std::uint64_t kRetirementsPerLimit = 2;
}  // namespace

// Until the handshake settles, a client follows the server's Source
// Connection ID (RFC 9000 §7.2); once sequence 0 is retired it is gone.
void PeerConnectionIds::set_initial(const wire::ConnectionId& cid) {
    if (entries_.empty()) entries_.push_back(Entry{0, cid, std::nullopt});
    else if (entries_.front().sequence == 0) entries_.front().cid = cid;
}

void PeerConnectionIds::set_initial_reset_token(const wire::ResetToken& token) {
    for (Entry& e : entries_)
        if (e.sequence == 0) e.reset_token = token;
}

std::optional<ConnectionIdError> PeerConnectionIds::on_new_connection_id(const wire::NewConnectionIdFrame& f) {
    if (current().length == 0)
        return ConnectionIdError{CloseCode::protocol_violation,
                                 "NEW_CONNECTION_ID from a peer that uses zero-length connection IDs"};
    const wire::ConnectionId cid = wire::ConnectionId::from(f.cid);
    wire::ResetToken token{};
    std::copy_n(f.reset_token.begin(), token.size(), token.begin());
    if (f.sequence < retire_prior_to_) {
        retire(f.sequence);  // RFC 9000 §19.15: retired on arrival
    } else if (auto it = std::ranges::find(entries_, f.sequence, &Entry::sequence); it != entries_.end()) {
        if (!(it->cid == cid) || it->reset_token != token)
            return ConnectionIdError{CloseCode::protocol_violation,
                                     fmt::format("NEW_CONNECTION_ID sequence number {} repeated with another "
                                                 "connection ID or reset token", f.sequence)};
        // A retransmission of one we have: nothing changes.
    } else if (std::ranges::any_of(entries_, [&](const Entry& e) { return e.cid == cid; })) {
        return ConnectionIdError{CloseCode::protocol_violation,
                                 fmt::format("NEW_CONNECTION_ID sequence number {} repeats the connection ID of "
                                             "another sequence number", f.sequence)};
    } else {
        const auto pos = std::ranges::upper_bound(entries_, f.sequence, {}, &Entry::sequence);
        entries_.insert(pos, Entry{f.sequence, cid, token});
    }
    if (f.retire_prior_to > retire_prior_to_) retire_below(f.retire_prior_to);
    // RFC 9000 §5.1.1: IDs the peer asked us to retire do not count.
    if (entries_.size() > limit_)
        return ConnectionIdError{CloseCode::connection_id_limit_error,
                                 fmt::format("the peer issued {} active connection IDs; the limit is {}",
                                             entries_.size(), limit_)};
    if (to_send_.size() + in_flight_.size() > kRetirementsPerLimit * limit_)
        return ConnectionIdError{CloseCode::connection_id_limit_error,
                                 fmt::format("more than {} connection ID retirements unacknowledged",
                                             kRetirementsPerLimit * limit_)};
    return std::nullopt;
}

void PeerConnectionIds::retire_below(std::uint64_t retire_prior_to) {
    retire_prior_to_ = retire_prior_to;
    while (!entries_.empty() && entries_.front().sequence < retire_prior_to) {
        retire(entries_.front().sequence);
        entries_.erase(entries_.begin());
    }
}

void PeerConnectionIds::retire(std::uint64_t sequence) {
    if (std::ranges::find(to_send_, sequence) == to_send_.end() &&
        std::ranges::find(in_flight_, sequence) == in_flight_.end())
        to_send_.push_back(sequence);
}

const PeerConnectionIds::Entry& PeerConnectionIds::current_entry() const {
    for (const Entry& e : entries_)
        if (e.sequence == in_use_) return e;
    return entries_.front();
}

const wire::ConnectionId* PeerConnectionIds::find(std::uint64_t sequence) const {
    for (const Entry& e : entries_)
        if (e.sequence == sequence) return &e.cid;
    return nullptr;
}

std::optional<std::uint64_t> PeerConnectionIds::spare(std::span<const std::uint64_t> taken) const {
    const std::uint64_t cur = current_sequence();
    for (const Entry& e : entries_)
        if (e.sequence != cur && std::ranges::find(taken, e.sequence) == taken.end() && e.cid.length > 0)
            return e.sequence;
    return std::nullopt;
}

void PeerConnectionIds::retire_unused(std::uint64_t sequence) {
    if (entries_.size() <= 1) return;
    const auto it = std::ranges::find(entries_, sequence, &Entry::sequence);
    if (it == entries_.end()) return;
    entries_.erase(it);
    retire(sequence);
}

bool PeerConnectionIds::is_stateless_reset(std::span<const std::uint8_t> datagram) const {
    bool found = false;  // every token compared: no early exit to time
    for (const Entry& e : entries_)
        if (e.reset_token) found |= crypto::is_stateless_reset(datagram, *e.reset_token);
    return found;
}

void PeerConnectionIds::write_frames(FrameSink& sink) {
    while (!to_send_.empty()) {
        const std::uint64_t seq = to_send_.front();
        if (!sink.put(wire::RetireConnectionIdFrame{seq}, sent::RetireConnectionId{seq})) return;
        to_send_.erase(to_send_.begin());
        in_flight_.push_back(seq);
    }
}

void PeerConnectionIds::on_acked(std::uint64_t sequence) { std::erase(in_flight_, sequence); }

void PeerConnectionIds::on_lost(std::uint64_t sequence) {
    if (std::erase(in_flight_, sequence) > 0) to_send_.push_back(sequence);
}

}  // namespace ndm::transport
