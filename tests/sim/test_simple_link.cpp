// SimpleLink (src/sim/simple_link.cpp): deterministic impairments of one
// direction of a path, checked without any connection.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "ndm/sim.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::kNever;
using ndm::sim::SimpleLink;
using ndm::sim::SimpleLinkConfig;

namespace {

Instant at(Duration d) { return Instant{} + d; }

// A datagram that carries its sequence number, padded to `size` bytes.
std::vector<std::uint8_t> datagram(std::uint64_t seq, std::size_t size = 100) {
    std::vector<std::uint8_t> d(std::max<std::size_t>(size, 8));
    std::memcpy(d.data(), &seq, 8);
    for (std::size_t i = 8; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(i * 31 + seq);
    return d;
}

std::uint64_t seq_of(const std::vector<std::uint8_t>& d) {
    std::uint64_t s = 0;
    std::memcpy(&s, d.data(), 8);
    return s;
}

// Sends n datagrams 1 ms apart, then drains; returns the delivered sequence numbers in order.
std::vector<std::uint64_t> run(SimpleLink& link, std::uint64_t n, Duration spacing = 1ms) {
    std::vector<std::uint64_t> out;
    ndm::Datagram buf;
    for (std::uint64_t i = 0; i < n; ++i) {
        const Instant now = at(spacing * static_cast<Duration::rep>(i));
        while (link.deliver(now, buf)) out.push_back(seq_of(buf.bytes));
        link.send({datagram(i)}, now);
    }
    while (link.next_delivery() != kNever) {
        REQUIRE(link.deliver(link.next_delivery(), buf));
        out.push_back(seq_of(buf.bytes));
    }
    return out;
}

// Bernoulli count within 5 standard deviations of n·p.
void check_rate(std::uint64_t count, std::uint64_t n, double p) {
    const double mean = static_cast<double>(n) * p;
    const double sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
    CHECK(std::abs(static_cast<double>(count) - mean) < 5 * sigma);
}

}  // namespace

TEST_CASE("SimpleLink: empty link has nothing to deliver") {
    SimpleLink link({});
    ndm::Datagram buf;
    CHECK(link.next_delivery() == kNever);
    CHECK_FALSE(link.deliver(at(1s), buf));
    CHECK(link.stats().sent == 0);
}

TEST_CASE("SimpleLink: delay is exact and content is preserved") {
    SimpleLinkConfig cfg;
    cfg.delay = 25ms;
    SimpleLink link(cfg);
    const auto d = datagram(7, 1452);
    link.send({d}, at(100ms));
    CHECK(link.next_delivery() == at(125ms));
    ndm::Datagram buf;
    CHECK_FALSE(link.deliver(at(125ms) - 1ns, buf));
    REQUIRE(link.deliver(at(125ms), buf));
    CHECK(buf.bytes == d);
    CHECK(link.next_delivery() == kNever);
    CHECK(link.stats().delivered == 1);
}

TEST_CASE("SimpleLink: same seed gives the same drop pattern, another seed a different one") {
    SimpleLinkConfig cfg;
    cfg.delay = 5ms;
    cfg.loss = 0.2;
    cfg.seed = 42;
    SimpleLink a(cfg), b(cfg);
    const auto ra = run(a, 10000);
    const auto rb = run(b, 10000);
    CHECK(ra == rb);
    cfg.seed = 43;
    SimpleLink c(cfg);
    CHECK(run(c, 10000) != ra);
}

TEST_CASE("SimpleLink: loss rate within tolerance over 100k packets") {
    SimpleLinkConfig cfg;
    cfg.loss = 0.05;
    cfg.seed = 7;
    SimpleLink link(cfg);
    const auto out = run(link, 100000, 10us);
    const auto s = link.stats();
    CHECK(s.sent == 100000);
    check_rate(s.dropped_random, 100000, 0.05);
    CHECK(s.delivered + s.dropped_random == s.sent);
    CHECK(out.size() == s.delivered);
    CHECK(std::is_sorted(out.begin(), out.end()));
}

TEST_CASE("SimpleLink: enabling one impairment does not shift another's pattern") {
    SimpleLinkConfig cfg;
    cfg.loss = 0.1;
    cfg.seed = 9;
    SimpleLink plain(cfg);
    cfg.duplicate = 0.3;
    cfg.reorder = 0.2;
    SimpleLink busy(cfg);
    auto a = run(plain, 5000);
    auto b = run(busy, 5000);
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    CHECK(a == b);
}

TEST_CASE("SimpleLink: rate limiting spaces packets by their serialization time") {
    SimpleLinkConfig cfg;
    cfg.delay = 10ms;
    cfg.rate_bps = 8e6;  // 1000 bytes = 1 ms
    SimpleLink link(cfg);
    for (std::uint64_t i = 0; i < 5; ++i) link.send({datagram(i, 1000)}, at(0ms));
    ndm::Datagram buf;
    for (std::uint64_t i = 0; i < 5; ++i) {
        const Instant due = at(10ms + 1ms * static_cast<Duration::rep>(i + 1));
        CHECK(link.next_delivery() == due);
        CHECK_FALSE(link.deliver(due - 1ns, buf));
        REQUIRE(link.deliver(due, buf));
        CHECK(seq_of(buf.bytes) == i);
    }
    // An idle transmitter starts serializing at the send time.
    link.send({datagram(9, 500)}, at(100ms));
    CHECK(link.next_delivery() == at(100ms + 500us + 10ms));
}

TEST_CASE("SimpleLink: fractional serialization times do not drift") {
    SimpleLinkConfig cfg;
    cfg.rate_bps = 50e6;  // 1452 bytes = 232.32 us
    cfg.queue_packets = 10000;
    SimpleLink link(cfg);
    for (std::uint64_t i = 0; i < 1000; ++i) link.send({datagram(i, 1452)}, at(0ms));
    ndm::Datagram buf;
    Instant last{};
    while (link.next_delivery() != kNever) {
        last = link.next_delivery();
        REQUIRE(link.deliver(last, buf));
    }
    const auto expected_ns = 1000 * 1452 * 8 * 1e9 / 50e6;  // 232.32 ms
    CHECK(std::abs(static_cast<double>(last.time_since_epoch().count()) - expected_ns) <= 1.0);
}

TEST_CASE("SimpleLink: droptail at the queue bound") {
    SimpleLinkConfig cfg;
    cfg.delay = 50ms;
    cfg.rate_bps = 8e6;  // 1 ms per 1000-byte packet
    cfg.queue_packets = 3;
    SimpleLink link(cfg);
    for (std::uint64_t i = 0; i < 5; ++i) link.send({datagram(i, 1000)}, at(0ms));
    CHECK(link.stats().dropped_queue == 2);
    CHECK(link.queued() == 3);
    // The first packet finished serializing at 1 ms: one slot frees even
    // though it is still propagating (the delay is not part of the queue).
    link.send({datagram(5, 1000)}, at(1ms));
    link.send({datagram(6, 1000)}, at(1ms));
    CHECK(link.stats().dropped_queue == 3);
    ndm::Datagram buf;
    std::vector<std::uint64_t> got;
    while (link.next_delivery() != kNever) {
        REQUIRE(link.deliver(link.next_delivery(), buf));
        got.push_back(seq_of(buf.bytes));
    }
    CHECK(got == std::vector<std::uint64_t>{0, 1, 2, 5});
    const auto s = link.stats();
    CHECK(s.sent == 7);
    CHECK(s.delivered + s.dropped_queue == s.sent);
}

TEST_CASE("SimpleLink: everything sent during an outage window is dropped") {
    SimpleLinkConfig cfg;
    cfg.delay = 10ms;
    cfg.outages = {{at(1s), at(2s)}, {at(5s), at(6s)}};
    SimpleLink link(cfg);
    const auto out = run(link, 7000);  // one packet per ms for 7 s
    const auto s = link.stats();
    CHECK(s.dropped_outage == 2000);
    CHECK(s.delivered == 5000);
    for (std::uint64_t seq : out) {
        CHECK_FALSE((seq >= 1000 && seq < 2000));
        CHECK_FALSE((seq >= 5000 && seq < 6000));
    }
    // A packet sent before the window is still delivered during it.
    CHECK(std::find(out.begin(), out.end(), 999) != out.end());
    CHECK(std::find(out.begin(), out.end(), 2000) != out.end());
}

TEST_CASE("SimpleLink: reordering holds packets back so later ones overtake") {
    SimpleLinkConfig cfg;
    cfg.delay = 10ms;
    cfg.reorder = 0.1;
    cfg.reorder_extra_delay = 5ms;
    cfg.seed = 3;
    SimpleLink link(cfg);
    const auto out = run(link, 20000);
    const auto s = link.stats();
    check_rate(s.reordered, 20000, 0.1);
    CHECK(s.delivered == 20000);
    CHECK_FALSE(std::is_sorted(out.begin(), out.end()));
    auto sorted = out;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    CHECK(sorted.size() == 20000);
    CHECK(sorted.back() == 19999);
}

TEST_CASE("SimpleLink: duplication delivers a second identical copy") {
    SimpleLinkConfig cfg;
    cfg.delay = 1ms;
    cfg.duplicate = 0.1;
    cfg.seed = 5;
    SimpleLink link(cfg);
    const auto out = run(link, 20000);
    const auto s = link.stats();
    check_rate(s.duplicated, 20000, 0.1);
    CHECK(s.delivered == s.sent + s.duplicated);
    CHECK(out.size() == s.delivered);
    CHECK(std::is_sorted(out.begin(), out.end()));  // copies travel back to back
}

TEST_CASE("SimpleLink: a corrupted datagram differs from the original in exactly one bit") {
    SimpleLinkConfig cfg;
    cfg.corrupt = 1;
    SimpleLink link(cfg);
    ndm::Datagram buf;
    std::vector<int> bit_hits(1452 * 8);
    for (std::uint64_t i = 0; i < 2000; ++i) {
        const auto d = datagram(i, 1452);
        link.send({d}, at(1ms * static_cast<Duration::rep>(i)));
        REQUIRE(link.deliver(at(1ms * static_cast<Duration::rep>(i)), buf));
        REQUIRE(buf.bytes.size() == d.size());
        int flipped = 0;
        for (std::size_t k = 0; k < d.size(); ++k) {
            const auto x = static_cast<std::uint8_t>(d[k] ^ buf.bytes[k]);
            flipped += std::popcount(x);
            if (x) ++bit_hits[k * 8 + static_cast<std::size_t>(std::countr_zero(x))];
        }
        CHECK(flipped == 1);
    }
    CHECK(link.stats().corrupted == 2000);
    // The flipped bit moves around the datagram.
    CHECK(std::count_if(bit_hits.begin(), bit_hits.end(), [](int h) { return h > 0; }) > 1500);

    SimpleLinkConfig some;
    some.corrupt = 0.05;
    SimpleLink partial(some);
    run(partial, 20000);
    check_rate(partial.stats().corrupted, 20000, 0.05);
}

TEST_CASE("SimpleLink: invalid configurations are rejected") {
    SimpleLinkConfig cfg;
    cfg.loss = 1.5;
    CHECK_THROWS_AS(SimpleLink{cfg}, std::invalid_argument);
    cfg = {};
    cfg.delay = -1ms;
    CHECK_THROWS_AS(SimpleLink{cfg}, std::invalid_argument);
    cfg = {};
    cfg.rate_bps = 1e6;
    cfg.queue_packets = 0;
    CHECK_THROWS_AS(SimpleLink{cfg}, std::invalid_argument);
}
