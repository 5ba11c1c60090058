// Router: see router.hpp. The admission order is the one src/io/endpoint.cpp
// had before the router took it over: the per-host cap first (without Retry,
// an Initial over it is dropped), then the token (an invalid one is dropped,
// a valid one admits at once), then Retry when the gate wants one, then the
// connection; room is made for it last, by evicting the host's oldest
// handshake (over the per-host cap) and the oldest handshake of all (over
// max_half_open).
#include "transport/router.hpp"

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "wire/quic_header.hpp"

namespace ndm::transport {

namespace {

// Routing key of a connection ID: the 8 bytes ndm issues as an integer, other
// lengths hashed (the Connection checks the full ID anyway).
std::uint64_t cid_key(std::span<const std::uint8_t> cid) {
    std::uint64_t k = 0;
    if (cid.size() == 8) {
        std::memcpy(&k, cid.data(), 8);
        return k;
    }
    k = 1469598103934665603ull ^ cid.size();
    for (auto b : cid) k = (k ^ b) * 1099511628211ull;
    return k;
}

struct HeaderPeek {
    std::span<const std::uint8_t> dcid;
    bool long_header = false;
    std::uint32_t version = 0;
    bool known_version = false;  // a long header of a version ndm speaks
    bool initial = false;        // ... and of its Initial type (RFC 9000 §17.2, RFC 9369 §3.2)
};

// The destination ID without verifying anything else: the Connection parses
// the whole packet once, on its own.
bool peek(std::span<const std::uint8_t> d, HeaderPeek& out) {
    if (d.empty()) return false;
    if (d[0] & 0x80) {  // long header: flags | version u32 | dcid_len | dcid ... (RFC 8999 §5.1)
        if (d.size() < 6 || d[5] > 20 || d.size() < 6u + d[5]) return false;
        out.long_header = true;
        out.dcid = d.subspan(6, d[5]);
        out.version = (std::uint32_t{d[1]} << 24) | (std::uint32_t{d[2]} << 16) | (std::uint32_t{d[3]} << 8) | d[4];
        const auto known = crypto::known_version(out.version);
        out.known_version = known.has_value();
        out.initial = known && wire::quic::long_packet_kind(*known, d[0]) == wire::quic::PacketKind::initial;
        return true;
    }
    if (d.size() < 1 + wire::kShortCidLength) return false;
    out.dcid = d.subspan(1, wire::kShortCidLength);
    return true;
}

}  // namespace

const char* to_string(RouteDrop d) {
    switch (d) {
        case RouteDrop::malformed: return "malformed";
        case RouteDrop::unknown_cid: return "unknown_cid";
        case RouteDrop::not_accepting: return "not_accepting";
        case RouteDrop::per_host_cap: return "per_host_cap";
        case RouteDrop::invalid_token: return "invalid_token";
        case RouteDrop::not_a_connection: return "not_a_connection";
    }
    return "?";
}

Router::Router(RouterConfig config) : cfg_(std::move(config)) {
    if (cfg_.accept_connections) {
        resets_ = std::make_shared<StatelessResetResponder>(cfg_.stateless_reset_key);
        retry_gate_ = std::make_unique<RetryGate>(cfg_.retry, cfg_.retry_threshold);
    }
}

Router::~Router() = default;

Router::Routed Router::drop(RouteDrop why) {
    ++stats_.dropped[static_cast<std::size_t>(why)];
    Routed r;
    r.kind = Routed::Kind::drop;
    r.reason = why;
    return r;
}

Router::Routed Router::handle(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram, Ecn ecn) {
    HeaderPeek hp;
    if (!peek(datagram, hp)) return drop(RouteDrop::malformed);
    const std::uint64_t key = cid_key(hp.dcid);
    if (last_route_ == 0 || key != last_key_) {
        const auto it = routes_.find(key);
        if (it != routes_.end()) {
            last_key_ = key;
            last_route_ = it->second;
        }
    }
    if (last_route_ != 0 && key == last_key_) {
        Routed r;
        r.kind = Routed::Kind::connection;
        r.handle = last_route_;
        return r;
    }
    if (!hp.long_header) return unknown_short(now, from, datagram);
    if (hp.version != 0 && !hp.known_version) {
        if (!cfg_.accept_connections) return drop(RouteDrop::not_accepting);
        return version_negotiation(datagram);  // any long header of a version ndm does not speak (RFC 9000 §6.1)
    }
    if (!hp.initial) return drop(RouteDrop::unknown_cid);
    if (!cfg_.accept_connections) return drop(RouteDrop::not_accepting);
    return initial(now, from, datagram, ecn, hp.dcid);
}

// RFC 9000 §10.3: a short header no ID routes may be a peer's stateless reset
// (its first bytes are random): the connections to that address look for
// their peer's token in it. Otherwise a server answers it with a reset of its own.
Router::Routed Router::unknown_short(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram) {
    Routed r;
    for (auto [it, end] = by_peer_.equal_range(from); it != end; ++it) r.candidates.push_back(it->second);
    if (!r.candidates.empty()) {
        r.kind = Routed::Kind::offer_reset;
        return r;
    }
    r.response = reset(now, datagram);
    if (r.response.empty()) return drop(RouteDrop::unknown_cid);
    r.kind = Routed::Kind::respond;
    return r;
}

std::vector<std::uint8_t> Router::reset(Instant now, std::span<const std::uint8_t> datagram) {
    std::vector<std::uint8_t> out;
    if (!resets_) return out;
    out.resize(StatelessResetResponder::kMaxResetSize);
    out.resize(resets_->answer(datagram, wire::kShortCidLength, now, out));
    if (!out.empty()) ++stats_.stateless_resets_sent;
    return out;
}

// RFC 9000 §6.1, §5.2.2: a server answers a long header of a version it does
// not speak with the versions it does, without keeping any state, and only
// a datagram at least as large as the smallest Initial (so the answer cannot
// amplify: §14.1, RFC 8999 §6).
Router::Routed Router::version_negotiation(std::span<const std::uint8_t> datagram) {
    wire::quic::PacketView first;
    if (datagram.size() < kMinDatagramSize ||
        wire::quic::parse_packet_header(datagram, wire::kShortCidLength, first) != wire::quic::HeaderError::none ||
        first.kind != wire::quic::PacketKind::unknown_version)
        return drop(RouteDrop::not_a_connection);
    Routed r;
    r.response.resize(7 + first.dcid.size() + first.scid.size() + 4 * std::size(wire::quic::kSupportedVersions));
    std::uint8_t random_bits = 0;
    crypto::CryptoRandom{}.fill(std::span<std::uint8_t>(&random_bits, 1));
    r.response.resize(wire::quic::write_version_negotiation(r.response, first.dcid, first.scid,
                                                            wire::quic::kSupportedVersions, random_bits));
    if (r.response.empty()) return drop(RouteDrop::not_a_connection);
    ++stats_.version_negotiations_sent;
    r.kind = Routed::Kind::respond;
    return r;
}

// A client's first datagram to this server: a connection, a Retry, or a drop.
Router::Routed Router::initial(Instant now, const PeerAddress& from, std::span<const std::uint8_t> datagram, Ecn ecn,
                               std::span<const std::uint8_t> dcid) {
    const PeerAddress host = from.host();
    const auto counted = per_host_.find(host);
    const std::size_t from_host = counted == per_host_.end() ? 0 : counted->second;
    const bool host_full = from_host >= std::max<std::size_t>(cfg_.max_connections_per_host, 1);
    if (host_full && cfg_.retry == RetryMode::never) return drop(RouteDrop::per_host_cap);

    wire::quic::PacketView first;
    const bool parsed =
        wire::quic::parse_packet_header(datagram, wire::kShortCidLength, first) == wire::quic::HeaderError::none &&
        first.kind == wire::quic::PacketKind::initial && datagram.size() >= kMinDatagramSize;
    using Token = RetryGate::TokenCheck::Kind;
    const auto token = parsed ? retry_gate_->check_token(first, from, now) : RetryGate::TokenCheck{};
    if (token.kind == Token::invalid) return drop(RouteDrop::invalid_token);
    std::unique_ptr<Connection> conn;
    ConnectionConfig config = cfg_.connection_config ? cfg_.connection_config() : ConnectionConfig{};
    // A token for the client's next connection (RFC 9000 §8.1.3), sent once the handshake is confirmed.
    if (parsed && cfg_.issue_tokens) config.token_to_issue = retry_gate_->issue_new_token(from, first.version, now);
    if (token.kind == Token::valid) {
        conn = Connection::accept(config, datagram, now, token.retry, ecn);
    } else if (parsed && (host_full || retry_gate_->wants_retry(half_open_count_, now))) {
        // Over the per-host cap only a proven address (a Retry token) gets in.
        Routed r;
        r.response.resize(RetryGate::kMaxRetrySize);
        r.response.resize(retry_gate_->write_retry(r.response, first, from, now));
        if (r.response.empty()) return drop(RouteDrop::not_a_connection);
        ++stats_.retries_sent;
        r.kind = Routed::Kind::respond;
        return r;
    } else if (host_full) {
        return drop(RouteDrop::per_host_cap);  // an Initial that is no v1 Initial, over the cap
    } else {
        conn = Connection::accept(config, datagram, now, ecn);
    }
    if (!conn) return drop(RouteDrop::not_a_connection);
    if (parsed) retry_gate_->on_handshake_started(now);

    Routed r;
    if (host_full) {
        // Room for a proven address: the host's oldest handshake goes (a
        // spoofer of the address could not complete one); none, and the
        // host's connections are all established: refused.
        const auto it = std::find_if(half_open_order_.begin(), half_open_order_.end(), [&](Handle h) {
            const auto e = conns_.find(h);
            return e != conns_.end() && e->second.half_open && e->second.peer.host() == host;
        });
        if (it == half_open_order_.end()) return drop(RouteDrop::per_host_cap);
        evict(*it, conns_.at(*it), "server busy: too many connections from this address", r.evicted);
    }
    while (half_open_count_ >= std::max<std::size_t>(cfg_.max_half_open, 1) && !half_open_order_.empty()) {
        const Handle oldest = half_open_order_.front();
        half_open_order_.pop_front();
        const auto e = conns_.find(oldest);
        if (e != conns_.end() && e->second.half_open)
            evict(oldest, e->second, "server busy: too many handshakes in progress", r.evicted);
    }
    r.kind = Routed::Kind::accepted;
    r.handle = insert(from, conn->local_cid());
    Entry& e = conns_.at(r.handle);
    e.accepted = true;
    e.admitted_host = host;
    ++per_host_[host];
    if (conn->state() == ConnectionState::handshaking) {
        e.half_open = true;
        ++half_open_count_;
        half_open_order_.push_back(r.handle);
        prune_half_open_order();
    }
    // Retransmitted Initials still carry the client's first DCID.
    add_key(r.handle, e, dcid);
    r.connection = std::move(conn);
    ++stats_.accepted;
    return r;
}

void Router::evict(Handle h, Entry& e, const char* why, std::vector<Eviction>& out) {
    leave_half_open(e);
    ++stats_.half_open_evicted;
    out.push_back({h, why});
}

void Router::leave_half_open(Entry& e) {
    if (!e.half_open) return;
    e.half_open = false;
    --half_open_count_;
}

// Completed handshakes leave their handles behind in half_open_order_; they
// are swept when they outnumber the live ones, so it stays bounded.
void Router::prune_half_open_order() {
    if (half_open_order_.size() <= 2 * half_open_count_ + 64) return;
    std::erase_if(half_open_order_, [&](Handle h) {
        const auto e = conns_.find(h);
        return e == conns_.end() || !e->second.half_open;
    });
}

Router::Handle Router::insert(const PeerAddress& peer, std::span<const std::uint8_t> cid) {
    const Handle h = next_handle_++;
    Entry& e = conns_[h];
    e.peer = peer;
    by_peer_.emplace(peer, h);
    add_key(h, e, cid);
    return h;
}

void Router::add_key(Handle h, Entry& e, std::span<const std::uint8_t> cid) {
    const std::uint64_t k = cid_key(cid);
    routes_[k] = h;
    last_route_ = 0;
    e.keys.push_back(k);
}

Router::Handle Router::add(const PeerAddress& peer, std::span<const std::uint8_t> local_cid) {
    return insert(peer, local_cid);
}

void Router::add_cid(Handle h, std::span<const std::uint8_t> cid) {
    const auto it = conns_.find(h);
    if (it != conns_.end()) add_key(h, it->second, cid);
}

void Router::remove_cid(Handle h, std::span<const std::uint8_t> cid) {
    const auto it = conns_.find(h);
    if (it == conns_.end()) return;
    const std::uint64_t k = cid_key(cid);
    const auto r = routes_.find(k);
    if (r != routes_.end() && r->second == h) routes_.erase(r);
    std::erase(it->second.keys, k);
    last_route_ = 0;
}

void Router::set_peer(Handle h, const PeerAddress& peer) {
    const auto it = conns_.find(h);
    if (it == conns_.end() || it->second.peer == peer) return;
    Entry& e = it->second;
    for (auto [p, end] = by_peer_.equal_range(e.peer); p != end; ++p) {
        if (p->second == h) {
            by_peer_.erase(p);
            break;
        }
    }
    // The per-host count stays with the host that was admitted (docs/security.md).
    e.peer = peer;
    by_peer_.emplace(peer, h);
}

void Router::established(Handle h) {
    const auto it = conns_.find(h);
    if (it != conns_.end()) leave_half_open(it->second);
}

void Router::remove(Handle h) {
    const auto it = conns_.find(h);
    if (it == conns_.end()) return;
    Entry& e = it->second;
    leave_half_open(e);
    if (e.accepted) {
        const auto c = per_host_.find(e.admitted_host);
        if (c != per_host_.end() && --c->second == 0) per_host_.erase(c);
    }
    for (auto [p, end] = by_peer_.equal_range(e.peer); p != end; ++p) {
        if (p->second == h) {
            by_peer_.erase(p);
            break;
        }
    }
    for (const std::uint64_t k : e.keys) {
        const auto r = routes_.find(k);
        if (r != routes_.end() && r->second == h) routes_.erase(r);
    }
    last_route_ = 0;
    conns_.erase(it);
}

std::vector<Router::Handle> Router::connections_to(const PeerAddress& peer) const {
    std::vector<Handle> out;
    for (auto [it, end] = by_peer_.equal_range(peer); it != end; ++it) out.push_back(it->second);
    return out;
}

std::function<crypto::StatelessResetToken(std::span<const std::uint8_t>)> Router::reset_tokens() const {
    if (!resets_) return {};
    return [r = resets_](std::span<const std::uint8_t> cid) { return r->token_for(cid); };
}

}  // namespace ndm::transport
