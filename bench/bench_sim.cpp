// The simulator's speed: simulated seconds per wall second for a bulk flow
// (the number that decides how long the end-to-end tests and controller
// comparisons take), the cost per packet as competing flows share one
// bottleneck (it must not grow with the number of flows: bench/RESULTS.md,
// "Virtual-time simulation speed"), and the
// per-packet cost of SimpleLink on its own.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ndm/sim.hpp"

namespace {

using namespace std::chrono_literals;

// A 10 s, 50 Mbit/s, 25 ms one-way Reno flow, optionally with random loss.
void BM_SimFlow(benchmark::State& state) {
    ndm::sim::TransferSpec spec;
    spec.client.seed = 1;
    spec.server.seed = 2;
    ndm::sim::SimpleLinkConfig link;
    link.delay = 25ms;
    link.rate_bps = 50e6;
    link.queue_packets = 216;  // one bandwidth-delay product of 1452-byte packets
    link.loss = static_cast<double>(state.range(0)) / 1000;
    spec.client_to_server = link;
    spec.server_to_client = link;
    spec.server_to_client.seed = 2;
    spec.send_for = 10s;
    double simulated = 0;
    std::uint64_t bytes = 0, events = 0;
    for (auto _ : state) {
        const auto r = ndm::sim::run_transfer(spec);
        if (!r.completed) state.SkipWithError(("transfer failed: " + r.failure).c_str());
        simulated += ndm::to_seconds(r.duration);
        bytes += r.bytes_delivered;
        events += r.steps;
    }
    // Rates divide by wall time: sim_s_per_s is the speed-up over real time.
    state.counters["sim_s_per_s"] = benchmark::Counter(simulated, benchmark::Counter::kIsRate);
    state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_SimFlow)->Arg(0)->Arg(10)->ArgName("loss_permille")->Unit(benchmark::kMillisecond)->UseRealTime();

// This process's CPU time in ns: the machine may be shared, so the per-packet
// cost is CPU, not wall, time.
double process_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// N Reno flows share one bottleneck of `rate_bps`, 25 ms one way, with a
// one-BDP droptail queue, for S seconds; cpu_ns_per_pkt is CPU time per
// datagram the bottleneck delivered, the N handshakes and set-ups included
// (the difference between the 5 s and 20 s runs gives the cost per packet
// without them); events_per_pkt counts simulator steps.
void run_shared_path_bench(benchmark::State& state, std::size_t flows, std::chrono::seconds seconds, double rate_bps) {
    ndm::sim::SharedPathSpec spec;
    ndm::sim::SimpleLinkConfig bottleneck;
    bottleneck.delay = 25ms;
    bottleneck.rate_bps = rate_bps;
    bottleneck.queue_packets = static_cast<std::size_t>(rate_bps * 0.050 / 8 / 1452);  // one BDP
    spec.bottleneck = [bottleneck] { return std::make_unique<ndm::sim::SimpleLink>(bottleneck); };
    spec.return_path = [] {
        ndm::sim::SimpleLinkConfig back;
        back.delay = 25ms;
        return std::make_unique<ndm::sim::SimpleLink>(back);
    };
    for (std::size_t i = 0; i < flows; ++i) {
        ndm::sim::FlowSpec f;
        f.client.cc = "reno";
        f.client.seed = 2 * i + 1;
        f.server.seed = 2 * i + 2;
        f.seed = i + 1;
        spec.flows.push_back(f);
    }
    spec.send_until = seconds;
    double cpu_ns = 0;
    std::uint64_t packets = 0, events = 0;
    for (auto _ : state) {
        const double before = process_cpu_ns();
        const auto r = ndm::sim::run_shared_path(spec);
        cpu_ns += process_cpu_ns() - before;
        for (const auto& f : r.flows)
            if (!f.completed) state.SkipWithError(("a flow failed: " + f.failure).c_str());
        packets += r.bottleneck.delivered;
        events += r.steps;
    }
    const auto pkts = static_cast<double>(packets);
    state.counters["cpu_ns_per_pkt"] = cpu_ns / pkts;
    state.counters["events_per_pkt"] = static_cast<double>(events) / pkts;
    state.counters["pkts"] = pkts / static_cast<double>(state.iterations());
    state.counters["cpu_s"] = cpu_ns / 1e9 / static_cast<double>(state.iterations());
}

// The same total rate, 100 Mbit/s, so about the same number of packets
// whatever N: with more flows each has a smaller window, so the protocol
// itself does more per packet (every flow's pacer releases, ACKs and timers
// are its own events). At least 1 Mbit/s a flow, so 1 Gbit/s for 1000: at
// 100 kbit/s a flow, 1000 flows' smallest windows (2 packets each, RFC 9002
// §7.2) are over three times the path's BDP and queue, and handshakes time out.
void BM_SharedPathFlows(benchmark::State& state) {
    const auto flows = static_cast<std::size_t>(state.range(0));
    run_shared_path_bench(state, flows, std::chrono::seconds(state.range(1)),
                          std::max(100e6, 1e6 * static_cast<double>(flows)));
}
BENCHMARK(BM_SharedPathFlows)
    ->ArgsProduct({{1, 10, 100, 1000}, {5, 20}})
    ->ArgNames({"flows", "seconds"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// 10 Mbit/s per flow (N flows share N x 10 Mbit/s): each flow's window and
// packet rate stay those of the single flow, so the protocol's work per
// packet is the same, and what grows with N is the simulator's own.
void BM_SharedPathFlowsScaled(benchmark::State& state) {
    const auto flows = static_cast<std::size_t>(state.range(0));
    run_shared_path_bench(state, flows, std::chrono::seconds(state.range(1)), 10e6 * static_cast<double>(flows));
}
BENCHMARK(BM_SharedPathFlowsScaled)
    ->ArgsProduct({{1, 10, 100}, {5}})
    ->ArgNames({"flows", "seconds"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One 1452-byte datagram through a rate-limited, lossy link: send + deliver.
void BM_SimpleLinkPacket(benchmark::State& state) {
    ndm::sim::SimpleLinkConfig cfg;
    cfg.delay = 25ms;
    cfg.rate_bps = 50e6;
    cfg.queue_packets = 1u << 20;
    cfg.loss = 0.01;
    cfg.reorder = state.range(0) ? 0.01 : 0;
    cfg.reorder_extra_delay = 1ms;
    ndm::sim::SimpleLink link(cfg);
    const std::vector<std::uint8_t> datagram(1452, 0xab);
    ndm::Datagram out;
    ndm::Instant now{};
    const ndm::Duration spacing = 240us;  // just slower than the link, so the queue stays short
    for (auto _ : state) {
        link.send({datagram}, now);
        now += spacing;
        while (link.deliver(now, out)) benchmark::DoNotOptimize(out.bytes.data());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimpleLinkPacket)->Arg(0)->Arg(1)->ArgName("reorder");

}  // namespace

BENCHMARK_MAIN();
