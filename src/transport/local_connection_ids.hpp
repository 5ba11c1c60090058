// The connection IDs this side issues for the peer to put in its packets
// (RFC 9000 §5.1, §19.15-§19.16): sequence 0 from the handshake, and the
// NEW_CONNECTION_ID frames that add more, up to the smaller of the peer's
// active_connection_id_limit and a cap of our own, each with a stateless
// reset token (§10.3.2); the peer's RETIRE_CONNECTION_ID frames, range-checked,
// and a replacement for each ID retired. The driver learns which IDs to route
// by and which to forget through take_changes() (the Endpoint's router).
// Sans-I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "transport/frame_sink.hpp"
#include "transport/peer_connection_ids.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"

namespace ndm::transport {

// IDs issued at once, whatever the peer allows: each costs a routing entry
// at the endpoint and a NEW_CONNECTION_ID; enough for a migration and a
// NAT rebinding in flight (RFC 9000 §5.1.1, §9.5). docs/security.md.
inline constexpr std::uint64_t kMaxIssuedConnectionIds = 8;

class LocalConnectionIds {
public:
    using NewCid = std::function<wire::ConnectionId()>;
    using ResetToken = std::function<wire::ResetToken(std::span<const std::uint8_t> cid)>;

    // Sequence 0: the Source Connection ID of the handshake.
    void set_initial(const wire::ConnectionId& cid);

    // Issues IDs until min(peer_limit, kMaxIssuedConnectionIds) are active
    // (RFC 9000 §5.1.1): called once the peer's transport parameters are
    // known and after each retirement.
    void issue(std::uint64_t peer_limit, const NewCid& new_cid, const ResetToken& token);

    // The sequence number of an active ID, if `cid` is one.
    [[nodiscard]] std::optional<std::uint64_t> sequence_of(std::span<const std::uint8_t> cid) const;
    [[nodiscard]] bool contains(std::span<const std::uint8_t> cid) const { return sequence_of(cid).has_value(); }

    // RFC 9000 §19.16: a sequence number never issued, or the one of the ID
    // the packet arrived with (`arrived_on`), is a PROTOCOL_VIOLATION; a
    // repeat is ignored. The ID is forgotten (take_changes) and may be replaced.
    std::optional<ConnectionIdError> on_retire(std::uint64_t sequence, std::span<const std::uint8_t> arrived_on);

    // NEW_CONNECTION_ID frames to send, acknowledged, or lost (sent again
    // while the ID is active: RFC 9000 §13.3).
    [[nodiscard]] bool has_pending() const { return !to_send_.empty(); }
    void write_frames(FrameSink& sink);
    void on_lost(std::uint64_t sequence);

    // IDs added (true) and retired (false) since the last call, for the router.
    struct Change {
        wire::ConnectionId cid;
        bool added;
    };
    std::vector<Change> take_changes();
    [[nodiscard]] bool has_changes() const { return !changes_.empty(); }

    [[nodiscard]] std::size_t active() const { return entries_.size(); }
    [[nodiscard]] std::uint64_t next_sequence() const { return next_sequence_; }

private:
    struct Entry {
        std::uint64_t sequence;
        wire::ConnectionId cid;
        wire::ResetToken token;
    };
    const Entry* find(std::uint64_t sequence) const;

    std::vector<Entry> entries_;  // active, by sequence number
    std::uint64_t next_sequence_ = 1;
    std::vector<std::uint64_t> to_send_;
    std::vector<Change> changes_;
};

}  // namespace ndm::transport
