// The connection IDs the peer issued us to put in packets to it (RFC 9000
// §5.1.1-§5.1.2, §19.15-§19.16): the one from its first packet (sequence 0)
// and those its NEW_CONNECTION_ID frames add, with their stateless reset
// tokens; the Retire Prior To it asks for, and the RETIRE_CONNECTION_ID frames
// that answer it, kept until acknowledged. Bounded by the
// active_connection_id_limit we advertised. Sans-I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ndm/connection.hpp"
#include "wire/frame.hpp"
#include "transport/frame_sink.hpp"
#include "wire/packet.hpp"
#include "wire/transport_params.hpp"

namespace ndm::transport {

struct ConnectionIdError {
    CloseCode code;
    std::string reason;
};

class PeerConnectionIds {
public:
    // `limit`: the active_connection_id_limit we advertised (at least 2).
    explicit PeerConnectionIds(std::uint64_t limit) : limit_(limit) {}

    // Sequence 0: the peer's first Source Connection ID, and (from a server's
    // transport parameters) its reset token.
    void set_initial(const wire::ConnectionId& cid);
    void set_initial_reset_token(const wire::ResetToken& token);

    // RFC 9000 §19.15. On success the ID in use may have changed (current()):
    // a Retire Prior To above its sequence number retires it.
    std::optional<ConnectionIdError> on_new_connection_id(const wire::NewConnectionIdFrame& f);

    // The ID packets to the peer carry: the one use() chose while it is
    // active, else the lowest.
    [[nodiscard]] const wire::ConnectionId& current() const { return current_entry().cid; }
    [[nodiscard]] std::uint64_t current_sequence() const { return current_entry().sequence; }
    // Paths (RFC 9000 §9.5): the ID of a sequence number if active; the
    // lowest active one none of `taken` names (and not current()); the ID
    // packets carry from now on; an ID this side no longer uses, retired
    // (RETIRE_CONNECTION_ID; never the last one).
    [[nodiscard]] const wire::ConnectionId* find(std::uint64_t sequence) const;
    [[nodiscard]] std::optional<std::uint64_t> spare(std::span<const std::uint64_t> taken) const;
    void use(std::uint64_t sequence) { in_use_ = sequence; }
    void retire_unused(std::uint64_t sequence);
    // RFC 9000 §10.3.1: whether the datagram ends in a reset token the peer
    // issued for an ID not retired (compared in constant time).
    [[nodiscard]] bool is_stateless_reset(std::span<const std::uint8_t> datagram) const;

    // RETIRE_CONNECTION_ID frames to send, acknowledged, or lost (sent again).
    [[nodiscard]] bool has_pending() const { return !to_send_.empty(); }
    void write_frames(FrameSink& sink);
    void on_acked(std::uint64_t sequence);
    void on_lost(std::uint64_t sequence);

    [[nodiscard]] std::size_t active() const { return entries_.size(); }

private:
    struct Entry {
        std::uint64_t sequence;
        wire::ConnectionId cid;
        std::optional<wire::ResetToken> reset_token;
    };
    void retire_below(std::uint64_t retire_prior_to);
    [[nodiscard]] const Entry& current_entry() const;
    std::uint64_t in_use_ = 0;
    void retire(std::uint64_t sequence);

    std::uint64_t limit_;
    std::vector<Entry> entries_;  // by sequence number; front() is in use
    std::uint64_t retire_prior_to_ = 0;
    std::vector<std::uint64_t> to_send_;    // RETIRE_CONNECTION_ID not yet sent (or lost)
    std::vector<std::uint64_t> in_flight_;  // sent, not yet acknowledged
};

}  // namespace ndm::transport
