// The emulator on the real-clock socket path: ndm-emu's relay
// (tools/emu/relay) on loopback, driven by CLOCK_MONOTONIC.
// AC-4 (docs/emulator.md, acceptance criteria): jitter off, low rate → every one-way delay in
// [d, d + ε]. The lower bound is exact (the emulator never releases early);
// the scheduling tolerance ε is asserted generously (the target is ≤ 0.2 ms at
// p50 and ≤ 1 ms at p99.9; this machine is shared, so the test allows 5 ms at
// p50 and prints what it measured). Decisions stay deterministic: the same
// seed drops the same datagrams as the model does in virtual time.
#if __has_include("tools/emu/relay.hpp")

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "loopback_udp.hpp"
#include "ndm/emu.hpp"
#include "tools/emu/relay.hpp"

namespace {

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::tools::monotonic_now;

using Udp = ndm::test::LoopbackUdp;

// Runs a relay on its own thread for the lifetime of the object.
struct RelayThread {
    std::atomic<bool> stop{false};
    ndm::tools::EmuRelay relay;
    std::thread t;
    RelayThread(const char* profile, std::uint64_t seed, std::uint16_t to_port)
        : relay("127.0.0.1:0", "127.0.0.1:" + std::to_string(to_port), ndm::emu::parse_profile(profile), seed) {}
    void start() {
        t = std::thread([this] { relay.run(stop); });
    }
    void join() {
        stop = true;
        if (t.joinable()) t.join();
    }
    ~RelayThread() { join(); }
};

struct Probe {
    std::uint64_t seq;
    std::int64_t sent_ns;
};

// Sends `n` probes `spacing` apart from `from` to the relay, while reading
// what arrives at `sink`; stops `linger` after the last send. Returns
// (seq, one-way delay) for every arrival.
std::vector<std::pair<std::uint64_t, Duration>> run_probes(const Udp& from, std::uint16_t relay_port, const Udp& sink,
                                                           std::size_t n, Duration spacing, Duration linger) {
    std::vector<std::pair<std::uint64_t, Duration>> got;
    const Instant start = monotonic_now();
    const Instant end = start + spacing * static_cast<std::int64_t>(n - 1) + linger;
    std::size_t sent = 0;
    for (;;) {
        const Instant now = monotonic_now();
        while (sent < n && now >= start + spacing * static_cast<std::int64_t>(sent)) {
            Probe p{sent, monotonic_now().time_since_epoch().count()};
            from.send_to(relay_port, &p, sizeof p);
            ++sent;
        }
        if (now >= end) break;
        const Instant next = sent < n ? start + spacing * static_cast<std::int64_t>(sent) : end;
        const auto wait = std::max<std::int64_t>(0, (next - now).count());
        const timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
        pollfd pfd{sink.fd, POLLIN, 0};
        if (ppoll(&pfd, 1, &ts, nullptr) <= 0) continue;
        Probe p{};
        while (recv(sink.fd, &p, sizeof p, 0) == static_cast<ssize_t>(sizeof p))
            got.emplace_back(p.seq, monotonic_now().time_since_epoch() - Duration{p.sent_ns});
    }
    return got;
}

double ms(Duration d) { return static_cast<double>(d.count()) / 1e6; }

// The ECN codepoint (the TOS byte's two low bits) of each datagram arriving
// at `sink` within `wait` (IP_RECVTOS), until `want` have arrived.
std::vector<int> receive_codepoints(const Udp& sink, std::size_t want, Duration wait) {
    const int one = 1;
    setsockopt(sink.fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    std::vector<int> got;
    const Instant end = monotonic_now() + wait;
    while (got.size() < want && monotonic_now() < end) {
        pollfd pfd{sink.fd, POLLIN, 0};
        if (poll(&pfd, 1, 20) <= 0) continue;
        std::uint8_t buf[2048];
        alignas(cmsghdr) std::uint8_t control[64];
        iovec iov{buf, sizeof buf};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        if (recvmsg(sink.fd, &m, 0) < 0) continue;
        int tos = -1;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) tos = *CMSG_DATA(c);
        got.push_back(tos < 0 ? -1 : tos & 3);
    }
    return got;
}

void set_codepoint(const Udp& u, int ecn) {
    const int tos = ecn;
    setsockopt(u.fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
}

}  // namespace

TEST_CASE("emu AC-4 on the socket path: the relay delays every datagram by at least d, and close to d") {
    Udp client, sink;
    RelayThread r("delay=20ms", 1, sink.port);
    r.start();
    const auto got = run_probes(client, r.relay.listen_port(), sink, 200, 2ms, 150ms);
    r.join();

    REQUIRE(got.size() == 200);  // nothing configured to drop, and loopback does not
    std::vector<Duration> d;
    for (const auto& [seq, owd] : got) d.push_back(owd);
    std::sort(d.begin(), d.end());
    const Duration p50 = d[d.size() / 2], p99 = d[d.size() * 99 / 100];
    MESSAGE("one-way delay through the relay, d = 20 ms: min " << ms(d.front()) << " p50 " << ms(p50) << " p99 "
                                                                << ms(p99) << " max " << ms(d.back()) << " ms");
    CHECK(d.front() >= 20ms);  // never early: the emulator holds each datagram until it is due
    CHECK(p50 <= 25ms);
    CHECK(p99 <= 100ms);
    // The model's own view (its ingress stamp to its due time) is exact.
    const auto& s = r.relay.up().emu_stats();
    CHECK(s.delivered == 200);
    CHECK(s.one_way_delay.min() == 20ms);
    CHECK(s.one_way_delay.max() == 20ms);
    CHECK(r.relay.send_errors() == 0);
}

TEST_CASE("emu on the socket path: the relay drops exactly the datagrams the model drops in virtual time") {
    constexpr const char* kProfile = "delay=5ms,loss=20%";
    constexpr std::uint64_t kSeed = 11;
    constexpr std::size_t kN = 300;
    Udp client, sink;
    RelayThread r(kProfile, kSeed, sink.port);
    r.start();
    const auto got = run_probes(client, r.relay.listen_port(), sink, kN, 1ms, 100ms);
    r.join();

    std::set<std::uint64_t> arrived;
    for (const auto& [seq, owd] : got) arrived.insert(seq);
    // The same link in virtual time, fed the same sequence of datagrams.
    auto link = ndm::emu::make_link(ndm::emu::parse_profile(kProfile), ndm::emu::Direction::up, kSeed);
    std::set<std::uint64_t> expected;
    ndm::Datagram buf;
    for (std::uint64_t i = 0; i < kN; ++i) {
        Probe p{i, 0};
        link->send({{reinterpret_cast<const std::uint8_t*>(&p), sizeof p}}, Instant{} + 1ms * static_cast<int>(i));
    }
    while (link->next_delivery() != ndm::kNever)
        if (link->deliver(link->next_delivery(), buf)) {
            Probe p{};
            std::memcpy(&p, buf.bytes.data(), sizeof p);
            expected.insert(p.seq);
        }
    CHECK(expected.size() < kN * 9 / 10);  // the profile does drop
    CHECK(arrived == expected);
    CHECK(r.relay.up().emu_stats().drops(ndm::emu::DropReason::random) == kN - expected.size());
}

TEST_CASE("emu relay: several clients at once each get their own replies") {
    Udp server, a, b;
    RelayThread r("delay=2ms", 1, server.port);
    r.start();
    const std::uint16_t port = r.relay.listen_port();
    std::vector<std::uint64_t> got_a, got_b;
    const Instant end = monotonic_now() + 2s;
    std::uint64_t next = 0;
    while (monotonic_now() < end && got_a.size() + got_b.size() < 100) {
        if (next < 100) {  // a sends even numbers, b odd ones, interleaved
            (next % 2 ? b : a).send_to(port, &next, sizeof next);
            ++next;
        }
        std::uint64_t v = 0;
        sockaddr_storage from{};
        socklen_t len = sizeof from;
        while (recvfrom(server.fd, &v, sizeof v, 0, reinterpret_cast<sockaddr*>(&from), &len) == sizeof v) {
            sendto(server.fd, &v, sizeof v, 0, reinterpret_cast<sockaddr*>(&from), len);  // echo
            len = sizeof from;
        }
        while (recv(a.fd, &v, sizeof v, 0) == sizeof v) got_a.push_back(v);
        while (recv(b.fd, &v, sizeof v, 0) == sizeof v) got_b.push_back(v);
        std::this_thread::sleep_for(200us);
    }
    r.join();
    REQUIRE(got_a.size() == 50);
    REQUIRE(got_b.size() == 50);
    CHECK(std::all_of(got_a.begin(), got_a.end(), [](std::uint64_t v) { return v % 2 == 0; }));
    CHECK(std::all_of(got_b.begin(), got_b.end(), [](std::uint64_t v) { return v % 2 == 1; }));
    CHECK(r.relay.sessions_total() == 2);
}

TEST_CASE("emu relay: a burst (sent on as GSO super-datagrams where possible) arrives datagram by datagram, byte-exact") {
    Udp client, sink;
    RelayThread r("delay=5ms", 1, sink.port);
    r.start();
    const std::uint16_t port = r.relay.listen_port();
    // 150 datagrams back to back: equal sizes with a few shorter ones, which
    // end a GSO group, so the split points are exercised too.
    const auto size_of = [](std::size_t i) -> std::size_t { return i % 37 == 36 ? 300 + i : 1200; };
    for (std::size_t i = 0; i < 150; ++i) {
        std::vector<std::uint8_t> d(size_of(i));
        for (std::size_t k = 0; k < d.size(); ++k) d[k] = static_cast<std::uint8_t>(i * 31 + k);
        client.send_to(port, d.data(), d.size());
    }
    std::vector<std::vector<std::uint8_t>> got;
    const Instant end = monotonic_now() + 2s;
    std::vector<std::uint8_t> buf(65536);
    while (got.size() < 150 && monotonic_now() < end) {
        pollfd pfd{sink.fd, POLLIN, 0};
        if (poll(&pfd, 1, 50) <= 0) continue;
        ssize_t n;
        while ((n = recv(sink.fd, buf.data(), buf.size(), 0)) >= 0) got.emplace_back(buf.begin(), buf.begin() + n);
    }
    r.join();
    REQUIRE(got.size() == 150);
    for (std::size_t i = 0; i < 150; ++i) {
        INFO("datagram " << i);
        REQUIRE(got[i].size() == size_of(i));
        bool exact = true;
        for (std::size_t k = 0; k < got[i].size(); ++k) exact = exact && got[i][k] == static_cast<std::uint8_t>(i * 31 + k);
        CHECK(exact);
    }
    CHECK(r.relay.send_errors() == 0);
    MESSAGE("GSO sends: " << r.relay.gso_sends());
}

TEST_CASE("emu relay: ECN codepoints cross the relay both ways, and the emulator's CE marks reach the receiver") {
    constexpr int kEct0 = 2, kEct1 = 1, kCe = 3;
    SUBCASE("unimpaired: ECT(0) up and ECT(1) down arrive as sent") {
        Udp client, server;
        RelayThread r("delay=1ms", 1, server.port);
        r.start();
        set_codepoint(client, kEct0);
        const std::uint8_t ping[100] = {1};
        for (int i = 0; i < 5; ++i) client.send_to(r.relay.listen_port(), ping, sizeof ping);
        const auto up = receive_codepoints(server, 5, 2s);
        REQUIRE(up.size() == 5);
        for (int c : up) CHECK(c == kEct0);
        // The reply goes back to the relay's upstream socket, whose port the
        // server learns from the datagrams it received.
        sockaddr_in from{};
        socklen_t len = sizeof from;
        client.send_to(r.relay.listen_port(), ping, sizeof ping);
        pollfd pfd{server.fd, POLLIN, 0};
        REQUIRE(poll(&pfd, 1, 2000) == 1);
        std::uint8_t buf[256];
        REQUIRE(recvfrom(server.fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len) > 0);
        set_codepoint(server, kEct1);
        for (int i = 0; i < 3; ++i) server.send_to(ntohs(from.sin_port), ping, sizeof ping);
        const auto down = receive_codepoints(client, 3, 2s);
        REQUIRE(down.size() == 3);
        for (int c : down) CHECK(c == kEct1);
    }
    SUBCASE("an L4S-style step marks the queued ECT datagrams CE and leaves not-ECT ones unmarked") {
        // 1 Mbit/s: a burst of 1200-byte datagrams queues ~9.6 ms each behind
        // the first; the step marks every one that waits over 1 ms.
        for (const int sent : {kEct0, 0}) {
            CAPTURE(sent);
            Udp client, server;
            RelayThread r("rate=1mbit,ecn=step,ecn-step=1ms", 1, server.port);
            r.start();
            set_codepoint(client, sent);
            const std::vector<std::uint8_t> d(1200, 7);
            for (int i = 0; i < 8; ++i) client.send_to(r.relay.listen_port(), d.data(), d.size());
            const auto got = receive_codepoints(server, 8, 3s);
            REQUIRE(got.size() == 8);
            CHECK(got[0] == sent);  // served at once
            for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i] == (sent ? kCe : 0));
            r.join();
            CHECK(r.relay.up().emu_stats().marks(ndm::emu::MarkReason::step) == (sent ? 7u : 0u));
        }
    }
}

#endif
