// Client migration over real sockets (RFC 9000 §9.2): a client endpoint
// moves to a new local port mid-transfer (Endpoint::rebind); its connection
// probes the new path under a connection ID the server has not seen, moves
// once validated, and the server follows. Loopback, one thread, both
// endpoints driven in turn; the transfer is byte-exact.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ndm/endpoint.hpp"

#include "endpoint_test_util.hpp"

using namespace ndm;
using namespace std::chrono_literals;

namespace {
std::uint8_t pattern(std::uint64_t i) { return static_cast<std::uint8_t>((i * 7 + (i >> 11)) & 0xff); }
}  // namespace

TEST_CASE("endpoint: a client rebinds to a new port mid-transfer, validates the new path, byte-exact") {
    EndpointConfig scfg = test::tls_endpoint_config();
    scfg.bind_address = "127.0.0.1";
    scfg.accept_connections = true;
    EndpointConfig ccfg = test::tls_endpoint_config();
    ccfg.bind_address = "127.0.0.1";
    Endpoint server(scfg), client(ccfg);
    CHECK_THROWS_AS(server.rebind(), EndpointError);

    std::vector<Event> client_events;
    client.on_event([&](ConnectionHandle, const Event& e) { client_events.push_back(e); });
    bool migrated_seen = false;
    server.on_event([&](ConnectionHandle, const Event& e) {
        if (std::holds_alternative<event::PeerMigrated>(e)) migrated_seen = true;
    });
    const ConnectionHandle ch = client.connect("127.0.0.1", server.local_port());
    const std::uint64_t total = 24u << 20;
    std::uint64_t written = 0, received = 0;
    bool exact = true, rebound = false;
    std::optional<ConnectionHandle> sh;
    std::optional<StreamId> cs;
    std::string peer_before;
    const std::uint16_t port_before = client.local_port();
    std::vector<std::uint8_t> chunk(256 * 1024), in(256 * 1024);
    const Instant end = steady_now() + 30s;
    bool finished = false;
    while (!finished && steady_now() < end) {
        if (Connection* c = client.connection(ch); c && c->is_established()) {
            if (!cs) cs = c->open_stream();
            while (cs && written < total) {
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), total - written));
                for (std::size_t i = 0; i < n; ++i) chunk[i] = pattern(written + i);
                const std::size_t w = c->write(*cs, {chunk.data(), n}, written + n == total);
                written += w;
                if (w < n) break;
            }
        }
        if (!sh) sh = server.next_accepted();
        if (sh) {
            if (Connection* s = server.connection(*sh)) {
                if (auto id = server.peer_stream(*sh)) {
                    for (std::size_t n; (n = s->read(*id, in)) > 0;) {
                        for (std::size_t i = 0; i < n; ++i) exact &= in[i] == pattern(received + i);
                        received += n;
                    }
                    finished = s->stream_finished(*id);
                }
                if (peer_before.empty()) peer_before = server.peer_address(*sh);
            }
        }
        if (!rebound && received >= total / 3) {
            client.rebind();
            rebound = true;
        }
        client.run_once(steady_now() + 1ms);
        server.run_once(steady_now() + 1ms);
    }
    CHECK(rebound);
    CHECK(finished);
    CHECK(exact);
    CHECK(received == total);
    CHECK(client.local_port() != port_before);
    REQUIRE(sh);
    CHECK(migrated_seen);
    CHECK(server.peer_address(*sh) == "127.0.0.1:" + std::to_string(client.local_port()));
    CHECK(server.peer_address(*sh) != peer_before);
    bool validated = false;
    for (const auto& e : client_events)
        if (const auto* v = std::get_if<event::PathValidation>(&e)) validated |= v->validated;
    CHECK(validated);
    const Connection* c = client.find(ch);
    REQUIRE(c);
    CHECK(c->active_path().id != 0);
}
