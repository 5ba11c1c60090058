// HyStart++ (src/cc/hystart.cpp, RFC 9406): the component on hand-made
// rounds, and embedded in Cubic on a synthetic ACK-clocked path. No network.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <queue>
#include <utility>
#include <string>
#include <vector>

#include "cc/cubic.hpp"
#include "cc/hystart.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::cc::AckEvent;
using ndm::cc::Cubic;
using ndm::cc::HyStart;
using ndm::cc::PacketSent;
using Phase = ndm::cc::HyStart::Phase;

namespace {

using ndm::test::at;
using ndm::test::cc_params;
using ndm::test::kMds;

// Hand-made rounds for the bare component: round r sends its packets at
// 100 ms·r, and each ACK acknowledges one of them after the given RTT.
struct Rounds {
    HyStart h;
    int round = 0;
    Instant sent_at;

    void send() {
        ++round;
        sent_at = at(100ms * round);
        PacketSent p;
        p.time = sent_at;
        h.on_packet_sent(p);
    }
    void ack(Duration rtt, bool sample = true) {
        auto ev = ndm::test::ack_event(sent_at + rtt, kMds, sent_at, rtt);
        ev.has_rtt_sample = sample;
        h.on_ack(ev);
    }
    // One round: send, then one ACK per RTT given.
    void run(std::initializer_list<Duration> rtts) {
        send();
        for (auto r : rtts) ack(r);
    }
    void run(int n, Duration rtt) {
        send();
        for (int i = 0; i < n; ++i) ack(rtt);
    }
};

// An ACK-clocked sender behind a bottleneck: packets leave the bottleneck
// one per `rate` slot in the order sent, reach the receiver base_rtt(sent)
// later (the whole path delay, so the ACK arrives then), and each ACK
// acknowledges one packet; after every ACK the sender fills its window. The
// queue is unbounded: nothing is ever lost, only delayed.
struct Path {
    Path(ndm::cc::Controller& c, Duration per, std::function<Duration(Instant)> rtt)
        : cc(c), per_packet(per), base_rtt(std::move(rtt)) {}

    ndm::cc::Controller& cc;
    Duration per_packet;                         // serialization at the bottleneck
    std::function<Duration(Instant)> base_rtt;  // of a packet sent at the instant

    struct InFlight {
        Instant arrival;
        Instant sent;
        std::uint64_t pn;
        bool operator>(const InFlight& o) const {
            return arrival != o.arrival ? arrival > o.arrival : pn > o.pn;
        }
    };
    std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> flight;
    Instant now{};
    Instant link_free{};
    std::uint64_t pn = 0;
    std::uint64_t bytes_in_flight = 0;
    Duration srtt{0};
    Duration latest{0};
    std::uint64_t acks = 0;

    void fill() {
        while (bytes_in_flight + kMds <= cc.cwnd()) {
            bytes_in_flight += kMds;
            PacketSent p;
            p.time = now;
            p.packet_number = pn;
            p.bytes = kMds;
            p.bytes_in_flight = bytes_in_flight;
            cc.on_packet_sent(p);
            link_free = std::max(link_free, now) + per_packet;
            flight.push({link_free + base_rtt(now), now, pn});
            ++pn;
        }
    }
    void step() {
        const auto p = flight.top();
        flight.pop();
        now = p.arrival;
        latest = now - p.sent;
        srtt = srtt == Duration{0} ? latest : (7 * srtt + latest) / 8;
        AckEvent ev;
        ev.now = now;
        ev.bytes_acked = kMds;
        ev.packets_acked = 1;
        ev.has_rtt_sample = true;
        ev.latest_rtt = latest;
        ev.smoothed_rtt = srtt;
        ev.min_rtt = latest;
        ev.prior_bytes_in_flight = bytes_in_flight;
        bytes_in_flight -= kMds;
        ev.bytes_in_flight = bytes_in_flight;
        ev.largest_acked_sent_time = p.sent;
        cc.on_ack(ev);
        ++acks;
        fill();
    }
    // Runs until `until`, calling `each` after every ACK.
    void run(Instant until, const std::function<void()>& each = {}) {
        fill();
        while (!flight.empty() && flight.top().arrival <= until) {
            step();
            if (each) each();
        }
    }
};

}  // namespace

TEST_CASE("hystart: RttThresh = clamp(lastRoundMinRTT / 8, 4 ms, 16 ms)") {
    CHECK(HyStart::rtt_thresh(10ms) == 4ms);
    CHECK(HyStart::rtt_thresh(32ms) == 4ms);
    CHECK(HyStart::rtt_thresh(50ms) == 6250us);
    CHECK(HyStart::rtt_thresh(128ms) == 16ms);
    CHECK(HyStart::rtt_thresh(1s) == 16ms);
}

TEST_CASE("hystart: rounds end when a packet sent after the round began is acked") {
    Rounds r;
    r.run(10, 50ms);
    CHECK(r.h.rounds() == 1);
    CHECK(r.h.current_round_min_rtt() == 50ms);
    CHECK(r.h.last_round_min_rtt() == Duration::max());
    // More ACKs of packets from the same send: same round.
    r.ack(45ms);
    CHECK(r.h.rounds() == 1);
    CHECK(r.h.current_round_min_rtt() == 45ms);
    // ACKs without an RTT sample do not count.
    r.ack(1ms, false);
    CHECK(r.h.current_round_min_rtt() == 45ms);
    r.run(10, 50ms);  // + 5 ms < RttThresh = 45 ms / 8 = 5.625 ms
    CHECK(r.h.rounds() == 2);
    CHECK(r.h.last_round_min_rtt() == 45ms);
    CHECK(r.h.current_round_min_rtt() == 50ms);
    CHECK(r.h.phase() == Phase::slow_start);
}

TEST_CASE("hystart: an RTT increase mid-round leads to CSS after N_RTT_SAMPLE samples") {
    Rounds r;
    r.run(12, 50ms);
    r.run(12, 50ms);
    // The RTT jumps by 10 ms (> RttThresh = 6.25 ms) in the middle of this
    // round: its minimum is still 50 ms, so slow start goes on.
    r.run({50ms, 50ms, 50ms, 50ms, 60ms, 60ms, 60ms, 60ms, 60ms, 60ms, 60ms, 60ms});
    CHECK(r.h.phase() == Phase::slow_start);
    // The next round is all above: CSS at its 8th sample, not before.
    r.send();
    for (int i = 1; i <= 7; ++i) {
        r.ack(60ms + Duration(i));
        CHECK(r.h.phase() == Phase::slow_start);
    }
    r.ack(62ms);
    CHECK(r.h.phase() == Phase::conservative_slow_start);
    CHECK(r.h.css_baseline_min_rtt() == 60ms + 1ns);
    CHECK(r.h.css_rounds() == 0);
}

TEST_CASE("hystart: no exit on small increases or too few samples") {
    SUBCASE("increase below RttThresh") {
        Rounds r;
        r.run(12, 50ms);
        r.run(12, 56ms);  // + 6 ms < 6.25 ms
        r.run(12, 62ms);  // + 6 ms < 56/8 = 7 ms
        CHECK(r.h.phase() == Phase::slow_start);
    }
    SUBCASE("fewer than 8 samples per round") {
        Rounds r;
        r.run(7, 50ms);
        r.run(7, 100ms);
        r.run(7, 200ms);
        CHECK(r.h.phase() == Phase::slow_start);
    }
}

TEST_CASE("hystart: CSS grows by a quarter, lasts CSS_ROUNDS rounds, then CA") {
    Rounds r;
    r.run(10, 50ms);
    r.run(10, 60ms);  // entered mid-round: this partial round counts
    REQUIRE(r.h.phase() == Phase::conservative_slow_start);
    // A quarter of the acked bytes, the remainder carried exactly.
    CHECK(r.h.growth(1200) == 300);
    CHECK(r.h.growth(3) == 0);
    CHECK(r.h.growth(1) == 1);
    CHECK(r.h.growth(7) == 1);  // 7 + 0 = 1·4 + 3
    CHECK(r.h.growth(1) == 1);
    for (int round = 1; round <= 4; ++round) {
        r.run(10, 61ms);
        CHECK(r.h.css_rounds() == static_cast<std::uint32_t>(round));
        CHECK(r.h.phase() == Phase::conservative_slow_start);
    }
    // The first ACK of the fifth round after the partial one ends CSS.
    r.run(1, 61ms);
    CHECK(r.h.phase() == Phase::congestion_avoidance);
    CHECK(r.h.done());
    // Once done it stays done, and growth is plain.
    r.run(10, 10ms);
    CHECK(r.h.done());
    CHECK(r.h.growth(1200) == 1200);
}

TEST_CASE("hystart: back to slow start when the RTT drops below the CSS baseline") {
    Rounds r;
    r.run(10, 50ms);
    r.run(10, 60ms);
    REQUIRE(r.h.phase() == Phase::conservative_slow_start);
    REQUIRE(r.h.css_baseline_min_rtt() == 60ms);
    r.run(10, 61ms);
    CHECK(r.h.phase() == Phase::conservative_slow_start);
    r.run(10, 59ms);  // the queue drained: the exit was spurious
    CHECK(r.h.phase() == Phase::slow_start);
    CHECK(r.h.css_baseline_min_rtt() == Duration::max());
    CHECK(r.h.growth(1200) == 1200);
    // And it can enter CSS again later, with a fresh count.
    r.run(10, 70ms);
    CHECK(r.h.phase() == Phase::conservative_slow_start);
    CHECK(r.h.css_rounds() == 0);
}

TEST_CASE("hystart: a loss ends it") {
    Rounds r;
    r.run(10, 50ms);
    r.h.on_congestion();
    CHECK(r.h.done());
    r.run(10, 100ms);
    CHECK(r.h.done());
    Rounds c;
    c.run(10, 50ms);
    c.run(10, 60ms);
    REQUIRE(c.h.phase() == Phase::conservative_slow_start);
    c.h.on_congestion();
    CHECK(c.h.done());
}

TEST_CASE("hystart: cubic leaves slow start on an RTT increase before any loss") {
    // A 1 Gbit/s bottleneck (9.6 us per packet, far from full) and a 40 ms
    // base RTT that steps to 52 ms (+12 ms > RttThresh = 5 ms) for packets
    // sent from 160.4 ms on: in the middle of the burst the ACKs at ~160 ms
    // release, so the round they form sees both RTTs.
    auto step_rtt = [](Instant sent) { return sent < at(160400us) ? 40ms : 52ms; };
    for (const bool on : {true, false}) {
        CAPTURE(on);
        Cubic cc(cc_params(), {{"hystart", on ? "on" : "off"}});
        Path path{cc, 9600ns, step_rtt};
        std::vector<std::string> states;
        std::uint64_t cwnd_at_css = 0;
        Duration last_min_at_css{0};
        Duration current_min_at_css{0};
        // Per HyStart++ round: the smallest and largest RTT sample.
        std::vector<std::pair<Duration, Duration>> round_rtts;
        path.run(at(600ms), [&] {
            if (on && !cc.hystart().done()) {
                const auto r = cc.hystart().rounds();
                if (round_rtts.size() < r) round_rtts.resize(r, {Duration::max(), Duration::min()});
                auto& [lo, hi] = round_rtts[r - 1];
                lo = std::min(lo, path.latest);
                hi = std::max(hi, path.latest);
            }
            const std::string s(cc.state());
            if (states.empty() || states.back() != s) {
                states.push_back(s);
                if (s == "conservative_slow_start") {
                    cwnd_at_css = cc.cwnd();
                    last_min_at_css = cc.hystart().last_round_min_rtt();
                    current_min_at_css = cc.hystart().current_round_min_rtt();
                }
            }
        });
        CHECK(path.acks > 1000);
        if (on) {
            REQUIRE(states == std::vector<std::string>{"slow_start", "conservative_slow_start",
                                                       "congestion_avoidance"});
            // The step fell inside a round (samples of 40 and of 52 ms): that
            // round's minimum was still 40 ms, so CSS began in the next one.
            bool mixed = false;
            for (const auto& [lo, hi] : round_rtts) mixed = mixed || (lo < 41ms && hi >= 52ms);
            CHECK(mixed);
            CHECK(last_min_at_css < 41ms);
            CHECK(current_min_at_css >= 52ms);
            CHECK(cc.hystart().css_rounds() == HyStart::kCssRounds);
            // Five CSS rounds at x1.25 at most, instead of x32 in slow start.
            CHECK(cc.ssthresh() > cwnd_at_css);
            CHECK(cc.ssthresh() < cwnd_at_css * 4);
            // RFC 9438 §4.10: no W_max yet, so the curve is flat at the exit window.
            CHECK(cc.k() == 0);
            CHECK(cc.w_max() == doctest::Approx(static_cast<double>(cc.ssthresh()) / kMds));
            CHECK(cc.cwnd_prior() == doctest::Approx(static_cast<double>(cc.ssthresh()) / kMds));
            CHECK(cc.cwnd() >= cc.ssthresh());
        } else {
            CHECK(states == std::vector<std::string>{"slow_start"});
            CHECK(cc.ssthresh() == UINT64_MAX);
            CHECK(cc.cwnd() > 12000u << 8);  // many round trips of doubling
        }
    }
}

TEST_CASE("hystart: cubic leaves slow start near the BDP when a queue builds") {
    // 100 Mbit/s (96 us per 1200-byte packet), 50 ms base RTT: BDP = 625 kB.
    // The unbounded queue builds once cwnd exceeds the BDP, raising the RTT.
    const std::uint64_t bdp = 625'000;
    for (const bool on : {true, false}) {
        CAPTURE(on);
        Cubic cc(cc_params(), {{"hystart", on ? "on" : "off"}});
        Path path{cc, 96us, [](Instant) { return Duration(50ms); }};
        std::uint64_t exit_cwnd = 0;
        path.run(at(1500ms), [&] {
            if (exit_cwnd == 0 && cc.state() != "slow_start") exit_cwnd = cc.cwnd();
        });
        MESSAGE("hystart ", std::string(on ? "on" : "off"), ": slow start left at cwnd ", exit_cwnd,
                " bytes, cwnd at 1.5 s ", cc.cwnd(), " (BDP ", bdp, ")");
        if (on) {
            // The standing queue must reach RttThresh (6.25 ms, 65 packets)
            // at the start of a round, and the exit needs 8 samples of it.
            CHECK(exit_cwnd > bdp);
            CHECK(exit_cwnd < 4 * bdp);
            CHECK(cc.state() == "congestion_avoidance");
            // CSS then grows by about 1.25^5 ≈ 3.05.
            CHECK(cc.ssthresh() < exit_cwnd * 33 / 10);
        } else {
            CHECK(exit_cwnd == 0);
            CHECK(cc.cwnd() > 12 * bdp);  // slow start goes on until a loss would stop it
        }
    }
}
