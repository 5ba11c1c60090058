// CUBIC (src/cc/cubic.cpp, RFC 9438) driven by synthetic event streams, no
// network; and one end-to-end transfer in virtual time.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "cc/cubic.hpp"
#include "cc/window.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::cc::AckEvent;
using ndm::cc::Cubic;
using ndm::cc::Options;

namespace {

using ndm::test::at;
using ndm::test::cc_params;
using ndm::test::kMds;
using ndm::test::loss_event;

double seconds(Duration d) { return ndm::to_seconds(d); }

double segments(std::uint64_t bytes) { return static_cast<double>(bytes) / kMds; }

// Every synthetic ACK here carries an RTT sample, 100 ms unless given.
AckEvent ack(Instant now, std::uint64_t bytes, Instant sent, Duration rtt = 100ms, bool app_limited = false) {
    return ndm::test::ack_event(now, bytes, sent, rtt, app_limited);
}

// HyStart++ off so that slow start is plain and a cubic can be built at an
// exact window.
Options no_hystart(Options o = {}) {
    o.emplace("hystart", "off");
    return o;
}

// Slow-starts from the initial window to `segs` segments with one big ACK
// at `now` (hystart must be off).
void grow_to(Cubic& cc, std::uint64_t segs, Instant now) {
    REQUIRE(cc.cwnd() < segs * kMds);
    cc.on_ack(ack(now, segs * kMds - cc.cwnd(), now - 1ms));
    REQUIRE(cc.cwnd() == segs * kMds);
}

// Congestion avoidance on a path with a fixed RTT and no queue: ACKs of one
// MDS each, spaced so that one window's worth arrives per RTT, each for a
// packet sent one RTT earlier. `each` sees the controller after every ACK.
void run(Cubic& cc, Instant& now, Duration rtt, Instant until,
         const std::function<void(const Cubic&)>& each = {}) {
    while (now < until) {
        const auto gap = Duration(rtt.count() * static_cast<std::int64_t>(kMds) /
                                  static_cast<std::int64_t>(cc.cwnd()));
        now += std::max(gap, Duration(1));
        cc.on_ack(ack(now, kMds, now - rtt, rtt));
        if (each) each(cc);
    }
}

// A cubic that had a loss at `w_max` segments at 1 s and whose epoch starts
// at the first ACK of a packet sent after that (returned in `now`).
Cubic after_loss(std::uint64_t w_max, Duration rtt, Instant& now, const Options& o = no_hystart()) {
    Cubic cc(cc_params(), o);
    grow_to(cc, w_max, at(500ms));
    cc.on_congestion_event(loss_event(at(1s), at(900ms)));
    now = at(1s) + rtt;
    // Recovery ends with the ACK of a packet sent 1 ns after it began.
    cc.on_ack(ack(now + 1ns, kMds, at(1s) + 1ns, rtt));
    now += 1ns;
    REQUIRE(cc.epoch_started());
    REQUIRE(cc.epoch_start() == now);
    return cc;
}

}  // namespace

TEST_CASE("cubic: initial state, name and registry") {
    Cubic cc(cc_params());
    CHECK(cc.cwnd() == ndm::cc::initial_window(kMds));
    CHECK(cc.ssthresh() == UINT64_MAX);
    CHECK(cc.state() == "slow_start");
    CHECK(cc.name() == "cubic");
    CHECK_FALSE(cc.pacing_rate().has_value());
    CHECK(cc.beta() == 0.7);
    CHECK(cc.c() == 0.4);
    CHECK(cc.alpha_cubic() == doctest::Approx(3 * 0.3 / 1.7));
    CHECK(cc.fast_convergence());
    CHECK(cc.hystart_enabled());

    auto made = ndm::cc::make("cubic", cc_params());
    REQUIRE(made != nullptr);
    CHECK(made->name() == "cubic");
    bool listed = false;
    for (const auto& info : ndm::cc::list()) listed = listed || info.name == "cubic";
    CHECK(listed);
}

TEST_CASE("cubic: options are validated with clear messages") {
    Cubic cc(cc_params(), {{"beta", "0.5"}, {"c", "4"}, {"fast_convergence", "off"}, {"hystart", "OFF"}});
    CHECK(cc.beta() == 0.5);
    CHECK(cc.c() == 4);
    CHECK(cc.alpha_cubic() == doctest::Approx(1.0));  // 3·0.5/1.5
    CHECK_FALSE(cc.fast_convergence());
    CHECK_FALSE(cc.hystart_enabled());
    CHECK(Cubic(cc_params(), {{"beta", "0.9"}, {"c", "0.1"}}).beta() == 0.9);

    CHECK_THROWS_WITH_AS(ndm::cc::make("cubic", cc_params(), "beta=0.95"),
                         "congestion controller \"cubic\": option \"beta\" must be a number in "
                         "[0.5, 0.9], got \"0.95\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Cubic(cc_params(), {{"c", "0"}}),
                         "congestion controller \"cubic\": option \"c\" must be a number in "
                         "[0.1, 4], got \"0\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Cubic(cc_params(), {{"hystart", "maybe"}}),
                         "congestion controller \"cubic\": option \"hystart\" must be one of on, "
                         "off, true, false, 1, 0, got \"maybe\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Cubic(cc_params(), {{"fast_convergence", ""}}),
                         "congestion controller \"cubic\": option \"fast_convergence\" must be one "
                         "of on, off, true, false, 1, 0, got \"\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("cubic", cc_params(), "beta=0.7,bata=0.7"),
                         "congestion controller \"cubic\": unknown option \"bata\" (known: beta, "
                         "c, fast_convergence, hystart)",
                         std::invalid_argument);
    CHECK_THROWS_AS(Cubic(cc_params(0)), std::invalid_argument);
}

TEST_CASE("cubic: reduction by beta, K from W_max and beta (RFC 9438 §4.2, §4.6)") {
    struct Case {
        const char* beta;
        const char* c;
        double b;
        double cc;
    };
    for (const auto& k : {Case{"0.7", "0.4", 0.7, 0.4}, Case{"0.5", "0.4", 0.5, 0.4},
                          Case{"0.8", "1.5", 0.8, 1.5}}) {
        CAPTURE(k.beta);
        CAPTURE(k.c);
        Instant now;
        const auto cc = after_loss(1000, 100ms, now, no_hystart({{"beta", k.beta}, {"c", k.c}}));
        CHECK(cc.ssthresh() == static_cast<std::uint64_t>(std::round(1000 * kMds * k.b)));
        CHECK(cc.w_max() == 1000);
        CHECK(cc.cwnd_prior() == 1000);
        CHECK(cc.cwnd_epoch() == doctest::Approx(1000 * k.b));
        CHECK(cc.k() == doctest::Approx(std::cbrt(1000 * (1 - k.b) / k.cc)));
        // The curve starts at the reduced window and is flat at W_max at K.
        CHECK(cc.w_cubic(0) == doctest::Approx(1000 * k.b));
        CHECK(cc.w_cubic(cc.k()) == doctest::Approx(1000));
    }
    // 12000 · 0.7 rounds to 8400, not 8399.
    Cubic small(cc_params());
    small.on_congestion_event(loss_event(at(100ms), at(50ms)));
    CHECK(small.ssthresh() == 8400);
    CHECK(small.cwnd() == 8400);
    CHECK(small.state() == "recovery");
}

TEST_CASE("cubic: after a loss the window follows the closed form (RFC 9438 §4.2)") {
    // W_max = 1000 segments, RTT 100 ms: K = ∛(300/0.4) ≈ 9.09 s, far above
    // the Reno-friendly line.
    Instant now;
    Cubic cc = after_loss(1000, 100ms, now);
    const Instant epoch = cc.epoch_start();
    const double k = cc.k();
    REQUIRE(k == doctest::Approx(9.0856).epsilon(1e-4));

    double worst = 0;
    bool friendly = false;
    for (const double frac : {0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0}) {
        run(cc, now, 100ms, epoch + ndm::from_seconds(frac * k), [&](const Cubic& c) {
            const double t = seconds(now - epoch);
            worst = std::max(worst, std::abs(segments(c.cwnd()) - c.w_cubic(t)));
            friendly = friendly || c.reno_friendly();
        });
        CAPTURE(frac);
        const double t = seconds(now - epoch);
        CHECK(std::abs(segments(cc.cwnd()) - (0.4 * std::pow(t - k, 3) + 1000)) <= 1.0);
    }
    MESSAGE("largest distance to W_cubic(t) over the trajectory: ", worst, " segments");
    CHECK(worst <= 1.0);
    CHECK_FALSE(friendly);  // large window, long RTT: never Reno-friendly
    CHECK(cc.state() == "congestion_avoidance");
    CHECK(segments(cc.cwnd()) > 1250);  // convex region: well past W_max
}

TEST_CASE("cubic: growth is clamped to 1.5 cwnd per RTT and exact in bytes") {
    // Far into the convex region W_cubic(t + RTT) exceeds 1.5·cwnd: the target
    // is clamped, so one window of ACKs grows cwnd by (cwnd/2)·cwnd/cwnd.
    Instant now;
    Cubic cc = after_loss(100, 100ms, now);
    // K ≈ 4.2 s; at t = 60 s W_cubic is ~ 0.4·56³ segments, far above.
    now = cc.epoch_start() + 60s;
    const auto w = cc.cwnd();
    // One ACK of 700 bytes: growth (w/2)·700/w, about 350 bytes.
    cc.on_ack(ack(now, 700, now - 100ms));
    CHECK(cc.cwnd() == w + (w / 2) * 700 / w);
    CHECK(cc.cwnd() - w >= 349);
    // A whole window acknowledged one byte at a time: each byte is worth
    // half a byte of growth, which only the carried remainder preserves
    // (truncating per ACK would give nothing). Same as one window-sized ACK.
    Cubic a = after_loss(100, 100ms, now);
    Cubic b = after_loss(100, 100ms, now);
    now = a.epoch_start() + 60s;
    const auto wa = a.cwnd();
    for (std::uint64_t i = 0; i < wa; ++i) a.on_ack(ack(now, 1, now - 100ms));
    b.on_ack(ack(now, wa, now - 100ms));
    CHECK(b.cwnd() == wa + wa / 2);
    CHECK(a.cwnd() <= wa + wa / 2);
    CHECK(a.cwnd() + 2 >= wa + wa / 2);
}

TEST_CASE("cubic: Reno-friendly region (RFC 9438 §4.3)") {
    SUBCASE("small window, short RTT: W_est > W_cubic, cwnd follows W_est") {
        // W_max = 20 segments, RTT 2 ms: K ≈ 2.47 s, while W_est grows by
        // α ≈ 0.53 segments per 2 ms.
        Instant now;
        Cubic cc = after_loss(20, 2ms, now);
        const Instant epoch = cc.epoch_start();
        REQUIRE(cc.alpha() == doctest::Approx(cc.alpha_cubic()));
        run(cc, now, 2ms, epoch + 20ms);
        CHECK(cc.reno_friendly());
        CHECK(cc.w_est() > cc.w_cubic(seconds(now - epoch)));
        CHECK(segments(cc.cwnd()) == doctest::Approx(cc.w_est()).epsilon(0.01));
        // ~10 RTTs at α_cubic ≈ 0.53: W_est ≈ 14 + 5.3.
        CHECK(cc.w_est() == doctest::Approx(14 + 10 * cc.alpha_cubic()).epsilon(0.03));
        CHECK(cc.alpha() < 1);
        // Once W_est reaches cwnd_prior (20), α becomes 1: one segment per RTT.
        run(cc, now, 2ms, epoch + 40ms);
        CHECK(cc.w_est() >= cc.cwnd_prior());
        CHECK(cc.alpha() == 1.0);
        const double before = cc.w_est();
        const Instant t0 = now;
        run(cc, now, 2ms, t0 + 20ms);
        CHECK(cc.w_est() - before == doctest::Approx(10).epsilon(0.05));
        CHECK(cc.reno_friendly());
        CHECK(segments(cc.cwnd()) > cc.w_cubic(seconds(now - epoch)));
    }
    SUBCASE("large window, long RTT: the cubic curve is above W_est") {
        Instant now;
        Cubic cc = after_loss(1000, 200ms, now);
        run(cc, now, 200ms, cc.epoch_start() + 5s);
        CHECK_FALSE(cc.reno_friendly());
        CHECK(cc.w_est() < cc.w_cubic(seconds(now - cc.epoch_start())));
        CHECK(cc.alpha() < 1);
    }
}

TEST_CASE("cubic: fast convergence (RFC 9438 §4.7)") {
    for (const bool fc : {true, false}) {
        CAPTURE(fc);
        Cubic cc(cc_params(), no_hystart({{"fast_convergence", fc ? "on" : "off"}}));
        grow_to(cc, 100, at(500ms));
        cc.on_congestion_event(loss_event(at(1s), at(900ms)));
        CHECK(cc.w_max() == 100);
        REQUIRE(cc.cwnd() == 70 * kMds);
        // The next loss (a new period) arrives at 70 < W_max = 100 segments.
        cc.on_congestion_event(loss_event(at(2s), at(1500ms)));
        CHECK(cc.cwnd_prior() == 70);
        if (fc) {
            CHECK(cc.w_max() == doctest::Approx(70 * 1.7 / 2));  // released bandwidth
        } else {
            CHECK(cc.w_max() == 70);
        }
        CHECK(cc.cwnd() == 49 * kMds);
        // At or above the previous W_max, W_max is simply cwnd.
        Instant now;
        Cubic up = after_loss(50, 10ms, now, no_hystart({{"fast_convergence", fc ? "on" : "off"}}));
        run(up, now, 10ms, up.epoch_start() + 5s);  // K ≈ 3.35 s: past W_max
        const double w = segments(up.cwnd());
        REQUIRE(w > 55);
        up.on_congestion_event(loss_event(now + 1ms, now - 1ms));
        CHECK(up.w_max() == w);
        CHECK(up.cwnd_prior() == w);
    }
}

TEST_CASE("cubic: no growth while app-limited, and the epoch shifts (RFC 9438 §5.8)") {
    Instant now;
    Cubic a = after_loss(1000, 100ms, now);
    Instant now_b = now;
    Cubic b = after_loss(1000, 100ms, now_b);
    REQUIRE(now == now_b);
    run(a, now, 100ms, a.epoch_start() + 2s);
    run(b, now_b, 100ms, b.epoch_start() + 2s);
    REQUIRE(a.cwnd() == b.cwnd());
    const Instant epoch = a.epoch_start();
    const auto w = a.cwnd();

    // `a` is app-limited for 3 s of ACKs: no growth at all.
    const Instant first_limited = now + 10ms;
    for (Instant t = first_limited; t < first_limited + 3s; t += 10ms) {
        a.on_ack(ack(t, kMds, t - 100ms, 100ms, true));
        CHECK(a.cwnd() == w);
    }
    CHECK(a.epoch_start() == epoch);  // shifted when growth resumes
    // Growth resumes 3 s + 10 ms after the pause began.
    const Instant resume = first_limited + 3s + 10ms;
    a.on_ack(ack(resume, kMds, resume - 100ms));
    CHECK(a.epoch_start() == epoch + (resume - first_limited));
    // `b` never paused: fed the same ACK at the time without the pause, it
    // reaches exactly the same window, and both keep agreeing.
    const Instant resume_b = resume - (resume - first_limited);
    b.on_ack(ack(resume_b, kMds, resume_b - 100ms));
    CHECK(a.cwnd() == b.cwnd());
    Instant ta = resume;
    Instant tb = resume_b;
    run(a, ta, 100ms, resume + 3s);
    run(b, tb, 100ms, resume_b + 3s);
    CHECK(a.cwnd() == b.cwnd());

}

TEST_CASE("cubic: no growth while app-limited in slow start") {
    Cubic s(cc_params());
    s.on_ack(ack(at(100ms), 12000, at(0ms), 100ms, true));
    CHECK(s.cwnd() == 12000);
    s.on_ack(ack(at(100ms), 1200, at(0ms)));
    CHECK(s.cwnd() == 13200);
}

TEST_CASE("cubic: idle restart shifts the epoch by the idle time") {
    Instant now;
    Cubic cc = after_loss(1000, 100ms, now);
    const Instant e = cc.epoch_start();
    const Instant last = e + 500ms;
    cc.on_ack(ack(last, kMds, last - 100ms));
    cc.on_idle_restart(last + 4s);
    CHECK(cc.epoch_start() == e + 4s);
    // An app-limited pause already running covers the idle time instead.
    cc.on_ack(ack(last + 4s + 100ms, kMds, last + 4s, 100ms, true));
    cc.on_idle_restart(last + 10s);
    CHECK(cc.epoch_start() == e + 4s);
    cc.on_ack(ack(last + 10s + 100ms, kMds, last + 10s));
    CHECK(cc.epoch_start() == e + 4s + (10s - 4s));
}

TEST_CASE("cubic: one reduction per recovery period") {
    Cubic cc(cc_params(), no_hystart());
    grow_to(cc, 100, at(500ms));
    cc.on_congestion_event(loss_event(at(1s), at(900ms)));
    CHECK(cc.cwnd() == 70 * kMds);
    CHECK(cc.state() == "recovery");
    // Losses of packets sent before the period began: same period.
    cc.on_congestion_event(loss_event(at(1010ms), at(950ms)));
    cc.on_congestion_event(loss_event(at(1020ms), at(1s)));
    CHECK(cc.cwnd() == 70 * kMds);
    CHECK(cc.w_max() == 100);
    // ACKs of packets sent before the period: no growth, recovery continues.
    cc.on_ack(ack(at(1050ms), 10 * kMds, at(990ms)));
    CHECK(cc.cwnd() == 70 * kMds);
    CHECK(cc.state() == "recovery");
    CHECK_FALSE(cc.epoch_started());
    // A packet sent after the start is acknowledged: congestion avoidance.
    cc.on_ack(ack(at(1100ms), kMds, at(1001ms)));
    CHECK(cc.state() == "congestion_avoidance");
    CHECK(cc.epoch_started());
    // A late loss of an old packet still belongs to the old period.
    cc.on_congestion_event(loss_event(at(1150ms), at(999ms)));
    CHECK(cc.w_max() == 100);
    CHECK(cc.state() == "congestion_avoidance");
    // A loss of a packet sent after it: a new reduction.
    cc.on_congestion_event(loss_event(at(1200ms), at(1101ms)));
    CHECK(cc.state() == "recovery");
    CHECK(cc.cwnd() < 70 * kMds);
}

TEST_CASE("cubic: the minimum window is respected") {
    Cubic cc(cc_params(), no_hystart());
    for (int i = 1; i <= 8; ++i) {
        const auto now = at(std::chrono::milliseconds(100 * i));
        cc.on_congestion_event(loss_event(now, now - 1ms));
        CHECK(cc.cwnd() >= 2 * kMds);
        CHECK(cc.ssthresh() >= 2 * kMds);
    }
    CHECK(cc.cwnd() == 2 * kMds);
}

TEST_CASE("cubic: persistent congestion collapses the window and resets the epoch") {
    Instant now;
    Cubic cc = after_loss(100, 100ms, now);
    run(cc, now, 100ms, now + 2s);
    REQUIRE(cc.epoch_started());
    const auto w = cc.cwnd();
    cc.on_congestion_event(loss_event(now + 1s, now + 500ms, true));
    CHECK(cc.cwnd() == 2 * kMds);
    CHECK(cc.ssthresh() == static_cast<std::uint64_t>(std::round(static_cast<double>(w) * 0.7)));
    CHECK(cc.state() == "slow_start");
    CHECK_FALSE(cc.epoch_started());
    CHECK(cc.recovery().start() == Instant::min());
    // Plain slow start (HyStart++ is for the first slow start only) back to
    // ssthresh, then an epoch with W_max at that window and K = 0 (§4.8).
    now += 2s;
    cc.on_ack(ack(now, cc.ssthresh() - cc.cwnd(), now - 100ms));
    CHECK(cc.cwnd() == cc.ssthresh());
    CHECK(cc.state() == "congestion_avoidance");
    cc.on_ack(ack(now + 1ms, kMds, now - 99ms));
    CHECK(cc.epoch_started());
    CHECK(cc.k() == 0);
    CHECK(cc.w_max() == doctest::Approx(segments(cc.ssthresh())));
    CHECK(cc.w_est() >= cc.cwnd_epoch());

    // Persistent congestion inside an existing period: no second ssthresh
    // reduction, but the collapse.
    Cubic r(cc_params(), no_hystart());
    r.on_congestion_event(loss_event(at(100ms), at(50ms)));
    r.on_congestion_event(loss_event(at(110ms), at(60ms), true));
    CHECK(r.cwnd() == 2 * kMds);
    CHECK(r.ssthresh() == 8400);
}

TEST_CASE("cubic: spurious congestion undo restores everything (RFC 9438 §4.9)") {
    SUBCASE("in congestion avoidance") {
        Instant now;
        Cubic cc = after_loss(1000, 100ms, now);
        run(cc, now, 100ms, now + 3s);
        const auto cwnd = cc.cwnd();
        const auto ssthresh = cc.ssthresh();
        const double w_max = cc.w_max();
        const double k = cc.k();
        const double prior = cc.cwnd_prior();
        const double w_est = cc.w_est();
        const Instant epoch = cc.epoch_start();

        cc.on_congestion_event(loss_event(now + 10ms, now - 50ms));
        REQUIRE(cc.cwnd() < cwnd);
        REQUIRE(cc.w_max() != w_max);
        REQUIRE_FALSE(cc.epoch_started());
        cc.on_spurious_congestion({now + 20ms});
        CHECK(cc.cwnd() == cwnd);
        CHECK(cc.ssthresh() == ssthresh);
        CHECK(cc.w_max() == w_max);
        CHECK(cc.k() == k);
        CHECK(cc.cwnd_prior() == prior);
        CHECK(cc.w_est() == w_est);
        CHECK(cc.epoch_started());
        CHECK(cc.epoch_start() == epoch);
        CHECK(cc.state() == "congestion_avoidance");
        // Growth resumes on the old curve at once: the ACK of a packet sent
        // before the (forgotten) recovery period grows the window.
        cc.on_ack(ack(now + 30ms, kMds, now - 70ms));
        CHECK(cc.cwnd() > cwnd);
        // A second undo has nothing to restore.
        const auto after = cc.cwnd();
        cc.on_spurious_congestion({now + 40ms});
        CHECK(cc.cwnd() == after);
    }
    SUBCASE("in slow start, HyStart++ included") {
        Cubic cc(cc_params());
        cc.on_congestion_event(loss_event(at(100ms), at(50ms)));
        REQUIRE(cc.hystart().done());
        REQUIRE(cc.cwnd() == 8400);
        cc.on_spurious_congestion({at(120ms)});
        CHECK(cc.cwnd() == 12000);
        CHECK(cc.ssthresh() == UINT64_MAX);
        CHECK(cc.w_max() == 0);
        CHECK(cc.state() == "slow_start");
        CHECK_FALSE(cc.hystart().done());
        cc.on_ack(ack(at(130ms), 1200, at(90ms)));
        CHECK(cc.cwnd() == 13200);
    }
    SUBCASE("without a reduction it does nothing") {
        Cubic cc(cc_params());
        cc.on_spurious_congestion({at(10ms)});
        CHECK(cc.cwnd() == 12000);
        CHECK(cc.ssthresh() == UINT64_MAX);
    }
}

TEST_CASE("cubic: bulk transfer in virtual time, 50 Mbit/s, 20 ms, 1% loss") {
    ndm::sim::SimpleLinkConfig link;
    link.delay = 20ms;
    link.rate_bps = 50e6;
    link.loss = 0.01;
    const auto spec = ndm::test::lossy_transfer("cubic", "cubic", link, 8u << 20, 41);
    const auto r = ndm::sim::run_transfer(spec);
    INFO("failure: ", r.failure, "; delivered ", r.bytes_delivered);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.bytes_delivered == spec.bytes);
    CHECK(r.client_stats.congestion_events > 0);
    MESSAGE("cubic: virtual ", ndm::to_seconds(r.duration), " s, goodput ",
            static_cast<double>(spec.bytes) * 8 / ndm::to_seconds(r.duration) / 1e6,
            " Mbit/s, lost ", r.client_stats.packets_lost, ", congestion events ",
            r.client_stats.congestion_events, ", final cwnd ", r.client_stats.cwnd);
}
