// AC-10, AC-11 (docs/emulator.md, acceptance criteria), the statistics, and one end-to-end
// transfer through the emulator in virtual time.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <tuple>
#include <vector>

#include "ndm/sim.hpp"
#include "test_emu_util.hpp"

using namespace emu_test;
using ndm::emu::DropReason;
using ndm::emu::EmulatedLink;
using ndm::emu::PacketEvent;

namespace {
// FNV-1a 64, the transfers' byte-exactness check: every single-byte change alters it.
std::uint64_t fnv1a(const std::vector<std::uint8_t>& p) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (auto b : p) h = (h ^ b) * 0x100000001b3ull;
    return h;
}
}  // namespace

TEST_CASE("emu AC-10: duplicate and corrupt fractions, a corrupted copy differs by one bit and fails the checksum") {
    const std::size_t n = 100000, size = 200;
    const double p = 0.05;
    EmulatedLink link(config("duplicate=5%,corrupt=5%,delay=1ms"), 21);
    // The observer reports each delivery (true send index, corrupted flag) just
    // before deliver() returns it, so it lines up with drive()'s output.
    std::vector<std::pair<std::uint64_t, bool>> truth;
    link.set_observer([&](const PacketEvent& e) {
        if (e.kind == PacketEvent::Kind::delivered) truth.emplace_back(e.index, e.corrupted);
    });
    const auto d = drive(link, cbr(n, 100us), size, true);
    const auto& s = link.emu_stats();
    const double tol = 3 * std::sqrt(p * (1 - p) / n);
    MESSAGE("AC-10: duplicated ", double(s.duplicated) / n, ", corrupted ", double(s.corrupted) / double(n + s.duplicated),
            " (+- ", tol, ")");
    CHECK(std::abs(double(s.duplicated) / n - p) <= tol);
    CHECK(std::abs(double(s.corrupted) / double(n + s.duplicated) - p) <= tol);
    REQUIRE(d.size() == n + s.duplicated);
    REQUIRE(truth.size() == d.size());
    std::size_t corrupted = 0, one_bit = 0, checksum_failed = 0;
    for (std::size_t k = 0; k < d.size(); ++k) {
        const auto orig = payload(truth[k].first, size);
        int bits = 0;
        for (std::size_t b = 0; b < size; ++b) bits += std::popcount(static_cast<unsigned>(orig[b] ^ d[k].data[b]));
        if (!truth[k].second) {
            REQUIRE(bits == 0);
            continue;
        }
        ++corrupted;
        one_bit += bits == 1;
        checksum_failed += fnv1a(orig) != fnv1a(d[k].data);
    }
    CHECK(corrupted == s.corrupted);
    CHECK(one_bit == corrupted);
    CHECK(checksum_failed == corrupted);
}

TEST_CASE("emu AC-11: same seed and schedule give a bit-identical log, another seed differs") {
    auto log = [](std::uint64_t seed) {
        const auto profile = ndm::emu::parse_profile(
            "delay=30ms,jitter=10ms,distribution=paretonormal,order=iid,reorder=2%,gemodel=1%/30%/80%/0.1%,"
            "duplicate=1%,corrupt=1%,rate=20mbit,queue=60pkt");
        auto link = ndm::emu::make_link(profile, ndm::emu::Direction::up, seed);
        std::vector<std::tuple<int, std::uint64_t, bool, bool, int, std::int64_t>> events;
        link->set_observer([&](const PacketEvent& e) {
            events.emplace_back(int(e.kind), e.index, e.duplicate, e.corrupted, int(e.reason), e.at.time_since_epoch().count());
        });
        // A bursty schedule: 40 packets back to back every 20 ms (above the rate).
        std::vector<Instant> t;
        for (int b = 0; b < 500; ++b)
            for (int i = 0; i < 40; ++i) t.push_back(at(std::chrono::milliseconds(20 * b) + std::chrono::microseconds(10 * i)));
        drive(*link, t, 1200);
        return events;
    };
    const auto a = log(42), b = log(42), c = log(43);
    CHECK(a.size() > 20000);
    CHECK(a == b);
    CHECK(a != c);
    // The two directions of one run draw from different streams.
    const auto profile = ndm::emu::parse_profile("loss=10%");
    auto up = ndm::emu::make_link(profile, ndm::emu::Direction::up, 5);
    auto down = ndm::emu::make_link(profile, ndm::emu::Direction::down, 5);
    const auto du = drive(*up, cbr(1000, 1ms), 50), dd = drive(*down, cbr(1000, 1ms), 50);
    bool differ = du.size() != dd.size();
    for (std::size_t i = 0; !differ && i < du.size(); ++i) differ = du[i].index != dd[i].index;
    CHECK(differ);
}

TEST_CASE("emu: statistics add up and map onto LinkStats") {
    EmulatedLink link(config("loss=2%,gemodel=1%/40%,duplicate=2%,corrupt=1%,rate=5mbit,queue=30pkt,delay=10ms,"
                             "jitter=5ms,order=iid"),
                      3);
    drive(link, cbr(20000, 1ms), 1000);  // 8 Mbit/s into 5 Mbit/s
    const auto& e = link.emu_stats();
    const auto s = link.stats();
    CHECK(e.sent == 20000);
    CHECK(e.sent + e.duplicated == e.delivered + e.total_dropped());
    CHECK(e.drops(DropReason::queue_overflow) > 0);
    CHECK(e.drops(DropReason::burst) > 0);
    CHECK(s.dropped_random == e.drops(DropReason::random) + e.drops(DropReason::burst));
    CHECK(s.dropped_queue == e.drops(DropReason::queue_overflow) + e.drops(DropReason::aqm));
    CHECK(s.delivered == e.delivered);
    CHECK(s.reordered == e.reordered);
    CHECK(e.reordered > 0);
    CHECK(e.one_way_delay.count() == e.delivered);
    CHECK(e.one_way_delay.min() >= 5ms);
    CHECK(e.queue_delay.max() <= 30 * 1600us + 1ms);
    const std::string text = ndm::emu::format_stats(e);
    CHECK(text.find("queue_overflow") != std::string::npos);
    CHECK(text.find("one-way delay ms") != std::string::npos);
    CHECK(link.in_flight() == 0);
}

TEST_CASE("emu: histogram quantiles") {
    ndm::emu::Histogram h;
    CHECK(h.quantile(0.5) == 0ns);
    for (int i = 1; i <= 1000; ++i) h.add(std::chrono::microseconds(i * 100));  // 0.1 .. 100 ms
    CHECK(h.count() == 1000);
    CHECK(h.min() == 100us);
    CHECK(h.max() == 100ms);
    CHECK(h.mean() == std::chrono::microseconds(50050));
    const double p50 = ms(h.quantile(0.5)), p99 = ms(h.quantile(0.99));
    CHECK(p50 >= 50);
    CHECK(p50 <= 50 * 1.07);
    CHECK(p99 >= 99);
    CHECK(p99 <= 100);
}

TEST_CASE("emu: end to end, 4 MB with reno over urban-lte in both directions") {
    const auto profile = ndm::emu::parse_profile("urban-lte");
    ndm::sim::TransferSpec spec;
    spec.client.cc = "reno";
    spec.client.seed = 11;
    spec.server.cc = "reno";
    spec.server.seed = 12;
    spec.client_to_server_factory = [&] { return ndm::emu::make_link(profile, ndm::emu::Direction::up, 77); };
    spec.server_to_client_factory = [&] { return ndm::emu::make_link(profile, ndm::emu::Direction::down, 77); };
    spec.bytes = 4u << 20;
    spec.deadline = std::chrono::seconds(600);
    const auto r = ndm::sim::run_transfer(spec);
    MESSAGE("urban-lte 4 MB: completed ", r.completed, ", virtual ", ndm::to_seconds(r.duration), " s, goodput ",
            double(spec.bytes) * 8 / ndm::to_seconds(r.duration) / 1e6, " Mbit/s; c->s sent ", r.client_to_server.sent,
            " dropped ", r.client_to_server.dropped_random, " reordered ", r.client_to_server.reordered, "; failure '",
            r.failure, "'");
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.client_to_server.dropped_random > 0);
    CHECK(r.client_to_server.reordered > 0);
}

TEST_CASE("emu: bursts reordered past a 1-byte packet-number window never break a connection") {
    // Regression: ndm over urban-lte at 1452 bytes (seed 1) let a pacing
    // burst of ~300 packets reorder by more than 128 packet numbers; one
    // decoded to a number never sent and the ACK of it closed the connection
    // (protocol violation). Now the tag binds the full number and senders use
    // at least 2 bytes.
    const auto profile = ndm::emu::parse_profile("urban-lte");
    for (const std::uint64_t seed : {1, 2, 3}) {
        ndm::sim::TransferSpec spec;
        spec.client.cc = "ndm-cubic";
        spec.client.max_datagram_size = spec.server.max_datagram_size = 1452;
        spec.client.seed = seed * 2 + 1;
        spec.server.seed = seed * 2 + 2;
        spec.client_to_server_factory = [&] { return ndm::emu::make_link(profile, ndm::emu::Direction::up, seed); };
        spec.server_to_client_factory = [&] { return ndm::emu::make_link(profile, ndm::emu::Direction::down, seed); };
        spec.send_for = std::chrono::seconds(5);
        spec.deadline = std::chrono::seconds(60);
        spec.seed = seed;
        const auto r = ndm::sim::run_transfer(spec);
        INFO("seed ", seed, ": failure '", r.failure, "', client close ", r.client_close.reason, ", server close ",
             r.server_close.reason);
        CHECK(r.completed);
        CHECK(r.hash_match);
        CHECK(r.client_close.code == 0);
    }
}

TEST_CASE("emu: lte-verizon with 64 KB datagrams: bounded queueing, and a 10 s test ends near 10 s") {
    // Counted in datagrams, the preset's 200-packet queue held 200 of 64 KB
    // (13 MB, 17 s at 6 Mbit/s): p95 queueing 12.6 s and a 28 s receiver
    // duration. It holds 200 packets of 1500 bytes, as in mm-link.
    const auto profile = ndm::emu::parse_profile("lte-verizon");
    auto up = std::make_shared<ndm::emu::SharedLink>(ndm::emu::make_link(profile, ndm::emu::Direction::up, 1));
    ndm::sim::TransferSpec spec;
    spec.client.cc = "cubic";
    spec.client.max_datagram_size = spec.server.max_datagram_size = 65507;
    spec.client.seed = 3;
    spec.server.seed = 4;
    spec.client_to_server_factory = [up] { return up->port(); };  // the port keeps the link's statistics reachable
    spec.server_to_client_factory = [&] { return ndm::emu::make_link(profile, ndm::emu::Direction::down, 1); };
    spec.send_for = std::chrono::seconds(10);
    spec.deadline = std::chrono::seconds(120);
    const auto r = ndm::sim::run_transfer(spec);
    const auto& s = up->link().emu_stats();
    MESSAGE("lte-verizon, 65507-byte datagrams, cubic: ", ndm::to_seconds(r.duration), " s, goodput ",
            double(r.bytes_delivered) * 8 / ndm::to_seconds(r.duration) / 1e6, " Mbit/s, queue delay p95 ",
            ms(s.queue_delay.quantile(0.95)), " ms max ", ms(s.queue_delay.max()), " ms; failure '", r.failure, "'");
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(s.queue_delay.quantile(0.95) <= 1s);
    CHECK(r.duration <= 12s);
}
