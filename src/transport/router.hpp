// The sans-I/O router of a QUIC endpoint: what becomes of each received
// datagram, decided with no socket and no clock of its own (the caller passes
// the time in), in the shape of quinn-proto's Endpoint::handle() and msquic's
// binding. It owns the connection-ID → connection map (many IDs to one
// connection, RFC 9000 §5.1), the peer-address → connections map, the
// admission of new connections (the Retry and address-token gate, §8.1.2;
// the half-open and per-host caps, docs/security.md), Version Negotiation for
// an unknown version (§6, §5.2.2) and stateless reset for an unknown ID
// (§10.3). The driver (src/io/endpoint.cpp) keeps the sockets, batching,
// timers and receive budget; it calls handle() for every datagram and does
// what the result says.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "crypto/stateless_reset.hpp"
#include "ndm/connection.hpp"
#include "transport/peer_address.hpp"
#include "transport/retry_gate.hpp"
#include "transport/stateless_reset_responder.hpp"

namespace ndm::transport {

struct RouterConfig {
    // A server's router admits connections from Initials; a client's only
    // routes to the connections it was given (add()).
    bool accept_connections = false;
    RetryMode retry = RetryMode::under_load;
    std::size_t retry_threshold = 128;
    // Handshakes held at once; a new one beyond it evicts the oldest.
    std::size_t max_half_open = 1024;
    // Accepted connections per peer host; beyond it only an address a Retry
    // token proves gets in, in place of that host's oldest handshake.
    std::size_t max_connections_per_host = 256;
    std::optional<std::array<std::uint8_t, crypto::StatelessResetKey::kSize>> stateless_reset_key;
    // The configuration of each connection the router accepts (its seed,
    // random source, observer...): called once per admitted connection.
    std::function<ConnectionConfig()> connection_config;
    // Each admitted connection gives its client a NEW_TOKEN token (RFC 9000
    // §8.1.3) that skips the Retry of a later connection from its address.
    bool issue_tokens = true;
};

// Why a datagram was dropped (RouterStats::dropped counts each).
enum class RouteDrop : std::uint8_t {
    malformed,         // no connection ID could be read
    unknown_cid,       // no connection has its ID, and it is not answered
    not_accepting,     // an Initial to a router that accepts none
    per_host_cap,      // over max_connections_per_host without a proven address
    invalid_token,     // a Retry token forged, expired or for another address
    not_a_connection,  // an Initial that starts no connection (short, no TLS, bad header)
};
inline constexpr std::size_t kRouteDrops = 6;
const char* to_string(RouteDrop d);

struct RouterStats {
    std::array<std::uint64_t, kRouteDrops> dropped{};
    std::uint64_t accepted = 0;
    std::uint64_t retries_sent = 0;
    std::uint64_t version_negotiations_sent = 0;
    std::uint64_t stateless_resets_sent = 0;
    std::uint64_t half_open_evicted = 0;  // for max_half_open or max_connections_per_host
    [[nodiscard]] std::uint64_t drops(RouteDrop d) const { return dropped[static_cast<std::size_t>(d)]; }
};

class Router {
public:
    using Handle = std::uint64_t;  // a connection's number, never reused; 0 is none

    // A handshake dropped to make room for a new connection.
    struct Eviction {
        Handle handle = 0;
        const char* why = "";  // for its CONNECTION_CLOSE reason
    };

    // What handle() decided.
    struct Routed {
        enum class Kind : std::uint8_t {
            connection,   // for the connection `handle`
            accepted,     // a new connection, `connection`, registered as `handle`
            respond,      // send `response` back to the sender (Retry, Version Negotiation, stateless reset)
            offer_reset,  // no connection has its ID: it may be a stateless reset from the peer of
                          // `candidates` (§10.3.1); offer it to them, and if none takes it, answer with reset()
            drop,         // dropped for `reason`
        };
        Kind kind = Kind::drop;
        Handle handle = 0;
        std::unique_ptr<Connection> connection;
        // accepted: handshakes evicted to make room; the caller ends them
        // without a closing period (a SYN cache's eviction).
        std::vector<Eviction> evicted;
        std::vector<std::uint8_t> response;
        std::vector<Handle> candidates;
        RouteDrop reason = RouteDrop::malformed;
    };

    explicit Router(RouterConfig config);
    ~Router();
    Router(const Router&) = delete;
    Router& operator=(const Router&) = delete;

    // One received datagram from `from` at `now`.
    Routed handle(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram, Ecn ecn);

    // A connection the caller made (a client's), reached through its local ID.
    Handle add(const PeerAddress& peer, std::span<const std::uint8_t> local_cid);
    // Another ID of a connection (one it issued): routes to it as well.
    void add_cid(Handle h, std::span<const std::uint8_t> cid);
    // An ID the peer retired (RFC 9000 §19.16): no longer routes.
    void remove_cid(Handle h, std::span<const std::uint8_t> cid);
    // The connection's peer moved to `peer` (RFC 9000 §9.3): connections_to()
    // and the stateless-reset candidates follow it.
    void set_peer(Handle h, const PeerAddress& peer);
    // The connection's handshake completed (or it closed): no longer half-open.
    void established(Handle h);
    // Forgets the connection: its IDs, its address, its place in the caps.
    void remove(Handle h);

    // After offer_reset, when no candidate took the datagram as its peer's
    // reset: this endpoint's stateless reset answering it, or nothing (a
    // client's router, a long header, too short, the rate limit).
    std::vector<std::uint8_t> reset(Instant now, std::span<const std::uint8_t> datagram);
    // The connections whose peer is `peer` (for an ICMP error).
    [[nodiscard]] std::vector<Handle> connections_to(const PeerAddress& peer) const;
    // The stateless reset token of an ID this endpoint issues, for
    // ConnectionConfig::stateless_reset_token; empty on a client's router.
    [[nodiscard]] std::function<crypto::StatelessResetToken(std::span<const std::uint8_t>)> reset_tokens() const;

    [[nodiscard]] const RouterStats& stats() const { return stats_; }
    [[nodiscard]] std::size_t half_open() const { return half_open_count_; }
    [[nodiscard]] std::size_t size() const { return conns_.size(); }

private:
    struct Entry {
        PeerAddress peer;
        std::vector<std::uint64_t> keys;  // routing keys of its IDs
        bool half_open = false;
        bool accepted = false;  // counted in per_host_
        PeerAddress admitted_host;  // where it is counted (the peer may move, set_peer)
    };

    Routed drop(RouteDrop why);
    Handle insert(const PeerAddress& peer, std::span<const std::uint8_t> cid);
    void add_key(Handle h, Entry& e, std::span<const std::uint8_t> cid);
    Routed unknown_short(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram);
    Routed initial(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram, Ecn ecn,
                   std::span<const std::uint8_t> dcid);
    Routed version_negotiation(std::span<const std::uint8_t> datagram);
    void leave_half_open(Entry& e);
    void evict(Handle h, Entry& e, const char* why, std::vector<Eviction>& out);
    void prune_half_open_order();

    RouterConfig cfg_;
    std::unique_ptr<RetryGate> retry_gate_;                     // a server's
    std::shared_ptr<StatelessResetResponder> resets_;           // a server's
    std::unordered_map<Handle, Entry> conns_;
    std::unordered_map<std::uint64_t, Handle> routes_;
    // The route the last datagram took: a sender's datagrams come in runs of
    // one connection's, and with many connections the table's buckets are
    // not in the cache. Forgotten whenever `routes_` changes.
    std::uint64_t last_key_ = 0;
    Handle last_route_ = 0;
    std::unordered_multimap<PeerAddress, Handle, PeerAddressHash> by_peer_;
    std::unordered_map<PeerAddress, std::size_t, PeerAddressHash> per_host_;  // entries at 0 erased
    std::deque<Handle> half_open_order_;  // oldest first; may hold handles no longer half-open
    std::size_t half_open_count_ = 0;
    Handle next_handle_ = 1;
    RouterStats stats_;
};

}  // namespace ndm::transport
