// The router fuzz target's driver (fuzz/router_fuzz.cpp), also replayed by a
// doctest (tests/transport/test_router.cpp): a server's sans-I/O Router
// (src/transport/router.hpp) in virtual time, fed arbitrary datagrams from
// arbitrary addresses, no socket. The first byte picks the Retry mode and the
// caps; then operations: raw bytes from one of eight addresses (IPv4 and
// IPv6, two sharing a host), Initials of two real clients (any Retry they are
// answered with goes back to them, so tokens are returned, from the right
// address or another), one of those datagrams with a byte flipped or its
// version changed, short headers to a live connection's ID or a random one,
// and the caller's side: handshakes completing, connections removed, IDs
// added. Checked after each: no answer larger than three times what prompted
// it (RFC 9000 §8.1, which bounds Retry, Version Negotiation and stateless
// resets too); every handle the router returns is one it holds, a new one
// never; evictions name handshakes it held; the half-open count stays within
// its cap; and the router holds exactly the connections it admitted or was
// given and not yet told to forget.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "connection_harness.hpp"  // InputReader
#include "fuzz_check.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "transport/router.hpp"

namespace ndm::fuzz {

struct RouterRunStats {
    std::size_t accepted = 0, responses = 0, routed = 0, drops = 0;
};

inline const ConnectionConfig& router_fuzz_config(bool client) {
    struct Configs {
        ConnectionConfig client, server;
        Configs() { sim::simulation_tls(client, server); }
    };
    static const Configs c;
    return client ? c.client : c.server;
}

inline RouterRunStats run_router_input(const std::uint8_t* data, std::size_t size) {
    using transport::PeerAddress;
    using transport::Router;
    using Kind = Router::Routed::Kind;
    InputReader in(data, size);
    const std::uint8_t setup = in.byte();
    transport::RouterConfig cfg;
    cfg.accept_connections = true;
    cfg.retry = static_cast<transport::RetryMode>(setup % 3);
    cfg.retry_threshold = 2;
    cfg.max_half_open = 1 + (setup >> 2) % 4;
    cfg.max_connections_per_host = 1 + (setup >> 4) % 3;
    cfg.connection_config = [] { return router_fuzz_config(false); };
    Router router(cfg);

    std::vector<PeerAddress> addrs;
    for (std::uint32_t i = 0; i < 4; ++i) addrs.push_back(PeerAddress::ipv4(0x0a000001u + (i / 2), 4000 + i));
    for (std::uint8_t i = 0; i < 4; ++i) {
        PeerAddress a;
        a.v6 = true;
        a.ip[0] = 0xfd;
        a.ip[15] = static_cast<std::uint8_t>(1 + i);
        a.port = static_cast<std::uint16_t>(5000 + i);
        addrs.push_back(a);
    }
    std::unique_ptr<Connection> clients[2];
    for (int i = 0; i < 2; ++i) {
        ConnectionConfig c = router_fuzz_config(true);
        c.seed = 1000 + static_cast<std::uint64_t>(i);
        clients[i] = Connection::connect(c, Instant{});
    }
    std::set<Router::Handle> live;
    std::vector<std::vector<std::uint8_t>> local_cids;
    std::vector<std::vector<std::uint8_t>> seen;  // datagrams sent so far, for replays
    RouterRunStats st;
    Instant now = Instant{} + std::chrono::seconds(1);
    std::vector<std::uint8_t> d;

    for (int op = 0; op < 64 && !in.empty(); ++op) {
        now += std::chrono::milliseconds(in.byte());
        const PeerAddress& from = addrs[in.byte() % addrs.size()];
        int client = -1;
        d.clear();
        switch (in.byte() % 6) {
            case 0: {  // raw bytes
                const auto raw = in.take(in.byte() % 2 ? in.bytes_be(2) % 1500 : in.byte());
                d.assign(raw.begin(), raw.end());
                break;
            }
            case 1: {  // a real client's next datagram
                client = in.byte() % 2;
                if (clients[client]->next_timeout() <= now) clients[client]->on_timeout(now);
                d.resize(kMaxDatagramSize);
                d.resize(clients[client]->poll_datagram(d, now));
                break;
            }
            case 2: {  // a datagram seen before, a byte flipped or its version changed
                if (seen.empty()) break;
                d = seen[in.byte() % seen.size()];
                if (d.empty()) break;
                const std::size_t at = in.bytes_be(2) % d.size();
                if (in.byte() % 2 && d.size() > 4 && (d[0] & 0x80)) d[4] ^= in.byte() | 1;
                else d[at] ^= static_cast<std::uint8_t>(in.byte() | 1);
                break;
            }
            case 3: {  // a short header to a live connection's ID, or to a random one
                d.resize(1 + wire::kShortCidLength + in.byte() % 64, 0x5a);
                d[0] = 0x40;
                if (!local_cids.empty() && in.byte() % 2) {
                    const auto& cid = local_cids[in.byte() % local_cids.size()];
                    std::copy_n(cid.begin(), std::min(cid.size(), wire::kShortCidLength), d.begin() + 1);
                } else {
                    const auto r = in.take(wire::kShortCidLength);
                    std::copy(r.begin(), r.end(), d.begin() + 1);
                }
                break;
            }
            case 4: {  // the caller: a handshake completes, or a connection is forgotten
                if (live.empty()) break;
                auto it = live.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(in.byte() % live.size()));
                if (in.byte() % 2) {
                    router.established(*it);
                } else {
                    router.remove(*it);
                    live.erase(it);
                }
                break;
            }
            default: {  // the caller: another ID for a connection
                if (live.empty()) break;
                auto it = live.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(in.byte() % live.size()));
                const auto cid = in.take(wire::kShortCidLength);
                router.add_cid(*it, cid);
                local_cids.emplace_back(cid.begin(), cid.end());
                break;
            }
        }
        if (d.empty() && client < 0) {
            FUZZ_CHECK(router.size() == live.size());
            continue;
        }
        if (seen.size() < 16) seen.push_back(d);
        auto r = router.handle(now, from, d, static_cast<Ecn>(in.byte() % 4));
        switch (r.kind) {
            case Kind::connection:
                FUZZ_CHECK(live.count(r.handle) == 1);
                ++st.routed;
                break;
            case Kind::accepted: {
                FUZZ_CHECK(r.connection != nullptr);
                FUZZ_CHECK(r.handle != 0 && live.count(r.handle) == 0);
                for (const auto& e : r.evicted) FUZZ_CHECK(live.count(e.handle) == 1);
                live.insert(r.handle);
                const auto cid = r.connection->local_cid();
                local_cids.emplace_back(cid.begin(), cid.end());
                ++st.accepted;
                break;
            }
            case Kind::respond:
                FUZZ_CHECK(!r.response.empty());
                FUZZ_CHECK(r.response.size() <= 3 * d.size());
                if (client >= 0) clients[client]->on_datagram(r.response, now);
                ++st.responses;
                break;
            case Kind::offer_reset: {
                FUZZ_CHECK(!r.candidates.empty());
                for (const auto h : r.candidates) FUZZ_CHECK(live.count(h) == 1);
                const auto reset = router.reset(now, d);
                FUZZ_CHECK(reset.size() < d.size() || reset.empty());
                break;
            }
            case Kind::drop: ++st.drops; break;
        }
        FUZZ_CHECK(router.half_open() <= cfg.max_half_open);
        FUZZ_CHECK(router.size() == live.size());
    }
    return st;
}

}  // namespace ndm::fuzz
