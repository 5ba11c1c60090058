// ECN over real sockets on loopback (RFC 9000 §13.4): datagrams leave with
// ECT(0) in their TOS / Traffic Class byte (a per-send cmsg, GSO sends
// included), both backends read the codepoint back (IP_RECVTOS /
// IPV6_RECVTCLASS, GRO-coalesced datagrams too), the receiver's ACK_ECN
// counts validate at the sender, and an emulated link on the socket path
// that clears the codepoint makes the sender stop marking.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/probe.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using namespace ndm;

namespace {

const tls::ServerCredentials& certificate() {
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"localhost", "127.0.0.1", "::1"}, std::chrono::system_clock::now());
    return creds;
}

EndpointConfig config(IoBackend backend, const std::string& bind) {
    EndpointConfig cfg;
    cfg.backend = backend;
    cfg.bind_address = bind;
    cfg.connection.tls.certificate = certificate();
    cfg.connection.tls.trust = tls::ClientCredentials::pinned(certificate().fingerprint());
    return cfg;
}

bool ipv6_loopback() {
    const int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

struct Outcome {
    bool done = false;
    ConnectionStats client, server;
};

// Sends `bytes` from a client endpoint to a server endpoint, both driven from
// this thread, and returns each side's connection statistics.
Outcome transfer(EndpointConfig scfg, const EndpointConfig& ccfg, const std::string& host, std::size_t bytes) {
    scfg.accept_connections = true;
    Endpoint server(scfg);
    Endpoint client(ccfg);
    const ConnectionHandle h = client.connect(host, server.local_port());
    std::optional<ConnectionHandle> sh;
    std::optional<StreamId> stream;
    std::vector<std::uint8_t> data(bytes, 0xec), buf(1 << 16);
    std::size_t written = 0, read = 0;
    Outcome out;
    const Instant deadline = steady_now() + 20s;
    while (steady_now() < deadline && read < bytes) {
        client.run_once(steady_now() + 1ms);
        server.run_once(steady_now() + 1ms);
        if (Connection* c = client.connection(h); c && c->is_established()) {
            if (!stream) stream = c->open_stream();
            if (stream && written < bytes) written += c->write(*stream, {data.data() + written, bytes - written}, true);
        }
        if (!sh) sh = server.next_accepted();
        if (sh) {
            if (Connection* s = server.connection(*sh); s && stream)
                while (std::size_t n = s->read(*stream, buf)) read += n;
        }
    }
    out.done = read == bytes;
    // A few more turns so that the last ACKs (and their counts) arrive.
    for (int i = 0; i < 20; ++i) {
        client.run_once(steady_now() + 1ms);
        server.run_once(steady_now() + 1ms);
    }
    if (const Connection* c = client.find(h)) out.client = c->stats(steady_now());
    if (sh)
        if (const Connection* s = server.find(*sh)) out.server = s->stats(steady_now());
    return out;
}

bool backend_available(IoBackend b) {
    if (b == IoBackend::uring && !io::probe_uring().available) {
        test::skip_test("io_uring unavailable here (" + io::probe_uring().reason + "): uring case skipped");
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("ecn over loopback: ECT(0) reaches the receiver through both backends and the counts validate") {
    struct Path {
        const char* server_bind;
        const char* client_bind;
        const char* host;
    };
    const bool v6 = ipv6_loopback();
    if (!v6) test::skip_test("IPv6 loopback unavailable here: the IPv6 and dual-stack paths are skipped");
    for (IoBackend b : {IoBackend::uring, IoBackend::epoll}) {
        if (!backend_available(b)) continue;
        for (const Path& p : {Path{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, Path{"::", "::1", "::1"},
                              Path{"::", "127.0.0.1", "127.0.0.1"}}) {
            if (!v6 && std::string(p.server_bind) == "::") continue;
            const std::string backend = to_string(b), server_bind = p.server_bind, host = p.host;
            CAPTURE(backend);
            CAPTURE(server_bind);
            CAPTURE(host);
            const auto r = transfer(config(b, p.server_bind), config(b, p.client_bind), p.host, 4u << 20);
            REQUIRE(r.done);
            CHECK(r.client.ecn_state == EcnState::capable);
            CHECK(r.server.ecn_state == EcnState::capable);
            CHECK(r.client.ecn_ect0_sent > 2000);  // 4 MB in 1452-byte datagrams, every one marked
            // What the server counted is what the client marked, less what was lost and the
            // few Initial/Handshake packets the server drops once it has discarded those keys
            // (RFC 9001 §4.9; they are never counted, §13.4.1 counts processed packets).
            CHECK(r.server.ecn_ect0_received <= r.client.ecn_ect0_sent);
            CHECK(r.server.ecn_ect0_received + r.client.packets_lost + 8 >= r.client.ecn_ect0_sent);
            CHECK(r.server.ecn_ce_received == 0);  // loopback marks nothing
            CHECK(r.client.ecn_ect0_received > 0);  // and the server's ACKs arrive marked too
            MESSAGE(backend << " " << host << ": client sent " << r.client.ecn_ect0_sent
                                 << " ECT(0), server received " << r.server.ecn_ect0_received);
        }
    }
}

TEST_CASE("ecn over loopback: an emulated link on the socket path that clears the codepoint stops the marking") {
    for (IoBackend b : {IoBackend::uring, IoBackend::epoll}) {
        if (!backend_available(b)) continue;
        const std::string backend = to_string(b);
        CAPTURE(backend);
        EndpointConfig ccfg = config(b, "127.0.0.1");
        const auto profile = emu::parse_profile("ecn=bleach");
        ccfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::up, 1); };
        const auto r = transfer(config(b, "127.0.0.1"), ccfg, "127.0.0.1", 1u << 20);
        REQUIRE(r.done);
        CHECK(r.client.ecn_state == EcnState::failed);
        CHECK(r.client.ecn_ect0_sent <= 12);
        CHECK(r.server.ecn_ect0_received == 0);
        CHECK(r.server.ecn_state == EcnState::capable);  // the other direction is untouched
    }
}

TEST_CASE("ecn over loopback: with ConnectionConfig::ecn off nothing is marked") {
    EndpointConfig cfg = config(IoBackend::epoll, "127.0.0.1");
    cfg.connection.ecn = false;
    const auto r = transfer(cfg, cfg, "127.0.0.1", 1u << 20);
    REQUIRE(r.done);
    CHECK(r.client.ecn_state == EcnState::disabled);
    CHECK(r.client.ecn_ect0_sent == 0);
    CHECK(r.server.ecn_ect0_received == 0);
    CHECK(r.client.ecn_ect0_received == 0);
}
