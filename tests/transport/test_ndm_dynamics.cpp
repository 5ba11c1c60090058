// ndm when the path changes under it, in deterministic virtual time, in the
// style of BBR's example cases (draft-ietf-ccwg-bbr-06 Appendix A, the
// scripted path of tests/support/bbr_scenario.hpp): the bottleneck's rate ×10 up and
// ÷10 down, the RTT 20 → 200 ms, and a 3 s outage. Learned controllers are
// known to fail exactly here (Mazilu et al., arXiv 2510.25105); ndm keeps
// BBRv3's model, and these cases pin that its loss discrimination does not
// break it: utilisation back to ≥ 90 % within a stated number of round trips,
// and no queue above 2 BDP for longer than a stated time. Each bound sits
// above what the run measures (printed) with a margin, and bbr's own figure
// on the same path is printed beside it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bbr_scenario.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::to_seconds;
namespace sb = ndm::test::bbr;

namespace {

constexpr Duration kBin = 100ms;

// What a run measured: bytes acknowledged per 100 ms, and the longest span
// of consecutive RTT samples showing a queue above 2 BDP.
struct Trace {
    std::vector<double> acked;  // bytes per bin
    Duration worst_queue_span{0};
    Instant span_start{};
    bool in_span = false;

    void add(Instant start, const ndm::cc::AckEvent& ev, Duration base_rtt) {
        const auto bin = static_cast<std::size_t>((ev.now - start) / kBin);
        if (acked.size() <= bin) acked.resize(bin + 1, 0);
        acked[bin] += static_cast<double>(ev.bytes_acked);
        if (!ev.has_rtt_sample) return;
        // A queue of more than 2 BDP delays a packet by more than 2 base RTTs.
        const bool above = ev.latest_rtt > 3 * base_rtt;
        if (above && !in_span) span_start = ev.now;
        if (above) worst_queue_span = std::max(worst_queue_span, ev.now - span_start);
        in_span = above;
    }
    // Utilisation of `bps` over [from, from + window).
    [[nodiscard]] double utilisation(Duration from, Duration window, double bps) const {
        const auto b0 = static_cast<std::size_t>(from / kBin);
        const auto n = static_cast<std::size_t>(window / kBin);
        double bytes = 0;
        for (std::size_t i = b0; i < b0 + n && i < acked.size(); ++i) bytes += acked[i];
        return bytes * 8 / (bps * to_seconds(window));
    }
    // From `from`, the time until a `window` first carries ≥ 90 % of `bps`.
    [[nodiscard]] Duration regain(Duration from, Duration window, double bps) const {
        for (Duration t = from; t / kBin + window / kBin <= static_cast<std::int64_t>(acked.size()); t += kBin) {
            if (utilisation(t, window, bps) >= 0.9) return t - from;
        }
        return Duration::max();
    }
};

struct Run {
    Trace trace;
    sb::Scenario::Result result;
};

// A time span of the run in which every datagram sent is lost.
struct Dark {
    Duration from{0}, to{0};
};

// One run of `sc` (on a path of its own) with a per-ACK hook that applies
// `change` once the run is `at` old and measures against the base RTT
// `base_rtt(time into the run)`; datagrams sent during `dark` are lost.
template <typename Change, typename BaseRtt>
Run run(sb::Scenario sc, bool ndm, Duration at, Change change, BaseRtt base_rtt, Dark dark = {}) {
    Run out;
    sc.run_ndm = ndm;
    sc.path = std::make_shared<sb::Bottleneck>(*sc.path);
    sc.ret = std::make_shared<sb::ReturnPath>(*sc.ret);
    bool changed = false;
    std::optional<Instant> start;
    std::optional<Instant> first_send;
    // The send hook keeps the clock of the dark span: no ACK arrives in the dark.
    sc.on_sent = [&](const ndm::cc::Bbr&, const ndm::cc::PacketSent& p) {
        if (!first_send) first_send = p.time;
        const Duration t = p.time - *first_send;
        sc.path->loss = t >= dark.from && t < dark.to ? 1.0 : 0.0;
    };
    sc.on_ack = [&](const sb::Tick& t) {
        if (!start) start = t.now - t.ack.latest_rtt;  // about the connection's start
        if (!changed && t.now - *start >= at) {
            change(sc);
            changed = true;
        }
        out.trace.add(*start, t.ack, base_rtt(t.now - *start));
    };
    out.result = sc.run();
    return out;
}

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

TEST_CASE("ndm dynamics: bandwidth x10 up (5 -> 50 Mbit/s, 40 ms RTT) is used within 50 round trips") {
    sb::Scenario sc;
    sc.path->rate_bps = 5e6;
    sc.path->delay = 20ms;
    sc.ret->delay = 20ms;
    sc.path->queue_bytes = 250'000;  // 1 BDP at 50 Mbit/s
    sc.duration = 12s;
    auto up = [](sb::Scenario& s) { s.path->rate_bps = 50e6; };
    auto base = [](Duration) { return 40ms; };
    const Run n = run(sc, true, 4s, up, base);
    const Run b = run(sc, false, 4s, up, base);
    const Duration tn = n.trace.regain(4s, 500ms, 50e6);
    const Duration tb = b.trace.regain(4s, 500ms, 50e6);
    MESSAGE("x10 up: 90 % of 50 Mbit/s (500 ms window) after ", ms(tn), " ms (", ms(tn) / 40, " RTTs); bbr ", ms(tb),
            " ms; ", n.result.sender.packets_lost, " packets lost");
    CHECK(tn <= 50 * 40ms);
    CHECK(tn <= tb + 200ms);
    CHECK(n.trace.worst_queue_span <= 1s);
}

TEST_CASE("ndm dynamics: bandwidth /10 down (50 -> 5 Mbit/s, deep buffer) keeps no queue above 2 BDP past 11 s") {
    sb::Scenario sc;
    sc.path->rate_bps = 50e6;
    sc.path->delay = 20ms;
    sc.ret->delay = 20ms;
    sc.path->queue_bytes = 250'000;  // 1 BDP at 50 Mbit/s, 10 BDP at 5 Mbit/s: room for a standing queue
    sc.duration = 16s;
    auto down = [](sb::Scenario& s) { s.path->rate_bps = 5e6; };
    auto base = [](Duration) { return 40ms; };
    const Run n = run(sc, true, 4s, down, base);
    const Run b = run(sc, false, 4s, down, base);
    MESSAGE("/10 down: longest queue above 2 BDP ", ms(n.trace.worst_queue_span), " ms (bbr ",
            ms(b.trace.worst_queue_span), " ms); utilisation of 5 Mbit/s over 8-16 s ",
            n.trace.utilisation(8s, 8s, 5e6), " (bbr ", b.trace.utilisation(8s, 8s, 5e6), ")");
    // BBRv3's own pace: max_bw forgets the old rate over two ProbeBW cycles
    // (2-3 s each) and the overflow's losses bound inflight meanwhile.
    CHECK(n.trace.worst_queue_span <= 11s);
    CHECK(n.trace.worst_queue_span <= b.trace.worst_queue_span + 1s);
    CHECK(n.trace.utilisation(8s, 8s, 5e6) >= 0.9);
}

TEST_CASE("ndm dynamics: RTT 20 -> 200 ms (10 Mbit/s) is used within 50 round trips of the new RTT") {
    sb::Scenario sc;
    sc.path->rate_bps = 10e6;
    sc.path->delay = 10ms;
    sc.ret->delay = 10ms;
    sc.path->queue_bytes = 500'000;  // 2 BDP at 200 ms
    sc.duration = 24s;
    auto longer = [](sb::Scenario& s) {
        s.path->delay = 100ms;
        s.ret->delay = 100ms;
    };
    auto base = [](Duration since) { return since < 4s ? 20ms : 200ms; };
    const Run n = run(sc, true, 4s, longer, base);
    const Run b = run(sc, false, 4s, longer, base);
    const Duration tn = n.trace.regain(4s, 1s, 10e6);
    const Duration tb = b.trace.regain(4s, 1s, 10e6);
    MESSAGE("RTT 20 -> 200 ms: 90 % of 10 Mbit/s (1 s window) after ", ms(tn), " ms (", ms(tn) / 200,
            " RTTs of 200 ms); bbr ", ms(tb), " ms; longest queue above 2 BDP ", ms(n.trace.worst_queue_span), " ms");
    // min_rtt keeps the old 20 ms until ProbeRTT and its 10 s window refresh it.
    CHECK(tn <= 50 * 200ms);
    CHECK(tn <= tb + 200ms);
    CHECK(n.trace.worst_queue_span <= 1s);
}

TEST_CASE("ndm dynamics: after a 3 s outage (10 Mbit/s, 40 ms RTT) the link is used again within 25 round trips") {
    sb::Scenario sc;
    sc.path->rate_bps = 10e6;
    sc.path->delay = 20ms;
    sc.ret->delay = 20ms;
    sc.path->queue_bytes = 50'000;  // 1 BDP
    sc.duration = 14s;
    auto none = [](sb::Scenario&) {};
    auto base = [](Duration) { return 40ms; };
    const Dark dark{4s, 7s};  // every datagram sent into [4 s, 7 s) is lost
    const Run n = run(sc, true, 0s, none, base, dark);
    const Run b = run(sc, false, 0s, none, base, dark);
    const Duration tn = n.trace.regain(7s, 500ms, 10e6);
    const Duration tb = b.trace.regain(7s, 500ms, 10e6);
    MESSAGE("3 s outage: 90 % of 10 Mbit/s (500 ms window) ", ms(tn), " ms after the link returns (bbr ", ms(tb),
            " ms); longest queue above 2 BDP ", ms(n.trace.worst_queue_span), " ms");
    CHECK(tn <= 25 * 40ms);
    CHECK(tn <= tb + 200ms);
    CHECK(n.trace.worst_queue_span <= 1s);
}
