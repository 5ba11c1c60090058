// BBRv1 (src/cc/bbr1, Linux's tcp_bbr.c) in deterministic virtual time over
// SimpleLink: Startup finds the bottleneck and Drain empties the queue it
// built; ProbeBW cycles its gains and keeps the model right; random loss
// leaves it near the link rate where Cubic collapses; ProbeRTT comes every
// 10 s and holds 4 packets for at least 200 ms; recovery conserves packets
// and restores the window; runs repeat exactly; the registry knows it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cc/bbr1.hpp"
#include "cc/forwarding.hpp"
#include "ndm/sim.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using Mode = cc::Bbr1::Mode;

namespace {

// What the controller's model was after each ACK.
struct Snapshot {
    Duration t{0};  // since the transfer's start
    Mode mode = Mode::startup;
    double bw = 0;  // bytes/s
    Duration min_rtt{0};
    double pacing_gain = 0;
    std::uint64_t cwnd = 0;
    std::uint64_t in_flight = 0;
    bool full_bw = false;
};

// Forwards to a Bbr1 and snapshots it after every ACK. The connection makes
// its controller again once the handshake settles the datagram size; the
// latest one records.
class Bbr1Tap final : public cc::Forwarding {
public:
    Bbr1Tap(std::unique_ptr<cc::Controller> inner, std::vector<Snapshot>& out, Instant start)
        : Forwarding(std::move(inner)), out_(out), start_(start) {
        out_.clear();
    }
    void on_ack(const cc::AckEvent& ev) override {
        Forwarding::on_ack(ev);
        const auto& b = static_cast<const cc::Bbr1&>(inner());
        out_.push_back({ev.now - start_, b.mode(), b.bandwidth(), b.min_rtt().value_or(Duration::zero()),
                        b.pacing_gain(), b.cwnd(), ev.bytes_in_flight, b.full_bandwidth_reached()});
    }

private:
    std::vector<Snapshot>& out_;
    Instant start_;
};

std::vector<Snapshot> g_trace;

void register_tap() {
    cc::register_controller({"bbr1-tap", "bbr1 with snapshots (tests)", [](const cc::Params& p, const cc::Options& o) {
                                 return std::make_unique<Bbr1Tap>(std::make_unique<cc::Bbr1>(p, o), g_trace, Instant{});
                             }});
}

// client → server over a `mbps` bottleneck with `rtt` and `loss` on the data path.
sim::TransferSpec path(double mbps, Duration rtt, double loss, Duration send_for, const std::string& cc) {
    sim::TransferSpec t;
    t.client.cc = cc;
    t.client_to_server.rate_bps = mbps * 1e6;
    t.client_to_server.delay = rtt / 2;
    t.client_to_server.loss = loss;
    t.client_to_server.queue_packets = 400;
    t.client_to_server.seed = 7;
    t.server_to_client.delay = rtt / 2;
    t.send_for = send_for;
    t.deadline = send_for + 30s;
    return t;
}

double goodput_mbps(const sim::TransferResult& r) {
    return static_cast<double>(r.bytes_delivered) * 8 / to_seconds(r.duration) / 1e6;
}

const Snapshot* first_in(const std::vector<Snapshot>& tr, Mode m) {
    auto it = std::find_if(tr.begin(), tr.end(), [&](const Snapshot& s) { return s.mode == m; });
    return it == tr.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("bbr1: Startup finds a 10 Mbit/s bottleneck, Drain empties its queue, ProbeBW keeps the model") {
    register_tap();
    const auto r = sim::run_transfer(path(10, 40ms, 0, 10s, "bbr1-tap"));
    REQUIRE(r.completed);
    REQUIRE(r.hash_match);
    const auto& tr = g_trace;
    REQUIRE(tr.size() > 1000);
    const Snapshot* drain = first_in(tr, Mode::drain);
    const Snapshot* probe = first_in(tr, Mode::probe_bw);
    REQUIRE(drain);
    REQUIRE(probe);
    // Startup doubles per round from 10 packets: the plateau shows within
    // ~10 rounds of 40 ms, and Drain takes about one more.
    CHECK(drain->t < 800ms);
    CHECK(probe->t > drain->t);
    CHECK(probe->t < drain->t + 300ms);
    const Snapshot& last = tr.back();
    const double link = 10e6 / 8;  // bytes/s of datagrams
    MESSAGE("drain at ", to_seconds(drain->t), " s, probe_bw at ", to_seconds(probe->t), " s; bw ",
            last.bw * 8 / 1e6, " Mbit/s, min_rtt ", to_seconds(last.min_rtt) * 1e3, " ms, goodput ",
            goodput_mbps(r), " Mbit/s");
    CHECK(last.bw == doctest::Approx(link).epsilon(0.03));
    CHECK(last.min_rtt >= 40ms);
    // The queue Startup built was drained: no more than two datagrams'
    // serialization (1.16 ms each at 10 Mbit/s) above the 40 ms, the second of
    // a back-to-back pair (42.32 ms since each side's first 1-RTT packet
    // carries a NEW_CONNECTION_ID, docs/wire-format.md §3.3; 41.2 before).
    CHECK(last.min_rtt < 42.5ms);
    CHECK(goodput_mbps(r) > 9.0);
    // ProbeBW's pacing gains: probing 1.25, draining 0.75, cruising 1.
    std::set<double> gains;
    for (const auto& s : tr)
        if (s.mode == Mode::probe_bw) gains.insert(s.pacing_gain);
    CHECK(gains == std::set<double>{0.75, 1.0, 1.25});
    // In ProbeBW the window stays near 2 BDP (50 KB) plus its budget, far below the queue.
    for (const auto& s : tr)
        if (s.mode == Mode::probe_bw && s.t > 3s) CHECK(s.cwnd < 3 * 50'000u);
    CHECK(r.client_to_server.dropped_queue == 0);
}

TEST_CASE("bbr1: 1 % random loss leaves it near the link rate, where cubic collapses") {
    register_tap();
    const auto bbr = sim::run_transfer(path(10, 40ms, 0.01, 10s, "bbr1-tap"));
    const auto cubic = sim::run_transfer(path(10, 40ms, 0.01, 10s, "cubic"));
    REQUIRE(bbr.completed);
    REQUIRE(bbr.hash_match);
    REQUIRE(cubic.completed);
    MESSAGE("1 % loss, 10 Mbit/s, 40 ms: bbr1 ", goodput_mbps(bbr), " Mbit/s, cubic ", goodput_mbps(cubic), " Mbit/s");
    CHECK(goodput_mbps(bbr) > 8.5);
    CHECK(goodput_mbps(bbr) > 2 * goodput_mbps(cubic));
    CHECK_FALSE(std::any_of(g_trace.begin(), g_trace.end(), [](const Snapshot& s) { return s.bw > 10e6 / 8 * 1.05; }));
}

TEST_CASE("bbr1: ProbeRTT comes when the minimum RTT is 10 s old and holds 4 packets for 200 ms") {
    register_tap();
    const auto r = sim::run_transfer(path(10, 40ms, 0, 25s, "bbr1-tap"));
    REQUIRE(r.completed);
    const auto& tr = g_trace;
    // The spans spent in ProbeRTT.
    std::vector<std::pair<Duration, Duration>> spans;
    for (std::size_t i = 0; i < tr.size(); ++i) {
        if (tr[i].mode != Mode::probe_rtt) continue;
        if (spans.empty() || (i > 0 && tr[i - 1].mode != Mode::probe_rtt)) spans.push_back({tr[i].t, tr[i].t});
        spans.back().second = tr[i].t;
        CHECK(tr[i].cwnd <= 4 * 1452u);
    }
    REQUIRE(spans.size() >= 2);
    for (const auto& [from, to] : spans) {
        CAPTURE(to_seconds(from));
        CHECK(to - from >= 200ms);
        CHECK(to - from < 400ms);
    }
    // About 10 s apart (the minimum is refreshed by ProbeRTT itself).
    CHECK(spans[1].first - spans[0].first > 9s);
    CHECK(spans[1].first - spans[0].first < 11s);
    // After it, ProbeBW again at the full rate.
    CHECK(tr.back().mode == Mode::probe_bw);
    CHECK(goodput_mbps(r) > 9.0);
}

TEST_CASE("bbr1: runs repeat exactly, and the registry knows it with its options") {
    register_tap();
    const auto a = sim::run_transfer(path(20, 30ms, 0.005, 5s, "bbr1"));
    const auto b = sim::run_transfer(path(20, 30ms, 0.005, 5s, "bbr1"));
    CHECK(a.bytes_delivered == b.bytes_delivered);
    CHECK(a.duration == b.duration);
    CHECK(a.client_stats.packets_lost == b.client_stats.packets_lost);
    auto without = path(20, 30ms, 0.005, 5s, "bbr1");
    without.client.cc_options = "lt_bw=off,ack_aggregation=off";
    const auto o = sim::run_transfer(without);
    CHECK(o.completed);
    CHECK(o.hash_match);

    cc::Params p;
    p.max_datagram_size = 1452;
    const auto c = cc::make("bbr1", p, "lt_bw=off,ack_aggregation=off");
    CHECK(c->name() == "bbr1");
    CHECK(c->state() == "startup");
    CHECK(c->cwnd() == 10 * 1452u);
    REQUIRE(c->pacing_rate());
    CHECK(*c->pacing_rate() > 0);
    CHECK_THROWS_WITH_AS(cc::make("bbr1", p, "gain=3"), doctest::Contains("gain"), std::invalid_argument);
    CHECK_THROWS_AS(cc::make("bbr1", p, "lt_bw=maybe"), std::invalid_argument);
    const auto names = cc::list();
    CHECK(std::any_of(names.begin(), names.end(), [](const cc::Info& i) { return i.name == "bbr1"; }));
}

TEST_CASE("bbr1: recovery holds packets in flight to what was acknowledged, then restores the window") {
    // Driven by hand: a window of 20 packets in flight, one lost.
    cc::Params p;
    p.max_datagram_size = 1000;
    cc::Bbr1 b(p);
    const Instant t0 = Instant{} + 1s;
    cc::AckEvent ack;
    ack.now = t0;
    ack.bytes_acked = 1000;
    ack.packets_acked = 1;
    ack.smoothed_rtt = 50ms;
    ack.rate.valid = true;
    ack.rate.delivery_rate = 200'000;
    ack.rate.rtt = 50ms;
    ack.rate.delivered = 1000;
    ack.rate.total_delivered = 1000;
    ack.bytes_in_flight = 20'000;
    ack.largest_acked_sent_time = t0 - 50ms;
    b.on_ack(ack);
    const std::uint64_t before = b.cwnd();
    REQUIRE(before >= 11'000u);

    cc::CongestionEvent loss;
    loss.now = t0 + 1ms;
    loss.bytes_lost = 1000;
    loss.packets_lost = 1;
    loss.largest_lost_sent_time = t0 - 40ms;
    loss.bytes_in_flight = 5000;
    b.on_congestion_event(loss);
    ack.now = t0 + 1ms;
    ack.bytes_in_flight = 5000;
    ack.largest_acked_sent_time = t0 - 39ms;
    ack.rate.newly_lost = 1000;
    ack.rate.total_delivered = 2000;
    ack.rate.prior_delivered = 1000;
    b.on_ack(ack);
    CHECK(b.cwnd() == 6000u);  // packet conservation: in flight + acknowledged
    // The RFC 9002 period ends with the ACK of a packet sent after it began,
    // but TCP's recovery, whose state BBR follows, lasts until the holes'
    // retransmissions are acknowledged: about a min_rtt (50 ms) more.
    ack.now = t0 + 60ms;
    ack.largest_acked_sent_time = t0 + 10ms;
    ack.rate.newly_lost = 0;
    ack.rate.total_delivered = 3000;
    ack.rate.prior_delivered = 2000;
    b.on_ack(ack);
    CHECK(b.cwnd() < before);
    // A packet sent a min_rtt after recovery began is acknowledged: the window returns.
    ack.now = t0 + 110ms;
    ack.largest_acked_sent_time = t0 + 60ms;
    ack.rate.total_delivered = 4000;
    ack.rate.prior_delivered = 3000;
    b.on_ack(ack);
    CHECK(b.cwnd() >= before);
}
