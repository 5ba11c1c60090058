// NewReno (src/cc/reno.cpp) driven by synthetic event streams, no network.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "cc/reno.hpp"
#include "cc/window.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"

using namespace std::chrono_literals;
using ndm::Instant;
using ndm::cc::AckEvent;
using ndm::cc::Reno;

namespace {

using ndm::test::at;
using ndm::test::cc_params;
using ndm::test::kMds;
using ndm::test::loss_event;

// Reno ignores RTT samples: these ACKs carry none.
AckEvent ack(Instant now, std::uint64_t bytes, Instant sent, bool app_limited = false) {
    return ndm::test::ack_event(now, bytes, sent, std::nullopt, app_limited);
}

// Acknowledges `bytes` in MDS-sized ACKs of packets sent at `sent`.
void ack_bytes(Reno& cc, std::uint64_t bytes, Instant now, Instant sent) {
    while (bytes > 0) {
        const auto n = std::min(bytes, kMds);
        cc.on_ack(ack(now, n, sent));
        bytes -= n;
    }
}

// A Reno in congestion avoidance at cwnd = ssthresh = 6000 (first loss at
// 100 ms, recovery left by the ACK of a packet sent at 101 ms that carries
// no bytes).
Reno reno_in_ca() {
    Reno cc(cc_params());
    cc.on_congestion_event(loss_event(at(100ms), at(50ms)));
    cc.on_ack(ack(at(150ms), 0, at(101ms)));
    return cc;
}

}  // namespace

TEST_CASE("reno: initial and minimum window (RFC 9002 §7.2)") {
    CHECK(ndm::cc::initial_window(1200) == 12000);
    CHECK(ndm::cc::initial_window(1452) == 14520);
    CHECK(ndm::cc::initial_window(1500) == 14720);
    CHECK(ndm::cc::initial_window(65507) == 131014);
    CHECK(ndm::cc::minimum_window(1200) == 2400);
    for (std::uint64_t mds : {1200u, 1452u, 65507u}) {
        CAPTURE(mds);
        Reno cc(cc_params(mds));
        CHECK(cc.cwnd() == ndm::cc::initial_window(mds));
        CHECK(cc.ssthresh() == UINT64_MAX);
        CHECK(cc.state() == "slow_start");
        CHECK(cc.name() == "reno");
        CHECK_FALSE(cc.pacing_rate().has_value());
    }
}

TEST_CASE("reno: slow start doubles per RTT of ACKs") {
    Reno cc(cc_params());
    auto now = at(0ms);
    for (int rtt = 0; rtt < 5; ++rtt) {
        const auto before = cc.cwnd();
        now += 20ms;
        ack_bytes(cc, before, now, now - 20ms);
        CHECK(cc.cwnd() == 2 * before);
        CHECK(cc.state() == "slow_start");
    }
    CHECK(cc.cwnd() == 12000u << 5);
}

TEST_CASE("reno: slow start stops at ssthresh, the rest counts toward CA") {
    Reno cc = reno_in_ca();
    // A new period (6000 -> ssthresh 3000) with persistent congestion: cwnd
    // collapses to 2400, below ssthresh -> slow start.
    cc.on_congestion_event(loss_event(at(200ms), at(160ms), true));
    REQUIRE(cc.cwnd() == 2400);
    REQUIRE(cc.ssthresh() == 3000);
    REQUIRE(cc.state() == "slow_start");
    // One ACK of 1000 bytes: 600 reach ssthresh, 400 go to the CA counter.
    cc.on_ack(ack(at(250ms), 1000, at(210ms)));
    CHECK(cc.cwnd() == 3000);
    CHECK(cc.state() == "congestion_avoidance");
    cc.on_ack(ack(at(250ms), 2599, at(210ms)));
    CHECK(cc.cwnd() == 3000);
    cc.on_ack(ack(at(250ms), 1, at(210ms)));
    CHECK(cc.cwnd() == 4200);
}

TEST_CASE("reno: congestion avoidance grows one MDS per window acked, byte-exact") {
    Reno cc = reno_in_ca();
    REQUIRE(cc.cwnd() == 6000);
    REQUIRE(cc.ssthresh() == 6000);
    REQUIRE(cc.state() == "congestion_avoidance");

    const auto sent = at(200ms);
    const auto now = at(250ms);
    cc.on_ack(ack(now, 5999, sent));
    CHECK(cc.cwnd() == 6000);
    cc.on_ack(ack(now, 1, sent));
    CHECK(cc.cwnd() == 7200);

    // Odd-sized ACKs (700 bytes) over many windows: no drift, the remainder
    // carries over exactly.
    std::uint64_t acked = 0;
    std::uint64_t expected = 7200;
    std::uint64_t need = 7200;  // bytes still needed for the next increase
    for (int i = 0; i < 2000; ++i) {
        cc.on_ack(ack(now, 700, sent));
        acked += 700;
        while (acked >= need) {
            acked -= need;
            expected += kMds;
            need = expected;
        }
        REQUIRE(cc.cwnd() == expected);
    }
    CHECK(cc.cwnd() > 7200 + 10 * kMds);

    // One huge ACK covering two full windows grows twice.
    Reno big = reno_in_ca();
    big.on_ack(ack(now, 6000 + 7200, sent));
    CHECK(big.cwnd() == 8400);
}

TEST_CASE("reno: one reduction per recovery period") {
    Reno cc(cc_params());
    cc.on_congestion_event(loss_event(at(100ms), at(50ms)));
    CHECK(cc.cwnd() == 6000);
    CHECK(cc.ssthresh() == 6000);
    CHECK(cc.state() == "recovery");
    CHECK(cc.recovery().start() == at(100ms));

    // Another loss of a packet sent before the recovery started: same period.
    cc.on_congestion_event(loss_event(at(110ms), at(99ms)));
    cc.on_congestion_event(loss_event(at(120ms), at(100ms)));
    CHECK(cc.cwnd() == 6000);
    CHECK(cc.ssthresh() == 6000);

    // ACKs of packets sent before the recovery start do not grow, nor end it.
    cc.on_ack(ack(at(130ms), 6000, at(90ms)));
    CHECK(cc.cwnd() == 6000);
    CHECK(cc.state() == "recovery");

    // A packet sent after the start is acknowledged: recovery is over.
    cc.on_ack(ack(at(160ms), 1200, at(101ms)));
    CHECK(cc.state() == "congestion_avoidance");
    CHECK(cc.cwnd() == 6000);

    // A late loss of an old packet still belongs to the old period.
    cc.on_congestion_event(loss_event(at(170ms), at(95ms)));
    CHECK(cc.cwnd() == 6000);
    CHECK(cc.state() == "congestion_avoidance");

    // A loss of a packet sent after the period started reduces again.
    cc.on_congestion_event(loss_event(at(200ms), at(150ms)));
    CHECK(cc.ssthresh() == 3000);
    CHECK(cc.cwnd() == 3000);
    CHECK(cc.state() == "recovery");
    CHECK(cc.recovery().start() == at(200ms));
}

TEST_CASE("reno: a loss in the same period without an intervening ACK does not reduce") {
    // The period starts at the loss detection time, not at the ACK that ends it.
    Reno cc(cc_params());
    cc.on_congestion_event(loss_event(at(100ms), at(80ms)));
    cc.on_congestion_event(loss_event(at(140ms), at(100ms)));
    CHECK(cc.cwnd() == 6000);
    cc.on_congestion_event(loss_event(at(150ms), at(101ms)));
    CHECK(cc.cwnd() == 3000);
}

TEST_CASE("reno: no growth while app-limited (RFC 9002 §7.8)") {
    SUBCASE("slow start") {
        Reno cc(cc_params());
        cc.on_ack(ack(at(20ms), 12000, at(0ms), true));
        CHECK(cc.cwnd() == 12000);
        cc.on_ack(ack(at(20ms), 1200, at(0ms)));
        CHECK(cc.cwnd() == 13200);
    }
    SUBCASE("congestion avoidance: app-limited bytes do not count") {
        Reno cc = reno_in_ca();
        cc.on_ack(ack(at(250ms), 6000, at(200ms), true));
        CHECK(cc.cwnd() == 6000);
        cc.on_ack(ack(at(250ms), 5999, at(200ms)));
        CHECK(cc.cwnd() == 6000);
        cc.on_ack(ack(at(250ms), 1, at(200ms)));
        CHECK(cc.cwnd() == 7200);
    }
}

TEST_CASE("reno: persistent congestion collapses to the minimum window") {
    Reno cc(cc_params());
    ack_bytes(cc, 12000, at(20ms), at(0ms));
    REQUIRE(cc.cwnd() == 24000);
    cc.on_congestion_event(loss_event(at(1000ms), at(500ms), true));
    CHECK(cc.cwnd() == 2 * kMds);
    CHECK(cc.ssthresh() == 12000);  // the reduction of the same event
    CHECK(cc.state() == "slow_start");
    CHECK(cc.recovery().start() == Instant::min());
    // The recovery period is forgotten: an ACK of an old packet grows again.
    cc.on_ack(ack(at(1010ms), 1200, at(400ms)));
    CHECK(cc.cwnd() == 3 * kMds);

    // Persistent congestion during an existing recovery period: no second
    // reduction of ssthresh, but still the collapse.
    Reno r(cc_params());
    r.on_congestion_event(loss_event(at(100ms), at(50ms)));
    r.on_congestion_event(loss_event(at(110ms), at(60ms), true));
    CHECK(r.cwnd() == 2 * kMds);
    CHECK(r.ssthresh() == 6000);
}

TEST_CASE("reno: spurious congestion undoes the last reduction") {
    SUBCASE("in slow start") {
        Reno cc(cc_params());
        cc.on_congestion_event(loss_event(at(100ms), at(50ms)));
        REQUIRE(cc.cwnd() == 6000);
        cc.on_spurious_congestion({at(120ms)});
        CHECK(cc.cwnd() == 12000);
        CHECK(cc.ssthresh() == UINT64_MAX);
        CHECK(cc.state() == "slow_start");
        // Recovery ended: ACKs of packets sent before its start grow again.
        cc.on_ack(ack(at(130ms), 1200, at(90ms)));
        CHECK(cc.cwnd() == 13200);
        // A second undo has nothing to restore.
        cc.on_spurious_congestion({at(140ms)});
        CHECK(cc.cwnd() == 13200);
        CHECK(cc.ssthresh() == UINT64_MAX);
    }
    SUBCASE("in congestion avoidance") {
        Reno cc = reno_in_ca();  // 12000 -> 6000
        cc.on_ack(ack(at(250ms), 6000, at(200ms)));
        REQUIRE(cc.cwnd() == 7200);
        cc.on_congestion_event(loss_event(at(300ms), at(260ms)));
        REQUIRE(cc.cwnd() == 3600);
        REQUIRE(cc.ssthresh() == 3600);
        cc.on_spurious_congestion({at(320ms)});
        CHECK(cc.cwnd() == 7200);
        CHECK(cc.ssthresh() == 6000);
        CHECK(cc.state() == "congestion_avoidance");
    }
    SUBCASE("without a reduction it does nothing") {
        Reno cc(cc_params());
        cc.on_spurious_congestion({at(10ms)});
        CHECK(cc.cwnd() == 12000);
        CHECK(cc.ssthresh() == UINT64_MAX);
    }
}

TEST_CASE("reno: the minimum window is respected") {
    // 12000 -> 6000 -> 3000 -> 2400 (ssthresh 1500) -> 2400 (ssthresh 1200) ...
    Reno cc(cc_params());
    for (int i = 1; i <= 6; ++i) {
        const auto now = at(std::chrono::milliseconds(100 * i));
        const auto before = cc.cwnd();
        cc.on_congestion_event(loss_event(now, now - 1ms));  // sent after the previous start
        CHECK(cc.ssthresh() == before / 2);
        CHECK(cc.cwnd() == std::max<std::uint64_t>(before / 2, 2 * kMds));
    }
    CHECK(cc.cwnd() == 2 * kMds);
    CHECK(cc.ssthresh() == kMds);
}

TEST_CASE("reno: option beta") {
    auto cc = ndm::cc::make("reno", cc_params(), "beta=0.7");
    auto* reno = dynamic_cast<Reno*>(cc.get());
    REQUIRE(reno != nullptr);
    CHECK(reno->beta() == doctest::Approx(0.7));
    cc->on_congestion_event(loss_event(at(100ms), at(50ms)));
    CHECK(cc->ssthresh() == 8400);
    CHECK(cc->cwnd() == 8400);

    CHECK(Reno(cc_params()).beta() == 0.5);
    CHECK(Reno(cc_params(), {{"beta", "0.95"}}).beta() == 0.95);
    CHECK(Reno(cc_params(), {{"beta", "0.1"}}).beta() == 0.1);

    CHECK_THROWS_WITH_AS(Reno(cc_params(), {{"beta", "0.05"}}),
                         "congestion controller \"reno\": option \"beta\" must be a number in "
                         "[0.1, 0.95], got \"0.05\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("reno", cc_params(), "beta=half"),
                         "congestion controller \"reno\": option \"beta\" must be a number in "
                         "[0.1, 0.95], got \"half\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("reno", cc_params(), "beta=0.5,gamma=1"),
                         "congestion controller \"reno\": unknown option \"gamma\" (known: beta)",
                         std::invalid_argument);
    CHECK_THROWS_AS(Reno(cc_params(0)), std::invalid_argument);
}

TEST_CASE("reno: idle restart keeps the window") {
    Reno cc = reno_in_ca();
    cc.on_idle_restart(at(5000ms));
    CHECK(cc.cwnd() == 6000);
    CHECK(cc.ssthresh() == 6000);
    CHECK(cc.state() == "congestion_avoidance");
}
