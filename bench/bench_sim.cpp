// The simulator's speed: simulated seconds per wall second for a bulk flow
// (the number that decides how long the end-to-end tests and controller
// comparisons take), and the per-packet cost of SimpleLink on its own.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
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
    std::vector<std::uint8_t> out;
    ndm::Instant now{};
    const ndm::Duration spacing = 240us;  // just slower than the link, so the queue stays short
    for (auto _ : state) {
        link.send(datagram, now);
        now += spacing;
        while (link.deliver(now, out)) benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimpleLinkPacket)->Arg(0)->Arg(1)->ArgName("reorder");

}  // namespace

BENCHMARK_MAIN();
