// The `ndm` controller's loss discrimination (src/cc/ndm/loss_discriminator,
// forgiven_ledger, ndm_bbr): each safety rule and the model's verdict on
// typed evidence, the forgiven-bytes ledger against a brute-force count, and
// the controller's routing of events to the BBRv3 it embeds (a forgiven loss
// never reaches the model; a congestive one does, as bbr would see it).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "cc/bbr.hpp"
#include "cc/ndm/forgiven_ledger.hpp"
#include "cc/ndm/loss_discriminator.hpp"
#include "cc/ndm/ndm_bbr.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"
#include "util/rng.hpp"

using namespace std::chrono_literals;
namespace nn = ndm::cc::ndm;
using ndm::Duration;
using ndm::test::at;
using ndm::test::cc_params;
using ndm::test::kMds;
using nn::LossEvidence;
using nn::Verdict;

namespace {

LossEvidence random_looking() {
    LossEvidence e;
    e.packets_lost = 1;
    e.p = 0.1F;
    e.standing_queue = 0.02F;
    return e;
}

// A discriminator whose cap window holds `packets` acknowledged packets.
nn::LossDiscriminator with_history(std::uint64_t packets, float cap = nn::LossDiscriminator::kDefaultCap) {
    nn::LossDiscriminator d(cap, nn::LossDiscriminator::kDefaultQueue);
    d.on_acked(packets);
    return d;
}

}  // namespace

TEST_CASE("ndm discriminator: without queue evidence and with a low P a loss is random") {
    auto d = with_history(100);
    CHECK(d.judge(random_looking()) == Verdict::random);
    CHECK(d.forgiven_share() == doctest::Approx(1.0 / 101));
}

TEST_CASE("ndm discriminator: each safety rule overrides a random-looking model") {
    SUBCASE("ECN CE is always congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.ecn_ce = true;
        e.packets_lost = 0;
        CHECK(d.judge(e) == Verdict::ecn);
    }
    SUBCASE("persistent congestion is always congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.persistent = true;
        CHECK(d.judge(e) == Verdict::persistent);
        CHECK(d.forgiven_share() == 0);
    }
    SUBCASE("a loss after an ACK silence longer than a PTO is congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.after_silence = true;
        CHECK(d.judge(e) == Verdict::timeout);
    }
    SUBCASE("a standing queue of at least `queue` x min_rtt is congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.standing_queue = nn::LossDiscriminator::kDefaultQueue;
        CHECK(d.judge(e) == Verdict::queue);
        e.standing_queue = 0.9F * nn::LossDiscriminator::kDefaultQueue;
        CHECK(d.judge(e) == Verdict::random);
    }
    SUBCASE("a bandwidth probe that found no bandwidth is congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.saturated_probe = true;
        CHECK(d.judge(e) == Verdict::probe);
    }
    SUBCASE("the model's P at or above the threshold (0.5) is congestive") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.p = nn::LossDiscriminator::kDefaultThreshold;
        CHECK(d.judge(e) == Verdict::model);
        e.p = 0.499F;
        CHECK(d.judge(e) == Verdict::random);
        nn::LossDiscriminator sure(0.15F, 1.5F, 0.7F);
        sure.on_acked(100);
        e.p = 0.69F;
        CHECK(sure.judge(e) == Verdict::random);
        e.p = 0.7F;
        CHECK(sure.judge(e) == Verdict::model);
    }
    SUBCASE("the rules are checked in order: ECN, persistent, silence, cap, queue, probe, model") {
        auto d = with_history(100);
        LossEvidence e = random_looking();
        e.p = 1;
        e.saturated_probe = true;
        e.standing_queue = 5;
        e.after_silence = true;
        e.persistent = true;
        CHECK(d.judge(e) == Verdict::persistent);
        e.persistent = false;
        CHECK(d.judge(e) == Verdict::timeout);
        e.after_silence = false;
        CHECK(d.judge(e) == Verdict::queue);
        e.standing_queue = 0;
        CHECK(d.judge(e) == Verdict::probe);
        e.saturated_probe = false;
        CHECK(d.judge(e) == Verdict::model);
    }
}

TEST_CASE("ndm discriminator: a saturated probe's losses are congestive only beyond the path's random loss") {
    // Baseline rounds (ProbeBW CRUISE/REFILL) of 1000 packets with 20 lost:
    // a random-loss rate of 2 %.
    nn::LossDiscriminator d;
    LossEvidence quiet = random_looking();
    quiet.packets_lost = 20;
    for (int r = 0; r < 30; ++r) {
        d.on_acked(980);
        CHECK(d.judge(quiet) == Verdict::random);
        d.on_round_end(true);
    }
    CHECK(d.baseline_loss() == doctest::Approx(0.02).epsilon(0.001));
    // A probing round of 1000 packets: 20 e + 3 sqrt(e) = 33.4 losses are
    // what 2 % explains; the probe's rule holds from the 34th.
    d.on_acked(966);
    LossEvidence probe = random_looking();
    probe.saturated_probe = true;
    probe.packets_lost = 30;
    CHECK(d.judge(probe) == Verdict::random);
    probe.packets_lost = 4;
    CHECK(d.judge(probe) == Verdict::probe);
    // Rounds that probe do not move the baseline.
    d.on_round_end(false);
    CHECK(d.baseline_loss() == doctest::Approx(0.02).epsilon(0.001));
    // Without random loss on the path, any loss of a saturated probe is congestive.
    nn::LossDiscriminator clean;
    for (int r = 0; r < 4; ++r) {
        clean.on_acked(1000);
        clean.on_round_end(true);
    }
    clean.on_acked(1000);
    CHECK(clean.baseline_loss() == 0);
    probe.packets_lost = 1;
    CHECK(clean.judge(probe) == Verdict::probe);
}

TEST_CASE("ndm discriminator: the forgiven share of packets is capped (15 % by default)") {
    // 100 packets acknowledged: forgiving single losses stops when the
    // forgiven share would pass 15 %.
    auto d = with_history(100);
    int forgiven = 0;
    Verdict v = Verdict::random;
    for (int i = 0; i < 40 && v == Verdict::random; ++i) {
        v = d.judge(random_looking());
        if (v == Verdict::random) ++forgiven;
    }
    CHECK(v == Verdict::cap);
    // k forgiven of 100 + k + 1 packets stays <= 15 %: k = 17 (17/118 = 14.4 %, 18/119 = 15.1 %).
    CHECK(forgiven == 17);
    CHECK(d.forgiven_share() <= 0.15F);
    // A capped loss still counts as a packet of the window; new rounds of
    // clean deliveries make room again.
    for (std::size_t r = 0; r < nn::LossDiscriminator::kCapRounds; ++r) {
        d.on_round_end();
        d.on_acked(100);
    }
    d.on_round_end();
    CHECK(d.forgiven_share() == 0);
    CHECK(d.judge(random_looking()) == Verdict::random);
    // A burst larger than the cap of the window is congestive at once.
    LossEvidence burst = random_looking();
    burst.packets_lost = 200;
    CHECK(d.judge(burst) == Verdict::cap);
}

TEST_CASE("ndm discriminator: an empty window forgives nothing") {
    nn::LossDiscriminator d;
    CHECK(d.judge(random_looking()) == Verdict::cap);
}

TEST_CASE("ndm forgiven ledger: counts since a send lose exactly the forgiven bytes since then") {
    // Random loss events, some forgiven, and queries at random points in the
    // past against a brute-force history.
    nn::ForgivenLedger ledger;
    struct Point {
        std::uint64_t lost, forgiven;
    };
    std::vector<Point> history{{0, 0}};  // after each event
    std::uint64_t rng = 7;
    for (int event = 0; event < 300; ++event) {
        const std::uint64_t packets = 1 + ndm::util::splitmix64_next(rng) % 4;
        for (std::uint64_t i = 0; i < packets; ++i) ledger.on_lost(kMds);
        const bool forgive = ndm::util::splitmix64_next(rng) % 3 != 0;
        ledger.close_event(forgive ? packets * kMds : 0);
        history.push_back({ledger.lost(), ledger.forgiven()});
        // A packet sent after event j: lost since = lost now - lost after j.
        const std::size_t n = history.size();
        const std::size_t back = ndm::util::splitmix64_next(rng) % std::min<std::size_t>(n, 80);
        const Point then = history[n - 1 - back];
        const std::uint64_t since = ledger.lost() - then.lost;
        const std::uint64_t expect_off = ledger.forgiven() - then.forgiven;
        CAPTURE(event);
        CAPTURE(back);
        if (back < nn::ForgivenLedger::kRecords) {
            CHECK(ledger.congestive(since) == since - expect_off);
        } else {
            // Older than the ring: never more taken off than is true.
            CHECK(ledger.congestive(since) >= since - expect_off);
        }
    }
    CHECK(ledger.congestive(0) == 0);
}

namespace {

// A steady path for the controller: 10 packets an RTT of 50 ms (+ q),
// with rate samples at 2.4 Mbit/s.
// Every event goes to the ndm controller and to a plain bbr beside it.
struct Feed {
    nn::NdmBbr cc{cc_params()};
    ndm::cc::Bbr bbr{cc_params()};
    ndm::Instant now = at(0ms);
    std::uint64_t pn = 0, delivered = 0, lost_total = 0;

    void ack_round(Duration rtt, std::uint64_t packets = 10) {
        for (std::uint64_t i = 0; i < packets; ++i) {
            ndm::cc::PacketSent s;
            s.time = now;
            s.packet_number = pn++;
            s.bytes = kMds;
            s.bytes_in_flight = kMds;
            cc.on_packet_sent(s);
            bbr.on_packet_sent(s);
        }
        const Duration step = rtt / static_cast<int>(packets);
        for (std::uint64_t i = 0; i < packets; ++i) {
            now += step;
            delivered += kMds;
            auto ev = ndm::test::ack_event(now, kMds, now - rtt, rtt);
            ev.min_rtt = 50ms;
            ev.smoothed_rtt = rtt;
            ev.rttvar = 2ms;
            ev.rate.valid = true;
            ev.rate.delivery_rate = 10.0 * kMds / 0.05;
            ev.rate.delivered = 10 * kMds;
            ev.rate.prior_delivered = delivered - 10 * kMds;
            ev.rate.total_delivered = delivered;
            ev.rate.rtt = rtt;
            ev.rate.tx_in_flight = 10 * kMds;
            ev.rate.newly_acked = kMds;
            ev.bytes_in_flight = 9 * kMds;
            cc.on_ack(ev);
            bbr.on_ack(ev);
        }
    }
    // One lost packet (sent at tx_in_flight 10 packets, 3 packets lost since
    // its send: above bbr's 2 % threshold) and its congestion event.
    void lose(std::uint64_t packets = 1, bool persistent = false) {
        for (std::uint64_t i = 0; i < packets; ++i) {
            ndm::cc::PacketLost l;
            l.now = now;
            l.packet_number = pn - 5 + i;
            l.bytes = kMds;
            l.time_sent = now - 60ms;
            l.tx_in_flight = 10 * kMds;
            l.lost = 3 * kMds;
            cc.on_packet_lost(l);
            bbr.on_packet_lost(l);
        }
        lost_total += packets;
        auto ev = ndm::test::loss_event(now, now - 60ms, persistent, packets);
        ev.bytes_in_flight = 5 * kMds;
        cc.on_congestion_event(ev);
        bbr.on_congestion_event(ev);
    }
};

std::uint32_t count(const nn::NdmBbr& cc, Verdict v) { return cc.counters()[static_cast<std::size_t>(v)]; }

}  // namespace

TEST_CASE("ndm controller: a forgiven loss never reaches bbr's model") {
    Feed f;
    for (int r = 0; r < 30; ++r) f.ack_round(50ms);  // no queue: q = 0
    const auto before = f.cc.bbr().model();
    const auto cwnd = f.cc.cwnd();
    f.lose();
    CHECK(count(f.cc, Verdict::random) == 1);
    const auto after = f.cc.bbr().model();
    CHECK(after.state == before.state);
    CHECK(after.inflight_longterm == before.inflight_longterm);
    CHECK(after.inflight_shortterm == before.inflight_shortterm);
    CHECK(after.prior_cwnd == before.prior_cwnd);  // no SaveStateUponLoss: no episode started
    CHECK(f.cc.cwnd() == cwnd);
    CHECK(f.cc.ledger().forgiven() == kMds);
    // A later rate sample that counts the loss gets it taken off.
    CHECK(f.cc.ledger().congestive(kMds) == 0);
    // The plain bbr beside it took the loss: its episode began.
    CHECK(f.bbr.model().prior_cwnd > 0);
    CHECK(before.prior_cwnd == 0);
}

TEST_CASE("ndm controller: a loss over a standing queue reaches bbr as bbr would see it") {
    Feed f;
    for (int r = 0; r < 30; ++r) f.ack_round(50ms);
    for (int r = 0; r < 3; ++r) f.ack_round(150ms);  // a queue of 2 min_rtt that never drains
    CHECK(f.cc.features().standing_queue() >= 1.9F);
    f.lose();
    CHECK(count(f.cc, Verdict::queue) == 1);
    CHECK(f.cc.ledger().forgiven() == 0);
    CHECK(f.cc.bbr().model().prior_cwnd > 0);  // SaveStateUponLoss ran: an episode began
    // The embedded bbr and a plain one, given the same events, agree, and
    // keep agreeing through the rounds after the loss.
    for (int r = 0; r < 5; ++r) {
        CHECK(f.cc.cwnd() == f.bbr.cwnd());
        CHECK(f.cc.pacing_rate() == f.bbr.pacing_rate());
        CHECK(f.cc.bbr().model().inflight_shortterm == f.bbr.model().inflight_shortterm);
        CHECK(f.cc.bbr().model().bw_shortterm == f.bbr.model().bw_shortterm);
        f.ack_round(150ms);
    }
}

TEST_CASE("ndm controller: without forgiven losses a growing queue changes nothing: ndm is bbr") {
    Feed f;
    for (int r = 0; r < 30; ++r) f.ack_round(50ms);
    for (int r = 0; r < 40; ++r) {
        f.ack_round(50ms + r * 2ms);  // a queue that builds by 0.04 min_rtt a round
        CHECK(f.cc.cwnd() == f.bbr.cwnd());
        CHECK(f.cc.pacing_rate() == f.bbr.pacing_rate());
    }
    CHECK(f.cc.queue_response().cuts() == 0);
    CHECK(f.cc.queue_response().probes_ended() == 0);
    CHECK(f.cc.queue_response().probes_stopped() == 0);
}

TEST_CASE("ndm controller: persistent congestion and ECN reach bbr whatever the model says") {
    Feed f;
    for (int r = 0; r < 30; ++r) f.ack_round(50ms);
    const auto cwnd = f.cc.cwnd();
    f.lose(3, true);
    CHECK(count(f.cc, Verdict::persistent) == 1);
    CHECK(f.cc.cwnd() < cwnd);  // bbr's OnEnterRTO: inflight + 1 packet
    CHECK(f.cc.cwnd() <= 5 * kMds + kMds + 4 * kMds);
    ndm::cc::CongestionEvent ce;
    ce.now = f.now;
    ce.ecn_ce = 2;
    ce.largest_lost_sent_time = f.now - 50ms;
    f.cc.on_congestion_event(ce);
    CHECK(count(f.cc, Verdict::ecn) == 1);
}

TEST_CASE("ndm controller: options") {
    const nn::NdmBbr tuned(cc_params(), {{"cap", "0.05"}, {"queue", "0.5"}, {"threshold", "0.9"}, {"probe", "off"},
                                         {"qprobe", "0.2"}, {"qcruise", "0"}, {"qnoise", "3"}, {"stall", "off"}});
    CHECK_FALSE(tuned.queue_response().stall());
    CHECK(nn::NdmBbr(cc_params()).queue_response().stall());
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"stall", "2"}}), doctest::Contains("stall"), std::invalid_argument);
    CHECK(tuned.queue_response().probe() == doctest::Approx(0.2));
    CHECK(tuned.queue_response().cruise() == 0);
    CHECK(tuned.queue_response().noise() == doctest::Approx(3));
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"qcruise", "-1"}}), doctest::Contains("qcruise"),
                         std::invalid_argument);
    CHECK(tuned.discriminator().cap() == doctest::Approx(0.05));
    CHECK(tuned.discriminator().queue() == doctest::Approx(0.5));
    CHECK(tuned.discriminator().threshold() == doctest::Approx(0.9));
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"probe", "maybe"}}), doctest::Contains("probe"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"cap", "0.9"}}), doctest::Contains("cap"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"forgive", "3"}}), doctest::Contains("forgive"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::NdmBbr(cc_params(), {{"model", "/nonexistent.ndmm"}}),
                         doctest::Contains("congestion controller \"ndm\""), std::invalid_argument);
    auto cc = ndm::cc::make("ndm", cc_params(), "simd=scalar,beta=0.8,loss_thresh=0.05");
    CHECK(cc->name() == "ndm");
    CHECK(cc->pacing_rate().has_value());
}

TEST_CASE("ndm controller: per-connection state beside the bbr it embeds") {
    // The forgiven-bytes ring (64 records of 16 bytes) is most of it, the
    // queue rules' windowed minimum and jitter ~64 bytes; the pending lost
    // packets live on the heap (64 reserved, 48 bytes each).
    const std::size_t added = sizeof(nn::NdmBbr) - sizeof(ndm::cc::Bbr);
    MESSAGE("sizeof(NdmBbr) = ", sizeof(nn::NdmBbr), ", sizeof(Bbr) = ", sizeof(ndm::cc::Bbr), ": ndm adds ", added,
            " bytes inline, ", 64 * sizeof(ndm::cc::PacketLost), " on the heap");
    CHECK(added <= 1664);
}
