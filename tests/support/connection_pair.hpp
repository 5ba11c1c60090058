// A client and a server Connection wired back to back without a network:
// datagrams move instantly, time jumps to the next timeout. Enough to test
// the state machine; the virtual-time simulator (src/sim) adds links.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "quic_test_util.hpp"
#include "transport/connection_impl.hpp"

namespace ndm::test {

struct ConnectionPair {
    ConnectionConfig client_cfg, server_cfg;
    std::unique_ptr<Connection> client, server;
    Instant now{};
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(kMaxDatagramSize);
    // Optional taps: return false to drop a datagram.
    std::function<bool(std::vector<std::uint8_t>&)> to_server, to_client;
    // Optional edits of each side's transport parameters before TLS carries
    // them: a peer stating what no ConnectionConfig would.
    Connection::Impl::ParamsEdit client_params, server_params;
    // And of the encoded parameters: what no encoder writes.
    Connection::Impl::ParamsBytesEdit client_params_bytes, server_params_bytes;
    // Set: the server is accepted as after a Retry whose token it validated
    // (RFC 9000 §8.1.2), for the client's first DCID this names.
    std::optional<RetryValidation> server_retry;
    // The ECN codepoint a datagram arrives with, given the one it was sent
    // with (both directions). Unset: the path clears it, as it did before
    // ndm spoke ECN (every datagram arrives not-ECT).
    std::function<Ecn(Ecn)> ecn_path;

    ConnectionPair() { server_cfg.seed = 2; }

    // The configs get the simulator's TLS settings (fixed sizes, a pinned
    // self-signed certificate) where they set none.
    void start() {
        sim::simulation_tls(client_cfg, server_cfg);
        client = Connection::Impl::connect(client_cfg, now, client_params, client_params_bytes);
    }

    // Moves datagrams until neither side has anything to send now.
    bool exchange() {
        bool moved = false;
        for (bool again = true; again;) {
            again = false;
            Ecn ecn = Ecn::not_ect;
            while (std::size_t n = client->poll_datagram(buf, now, ecn)) {
                std::vector<std::uint8_t> d(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                again = moved = true;
                if (to_server && !to_server(d)) continue;
                const Ecn arrived = ecn_path ? ecn_path(ecn) : Ecn::not_ect;
                if (!server)
                    server = Connection::Impl::accept(server_cfg, d, now, server_params,
                                                      server_retry ? &*server_retry : nullptr, arrived,
                                                      server_params_bytes);
                else server->on_datagram(d, now, arrived);
            }
            while (server) {
                std::size_t n = server->poll_datagram(buf, now, ecn);
                if (!n) break;
                std::vector<std::uint8_t> d(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                again = moved = true;
                if (to_client && !to_client(d)) continue;
                client->on_datagram(d, now, ecn_path ? ecn_path(ecn) : Ecn::not_ect);
            }
        }
        return moved;
    }

    // Advances time to the earliest timeout (at most to `limit`) and fires
    // it; false when nothing is scheduled before the limit.
    bool advance(Instant limit = kNever) {
        Instant t = client->next_timeout();
        if (server) t = std::min(t, server->next_timeout());
        if (t > limit) {
            now = std::max(now, limit);
            return false;
        }
        if (t > now) now = t;
        if (client->next_timeout() <= now) client->on_timeout(now);
        if (server && server->next_timeout() <= now) server->on_timeout(now);
        return true;
    }

    // Runs until pred() holds or the virtual deadline passes.
    bool run_until(const std::function<bool()>& pred, Duration limit = std::chrono::seconds(60)) {
        Instant deadline = now + limit;
        for (int guard = 0; guard < 10'000'000; ++guard) {
            exchange();
            if (pred()) return true;
            if (!advance(deadline)) return pred();
        }
        return false;
    }

    bool handshake() {
        start();
        return run_until([&] { return client->is_established() && server && server->is_established(); });
    }
};

// One datagram from the client that the server never sees, carrying a byte
// of stream `id`: its 1-RTT packet number, under which a forged packet
// reaches the server and is acknowledged to a client that did send it.
inline std::uint64_t steal_client_pn(ConnectionPair& p, StreamId id) {
    static const std::uint8_t one[1] = {0x5a};
    if (p.client->write(id, one, false) != 1) throw std::runtime_error("test: stream not writable");
    std::optional<std::uint64_t> pn;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        const auto opened = open_datagram(*p.server, d, p.now);
        if (!pn && !opened.packets.empty()) pn = opened.packets.back().pn;
        return false;
    };
    p.exchange();
    p.to_server = nullptr;
    if (!pn) throw std::runtime_error("test: the client sent no 1-RTT packet");
    return *pn;
}

}  // namespace ndm::test
