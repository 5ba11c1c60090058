// The `ndm` controller's queue rules (src/cc/ndm/queue_response): what stands
// in for the loss response ndm withholds while it forgives losses. Each rule
// on typed round summaries, the jitter that raises their thresholds, and
// bbr's short-term bound that the cruise rule lowers.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#include "cc/bbr.hpp"
#include "cc/ndm/queue_response.hpp"
#include "cc_test_util.hpp"

using namespace std::chrono_literals;
namespace nn = ndm::cc::ndm;
using ndm::test::at;
using nn::QueueAction;
using nn::QueueRound;

namespace {

// One round trip of 50 ms per call, each with the standing queue given.
struct Rounds {
    nn::QueueResponse rule;
    ndm::Instant now = at(0ms);

    nn::QueueDecision round(float standing, bool forgiving = true, bool cruising = true, bool stalled = false) {
        now += 50ms;
        QueueRound r;
        r.now = now;
        r.has_queue = true;
        r.standing = standing;
        r.forgiving = forgiving;
        r.cruising = cruising;
        r.stalled_probe = stalled;
        return rule.on_round_end(r);
    }
};

}  // namespace

TEST_CASE("ndm queue rules: a queue building in CRUISE above its floor cuts the short-term bound") {
    Rounds r;
    for (int i = 0; i < 10; ++i) CHECK(r.round(0.0F).action == QueueAction::none);  // the floor: no queue
    // A queue building by 0.03 min_rtt a round: smooth, not jitter.
    nn::QueueDecision d;
    float q = 0;
    int rounds = 0;
    while (d.action == QueueAction::none && rounds < 40) {
        q += 0.03F;
        d = r.round(q);
        ++rounds;
    }
    REQUIRE(d.action == QueueAction::cut_short_term);
    // Raised past max(0.1, 5 × the mean change): about 0.15 min_rtt here.
    CHECK(q >= 0.1F);
    CHECK(q <= 0.25F);
    CHECK(d.factor == doctest::Approx(1.0 / (1.0 + q)).epsilon(1e-4));
    CHECK(r.rule.cuts() == 1);
}

TEST_CASE("ndm queue rules: nothing while no loss is forgiven (ndm is bbr then)") {
    Rounds r;
    for (int i = 0; i < 10; ++i) (void)r.round(0.0F, false);
    for (float q = 0.05F; q < 1.5F; q += 0.05F) {
        CHECK(r.round(q, false, true, false).action == QueueAction::none);
        CHECK(r.round(q, false, false, true).action == QueueAction::none);
    }
    CHECK(r.rule.cuts() == 0);
    CHECK(r.rule.probes_ended() == 0);
    CHECK(r.rule.probes_stopped() == 0);
}

TEST_CASE("ndm queue rules: a cut only in CRUISE") {
    Rounds r;
    for (int i = 0; i < 10; ++i) (void)r.round(0.0F);
    float q = 0;
    for (int i = 0; i < 30; ++i) {
        q += 0.03F;
        CHECK(r.round(q, true, false).action == QueueAction::none);  // DOWN, REFILL, UP, ProbeRTT: no cut
    }
}

TEST_CASE("ndm queue rules: order-preserving jitter never arms the cruise rule and raises the probe's threshold") {
    // A round's smallest RTT that jumps between 0.3 and 0.7 min_rtt and is
    // never the path's floor: a mean change of 0.4 a round, so a probe
    // threshold of 5 × 0.4 = 2 min_rtt, and no empty round to arm the cruise rule.
    Rounds r;
    for (int i = 0; i < 30; ++i) (void)r.round(i % 2 == 0 ? 0.3F : 0.7F, true, false);
    CHECK(r.rule.jitter() > 0.35F);
    r.rule.on_probe_start(0.3F);
    for (int i = 0; i < 60; ++i) {
        const float q = i % 2 == 0 ? 0.7F : 0.3F;
        CHECK(r.round(q).action == QueueAction::none);
        // No CE-like end; the stall rule ends the probe without a signal.
        CHECK(r.round(q, true, false, true).action == QueueAction::stop_probe);
    }
    CHECK(r.rule.probes_ended() == 0);
    CHECK(r.rule.floor() >= 0.29F);
}

TEST_CASE("ndm queue rules: a probe that found a queue instead of bandwidth ends") {
    Rounds r;
    for (int i = 0; i < 10; ++i) (void)r.round(0.02F, true, false);
    r.rule.on_probe_start(0.02F);
    // A rise of 0.04 < 0.1: no queue found, but no bandwidth either (the stall rule).
    CHECK(r.round(0.06F, true, false, true).action == QueueAction::stop_probe);
    CHECK(r.round(0.30F, true, false, false).action == QueueAction::none);  // the rate grew: a pipe, not a queue
    const auto d = r.round(0.30F, true, false, true);
    CHECK(d.action == QueueAction::end_probe);
    CHECK(r.rule.probes_ended() == 1);
}

TEST_CASE("ndm queue rules: a probe that found no bandwidth in a round stops, whatever the queue") {
    Rounds r;
    for (int i = 0; i < 10; ++i) (void)r.round(0.0F, true, false);
    r.rule.on_probe_start(0.0F);
    CHECK(r.round(0.0F, true, false, false).action == QueueAction::none);  // the rate grew 10 %: probe on
    CHECK(r.round(0.0F, false, false, true).action == QueueAction::none);  // nothing forgiven: bbr's own exits
    CHECK(r.round(0.0F, true, false, true).action == QueueAction::stop_probe);
    CHECK(r.rule.probes_stopped() == 1);
    // A queue found as well: the probe rule's CE-like end comes first.
    CHECK(r.round(0.5F, true, false, true).action == QueueAction::end_probe);
    CHECK(r.rule.probes_stopped() == 1);

    Rounds off;
    off.rule = nn::QueueResponse(nn::QueueResponse::kDefaultProbe, nn::QueueResponse::kDefaultCruise,
                                 nn::QueueResponse::kDefaultNoise, false);
    CHECK_FALSE(off.rule.stall());
    for (int i = 0; i < 10; ++i) CHECK(off.round(0.0F, true, false, true).action == QueueAction::none);
}

TEST_CASE("ndm queue rules: the floor forgets after 5 s, and a zero threshold turns a rule off") {
    Rounds r;
    (void)r.round(0.0F, true, false);
    for (int i = 0; i < 120; ++i) (void)r.round(0.5F, true, false);  // 6 s at 0.5: the floor is 0.5 now
    CHECK(r.rule.floor() == doctest::Approx(0.5F));
    CHECK(r.round(0.5F).action == QueueAction::none);

    Rounds off;
    off.rule = nn::QueueResponse(0.0F, 0.0F, nn::QueueResponse::kDefaultNoise, false);
    for (int i = 0; i < 10; ++i) (void)off.round(0.0F);
    off.rule.on_probe_start(0.0F);
    for (float q = 0.05F; q < 1.0F; q += 0.05F) {
        CHECK(off.round(q).action == QueueAction::none);
        CHECK(off.round(q, true, false, true).action == QueueAction::none);
    }
}

TEST_CASE("bbr: cut_short_term lowers the short-term bound and pacing, and never raises them") {
    ndm::cc::Bbr bbr(ndm::test::cc_params());
    // Without a delivery-rate sample there is nothing to cut to.
    bbr.cut_short_term(0.5);
    CHECK(std::isinf(bbr.model().bw_shortterm));
    ndm::Instant now = at(0ms);
    std::uint64_t delivered = 0;
    for (int i = 0; i < 200; ++i) {
        now += 5ms;
        delivered += ndm::test::kMds;
        auto ev = ndm::test::ack_event(now, ndm::test::kMds, now - 50ms, 50ms);
        ev.rate.valid = true;
        ev.rate.delivery_rate = 1e6;
        ev.rate.delivered = 10 * ndm::test::kMds;
        ev.rate.prior_delivered = delivered > 10 * ndm::test::kMds ? delivered - 10 * ndm::test::kMds : 0;
        ev.rate.total_delivered = delivered;
        ev.rate.rtt = 50ms;
        ev.rate.newly_acked = ndm::test::kMds;
        bbr.on_ack(ev);
    }
    const double pacing = *bbr.pacing_rate();
    bbr.cut_short_term(0.5);
    CHECK(bbr.model().bw_shortterm == doctest::Approx(0.5e6));
    CHECK(*bbr.pacing_rate() < pacing);
    const double cut = bbr.model().bw_shortterm;
    bbr.cut_short_term(2.0);
    CHECK(bbr.model().bw_shortterm == cut);
}

TEST_CASE("bbr: stop_probe ends ProbeBW_UP as its full-bandwidth exit would, and nothing else") {
    ndm::cc::Bbr bbr(ndm::test::cc_params());
    ndm::Instant now = at(0ms);
    std::uint64_t delivered = 0;
    // A steady 1 MB/s at 50 ms: Startup, Drain, then the ProbeBW cycle.
    bool stopped_in_cruise = false;
    for (int i = 0; i < 40000 && bbr.state_id() != ndm::cc::Bbr::State::probe_bw_up; ++i) {
        now += 5ms;
        delivered += ndm::test::kMds;
        auto ev = ndm::test::ack_event(now, ndm::test::kMds, now - 50ms, 50ms);
        ev.rate.valid = true;
        ev.rate.delivery_rate = 1e6;
        ev.rate.delivered = 10 * ndm::test::kMds;
        ev.rate.prior_delivered = delivered > 10 * ndm::test::kMds ? delivered - 10 * ndm::test::kMds : 0;
        ev.rate.total_delivered = delivered;
        ev.rate.rtt = 50ms;
        ev.rate.newly_acked = ndm::test::kMds;
        bbr.on_ack(ev);
        if (bbr.state_id() == ndm::cc::Bbr::State::probe_bw_cruise && !stopped_in_cruise) {
            const auto before = bbr.model();
            bbr.stop_probe(now);  // not probing: nothing
            CHECK(bbr.state_id() == ndm::cc::Bbr::State::probe_bw_cruise);
            CHECK(bbr.model().cycle_stamp == before.cycle_stamp);
            stopped_in_cruise = true;
        }
    }
    CHECK(stopped_in_cruise);
    REQUIRE(bbr.state_id() == ndm::cc::Bbr::State::probe_bw_up);
    const auto up = bbr.model();
    bbr.stop_probe(now);
    const auto down = bbr.model();
    CHECK(down.state == ndm::cc::Bbr::State::probe_bw_down);
    CHECK(down.pacing_gain == doctest::Approx(0.9));
    CHECK(down.ack_phase == ndm::cc::Bbr::AckPhase::probe_stopping);
    CHECK_FALSE(down.prev_probe_too_high);
    // No congestion signal: the models are as they were.
    CHECK(down.inflight_longterm == up.inflight_longterm);
    CHECK(down.inflight_shortterm == up.inflight_shortterm);
    CHECK(down.max_bw == up.max_bw);
    CHECK(down.cycle_stamp == now);
}
