// libFuzzer target for a server Endpoint's datagram routing (src/io/endpoint.cpp
// doing what its router, src/transport/router, decides), fed from many source
// addresses. The router's decisions are fuzzed sans-I/O by fuzz/router_fuzz.cpp;
// this target keeps the whole path, and the Endpoint's public API is a socket,
// so it drives a real Endpoint on loopback: the input's operations send datagrams to it from six
// UDP sockets bound to 127.0.0.2..7 (distinct source addresses), run its
// event loop once, and read what it answers. Sockets 0 and 1 host real
// clients (sans-I/O Connections that complete handshakes through it, Retry
// included); sockets 2..5 are attackers: raw bytes, fresh valid Initials,
// replays of any datagram seen (from a spoofed source), short headers with a
// live connection's ID, and the server's own datagrams reflected back. The
// first byte picks the retry policy (never, always, under load at 2).
// Checked: nothing crashes or throws; an attacker address never receives
// more than three times what it sent (RFC 9000 §8.1's amplification limit,
// which also bounds Retry, Version Negotiation and stateless resets); the
// number of connections stays bounded by max_half_open plus the clients.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "connection_harness.hpp"  // InputReader
#include "fuzz_check.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/sim.hpp"
#include "spdlog/spdlog.h"

namespace {

using ndm::fuzz::InputReader;

constexpr int kSockets = 6;
constexpr int kClients = 2;  // sockets [0, kClients) are well-behaved clients
constexpr std::size_t kMaxHalfOpen = 4;

struct Peer {
    int fd = -1;
    std::unique_ptr<ndm::Connection> client;
    std::uint64_t sent = 0, received = 0;
};

class EndpointHarness {
public:
    EndpointHarness(const std::uint8_t* data, std::size_t size) : in_(data, size) {}
    ~EndpointHarness() {
        for (auto& p : peers_)
            if (p.fd >= 0) ::close(p.fd);
    }

    void run() {
        const std::uint8_t mode = in_.byte();
        ndm::EndpointConfig cfg;
        cfg.bind_address = "127.0.0.1";
        cfg.backend = ndm::IoBackend::epoll;
        cfg.gso = cfg.gro = false;
        cfg.accept_connections = true;
        cfg.max_half_open = kMaxHalfOpen;
        cfg.retry = mode % 3 == 0 ? ndm::RetryPolicy::never
                    : mode % 3 == 1 ? ndm::RetryPolicy::always : ndm::RetryPolicy::under_load;
        cfg.retry_threshold = 2;
        cfg.socket_buffer_bytes = 1 << 20;
        ndm::sim::simulation_tls(client_cfg_, cfg.connection);
        ep_ = std::make_unique<ndm::Endpoint>(cfg);
        server_.sin_family = AF_INET;
        server_.sin_port = htons(ep_->local_port());
        server_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int i = 0; i < kSockets; ++i) open_socket(i);
        for (int step = 0; step < 128 && !in_.empty(); ++step) do_step();
        for (int i = 0; i < 3; ++i) turn();
    }

private:
    void open_socket(int i) {
        Peer& p = peers_[i];
        p.fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        FUZZ_CHECK(p.fd >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(0x7f000002u + static_cast<unsigned>(i));
        FUZZ_CHECK(::bind(p.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    }

    void send_from(int i, std::span<const std::uint8_t> d) {
        if (d.empty()) return;
        const auto n = ::sendto(peers_[i].fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&server_),
                                sizeof server_);
        if (n > 0) peers_[i].sent += static_cast<std::uint64_t>(n);
        remember(d);
    }

    void remember(std::span<const std::uint8_t> d) {
        seen_.emplace_back(d.begin(), d.end());
        if (seen_.size() > 32) seen_.pop_front();
    }

    // The endpoint reads and answers; each socket reads what it got.
    void turn() {
        ep_->run_once(ndm::steady_now());
        std::vector<std::uint8_t> buf(65536);
        for (int i = 0; i < kSockets; ++i) {
            Peer& p = peers_[i];
            for (;;) {
                const auto n = ::recv(p.fd, buf.data(), buf.size(), 0);
                if (n <= 0) break;
                p.received += static_cast<std::uint64_t>(n);
                const std::span<const std::uint8_t> d(buf.data(), static_cast<std::size_t>(n));
                from_server_.emplace_back(d.begin(), d.end());
                if (from_server_.size() > 16) from_server_.pop_front();
                if (p.client) p.client->on_datagram(d, ndm::steady_now());
            }
            // RFC 9000 §8.1: an address that never completed a handshake gets at most 3x what it sent.
            if (i >= kClients) FUZZ_CHECK(p.received <= 3 * p.sent);
        }
        FUZZ_CHECK(ep_->connection_count() <= kMaxHalfOpen + kClients + 8);
    }

    void client_send(int i) {
        Peer& p = peers_[i];
        if (!p.client) p.client = ndm::Connection::connect(client_cfg_, ndm::steady_now());
        std::vector<std::uint8_t> buf(ndm::kMaxDatagramSize);
        const ndm::Instant now = ndm::steady_now();
        if (p.client->next_timeout() <= now) p.client->on_timeout(now);
        while (std::size_t n = p.client->poll_datagram(buf, now)) send_from(i, {buf.data(), n});
        while (p.client->poll_event()) {
        }
    }

    // A valid first Initial of a new client, from attacker socket i.
    void fresh_initial(int i, bool mutate) {
        auto c = ndm::Connection::connect(client_cfg_, ndm::steady_now());
        std::vector<std::uint8_t> buf(ndm::kMaxDatagramSize);
        const std::size_t n = c->poll_datagram(buf, ndm::steady_now());
        buf.resize(n);
        if (mutate && n) buf[in_.bytes_be(2) % n] ^= static_cast<std::uint8_t>(1 | in_.byte());
        send_from(i, buf);
    }

    void replay(int i, const std::deque<std::vector<std::uint8_t>>& from) {
        const std::uint8_t b = in_.byte();
        if (from.empty()) return;
        std::vector<std::uint8_t> d = from[b % from.size()];
        if (b & 0x80) d[in_.bytes_be(2) % d.size()] ^= static_cast<std::uint8_t>(1 | in_.byte());
        send_from(i, d);
    }

    // A short header to a live connection's ID (a client's view of the
    // server's), then input bytes: routed, and rejected by the connection.
    void short_to_live_cid(int i) {
        std::vector<std::uint8_t> d{static_cast<std::uint8_t>(0x40 | (in_.byte() & 0x3f))};
        const Peer& c = peers_[in_.byte() % kClients];
        if (c.client) {
            const auto cid = c.client->peer_cid();
            d.insert(d.end(), cid.begin(), cid.end());
        }
        const auto tail = in_.take(in_.bytes_be(2) % 1400);
        d.insert(d.end(), tail.begin(), tail.end());
        send_from(i, d);
    }

    void do_step() {
        const std::uint8_t op = in_.byte();
        const int attacker = kClients + (op >> 4) % (kSockets - kClients);
        switch (op & 7) {
        case 0: send_from(attacker, in_.take(in_.bytes_be(2) % 1500 + 1)); break;
        case 1: client_send((op >> 4) % kClients); break;
        case 2: fresh_initial(attacker, op & 0x80); break;
        case 3: replay(attacker, seen_); break;
        case 4: short_to_live_cid(attacker); break;
        case 5: replay(attacker, from_server_); break;  // the server's own datagrams, reflected
        default: turn(); break;
        }
    }

    InputReader in_;
    ndm::ConnectionConfig client_cfg_;
    std::unique_ptr<ndm::Endpoint> ep_;
    sockaddr_in server_{};
    std::array<Peer, kSockets> peers_;
    std::deque<std::vector<std::uint8_t>> seen_, from_server_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    EndpointHarness h(data, size);
    h.run();
    return 0;
}
