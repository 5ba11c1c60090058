#include <doctest/doctest.h>

#include "transport/loss_detector.hpp"
#include "transport/rtt_estimator.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::transport::kGranularity;
using ndm::transport::kInitialRtt;
using ndm::transport::LossDetector;
using ndm::transport::RttEstimator;

TEST_CASE("RttEstimator: state before any sample (RFC 9002 §5.3, §6.2.2)") {
    RttEstimator r;
    CHECK_FALSE(r.has_sample());
    CHECK(r.smoothed() == kInitialRtt);
    CHECK(r.rttvar() == kInitialRtt / 2);
    // 333 + 4·166.5 + 25 ms
    CHECK(r.pto_period(25ms) == 1024ms);
    CHECK(r.pto_period(0ms) == 999ms);
}

TEST_CASE("RttEstimator: first sample ignores ack_delay") {
    RttEstimator r;
    r.update(100ms, 10ms, true, 25ms);
    CHECK(r.has_sample());
    CHECK(r.latest() == 100ms);
    CHECK(r.min() == 100ms);
    CHECK(r.smoothed() == 100ms);
    CHECK(r.rttvar() == 50ms);
    CHECK(r.pto_period(25ms) == 100ms + 200ms + 25ms);
}

TEST_CASE("RttEstimator: second sample with ack_delay applied") {
    RttEstimator r;
    r.update(100ms, 0ms, false, 25ms);
    // 120 >= min_rtt(100) + 10 → adjusted = 110
    r.update(120ms, 10ms, false, 25ms);
    CHECK(r.latest() == 120ms);
    CHECK(r.min() == 100ms);
    CHECK(r.rttvar() == 40ms);           // ¾·50 + ¼·|100 − 110|
    CHECK(r.smoothed() == 101250us);     // ⅞·100 + ⅛·110
}

TEST_CASE("RttEstimator: ack_delay not applied below min_rtt + ack_delay") {
    RttEstimator r;
    r.update(100ms, 0ms, false, 25ms);
    // 105 < 100 + 10 → adjusted = latest = 105
    r.update(105ms, 10ms, false, 25ms);
    CHECK(r.rttvar() == 38750us);        // ¾·50 + ¼·5
    CHECK(r.smoothed() == 100625us);     // ⅞·100 + ⅛·105
}

TEST_CASE("RttEstimator: a peer's ack_delay near Duration::max() before confirmation is not subtracted") {
    // An ACK frame may carry up to ~9.2e18 ns of ack delay, uncapped before
    // the handshake is confirmed. min_rtt + ack_delay overflowed (UB: the
    // sanitizer build aborts); release wrapped, subtracted the delay and
    // made smoothed_rtt hugely negative.
    for (const Duration delay : {Duration::max(), Duration::max() - 5ms, Duration(9'223'372'036'854'775'000)}) {
        RttEstimator r;
        r.update(100ms, 0ms, false, 25ms);
        r.update(120ms, delay, false, 25ms);
        CHECK(r.smoothed() == 102500us);  // ⅞·100 + ⅛·120: the delay is not applied
        CHECK(r.rttvar() == 42500us);     // ¾·50 + ¼·20
        CHECK(r.pto_period(25ms) > 0ms);
    }
}

TEST_CASE("RttEstimator: ack_delay capped by max_ack_delay only once handshake confirmed") {
    RttEstimator confirmed;
    confirmed.update(100ms, 0ms, true, 25ms);
    confirmed.update(200ms, 50ms, true, 25ms);  // ack_delay → 25, adjusted 175
    CHECK(confirmed.rttvar() == 56250us);       // ¾·50 + ¼·75
    CHECK(confirmed.smoothed() == 109375us);    // ⅞·100 + ⅛·175

    RttEstimator unconfirmed;
    unconfirmed.update(100ms, 0ms, false, 25ms);
    unconfirmed.update(200ms, 50ms, false, 25ms);  // full 50 ms subtracted: adjusted 150
    CHECK(unconfirmed.rttvar() == 50ms);           // ¾·50 + ¼·50
    CHECK(unconfirmed.smoothed() == 106250us);     // ⅞·100 + ⅛·150
}

TEST_CASE("RttEstimator: min_rtt uses the raw sample, not the adjusted one") {
    RttEstimator r;
    r.update(100ms, 0ms, true, 25ms);
    r.update(90ms, 20ms, true, 25ms);  // 90 < 90 + 20: not adjusted; min = 90 (not 70)
    CHECK(r.min() == 90ms);
    CHECK(r.smoothed() == 98750us);  // ⅞·100 + ⅛·90
    r.update(300ms, 0ms, true, 25ms);
    CHECK(r.min() == 90ms);
}

TEST_CASE("RttEstimator: PTO period uses kGranularity when rttvar is tiny") {
    RttEstimator r;
    r.update(100us, 0ms, true, 0ms);  // rttvar 50 µs: 4·rttvar < 1 ms
    CHECK(r.pto_period(0ms) == 100us + kGranularity);
    CHECK(r.pto_period(25ms) == 100us + kGranularity + 25ms);
}

TEST_CASE("PTO backs off exponentially (1×, 2×, 4×) and resets on an ACK") {
    LossDetector ld({.max_ack_delay = 25ms});
    const Instant t0{};
    // An RTT sample: smoothed 100 ms, rttvar 50 ms → pto_period 325 ms.
    ndm::transport::SentPacket p;
    p.pn = 0;
    p.time_sent = t0;
    p.bytes = 1200;
    p.ack_eliciting = p.in_flight = true;
    ld.on_packet_sent(p);
    ndm::wire::AckFrame ack;
    ack.ranges = {{0, 0}};
    ld.on_ack_received(ack, t0 + 100ms, true);
    REQUIRE(ld.rtt().pto_period(25ms) == 325ms);

    const Instant sent = t0 + 200ms;
    p.pn = 1;
    p.time_sent = sent;
    ld.on_packet_sent(p);
    CHECK(ld.timer() == sent + 325ms);
    CHECK(ld.on_timeout(sent + 324ms).pto == false);  // not yet
    auto to = ld.on_timeout(sent + 325ms);
    CHECK(to.pto);
    CHECK(to.probes == 2);
    CHECK(ld.pto_count() == 1);
    CHECK(ld.timer() == sent + 650ms);
    CHECK(ld.on_timeout(sent + 650ms).pto);
    CHECK(ld.pto_count() == 2);
    CHECK(ld.timer() == sent + 1300ms);

    ack.ranges = {{1, 1}};
    ld.on_ack_received(ack, sent + 1400ms, true);
    CHECK(ld.pto_count() == 0);
    CHECK(ld.timer() == ndm::kNever);  // nothing in flight
}
