// Endpoint tests' shared pieces: TLS configs with a certificate valid now
// (the endpoint checks it against the system time), a client that sends
// Initials and never answers, as a spoofer does, and a link that edits or
// drops datagrams.
#pragma once

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/link.hpp"

namespace ndm::test {

// A certificate valid now (the endpoint checks it against the system time),
// presented by servers and pinned by clients of every config made here.
inline const tls::ServerCredentials& endpoint_certificate() {
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"localhost", "127.0.0.1"}, std::chrono::system_clock::now());
    return creds;
}
inline EndpointConfig tls_endpoint_config() {
    EndpointConfig cfg;
    cfg.connection.tls.certificate = endpoint_certificate();
    cfg.connection.tls.trust = tls::ClientCredentials::pinned(endpoint_certificate().fingerprint());
    return cfg;
}
inline ConnectionConfig tls_connection_config() { return tls_endpoint_config().connection; }

// A UDP socket that sends client Initials (each a real ClientHello, 1200
// bytes) to a server on 127.0.0.1 and never answers: a spoofed client, as
// far as the server can tell. It stays open while it lives, so the server
// gets no ICMP errors for what it sends back.
class SilentClient {
public:
    explicit SilentClient(std::uint16_t server_port) : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0)) {
        REQUIRE(fd_ >= 0);
        to_.sin_family = AF_INET;
        to_.sin_port = htons(server_port);
        to_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        // Connected: what it counts comes from the server alone, not from
        // whatever else on this host sends to its port (fuzzers, floods).
        REQUIRE(connect(fd_, reinterpret_cast<const sockaddr*>(&to_), sizeof to_) == 0);
    }
    ~SilentClient() { close(fd_); }
    SilentClient(const SilentClient&) = delete;
    SilentClient& operator=(const SilentClient&) = delete;

    // Sends the first Initial of a client whose connection IDs derive from
    // `seed`; returns its size.
    std::size_t send_initial(std::uint64_t seed) {
        ConnectionConfig c = tls_connection_config();
        c.seed = seed;
        const auto conn = Connection::connect(c, Instant{});
        const std::size_t n = conn->poll_datagram(buf_, Instant{});
        REQUIRE(n >= kMinDatagramSize);
        REQUIRE(send(fd_, buf_.data(), n, 0) == static_cast<ssize_t>(n));
        return n;
    }
    // What the server sent back: each datagram, in order.
    std::vector<std::vector<std::uint8_t>> received() {
        std::vector<std::vector<std::uint8_t>> out;
        for (ssize_t n; (n = recv(fd_, buf_.data(), buf_.size(), 0)) > 0;)
            out.emplace_back(buf_.begin(), buf_.begin() + n);
        return out;
    }

private:
    int fd_;
    sockaddr_in to_{};
    std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(kMaxDatagramSize);
};

// An on-path box with no delay: `filter` sees each datagram as it is sent,
// may rewrite it in place, and returns false to drop it. It does not model
// ECN: what it delivers is not-ECT.
class FilterLink final : public Link {
public:
    using Filter = std::function<bool(std::vector<std::uint8_t>&)>;
    explicit FilterLink(Filter filter) : filter_(std::move(filter)) {}
    void send(const DatagramView& d, Instant now) override {
        ++stats_.sent;
        std::vector<std::uint8_t> copy(d.bytes.begin(), d.bytes.end());
        if (filter_(copy)) q_.emplace_back(now, std::move(copy));
    }
    [[nodiscard]] Instant next_delivery() const override { return q_.empty() ? kNever : q_.front().first; }
    bool deliver(Instant now, Datagram& out) override {
        if (q_.empty() || q_.front().first > now) return false;
        out.bytes = std::move(q_.front().second);
        out.ecn = Ecn::not_ect;
        q_.pop_front();
        ++stats_.delivered;
        return true;
    }
    [[nodiscard]] LinkStats stats() const override { return stats_; }

private:
    Filter filter_;
    LinkStats stats_;
    std::deque<std::pair<Instant, std::vector<std::uint8_t>>> q_;
};

}  // namespace ndm::test
