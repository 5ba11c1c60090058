// Emulator model throughput (docs/emulator.md): ns per packet through one direction's
// pipeline in virtual time, send + deliver, with every stage on. Target:
// >= 2 M packets/s on one core (items_per_second).
#include <benchmark/benchmark.h>

#include <vector>

#include "ndm/emu.hpp"

namespace {

using namespace std::chrono_literals;

// Sends one packet per iteration every `spacing` of virtual time and hands out
// everything due, as a driver would.
void drive(benchmark::State& state, const char* spec, ndm::Duration spacing) {
    const auto profile = ndm::emu::parse_profile(spec);
    auto link = ndm::emu::make_link(profile, ndm::emu::Direction::up, 1);
    std::vector<std::uint8_t> pkt(static_cast<std::size_t>(state.range(0)), 0x5a);
    ndm::Datagram out;
    ndm::Instant now{};
    std::uint64_t delivered = 0;
    for (auto _ : state) {
        link->send({pkt}, now);
        while (link->next_delivery() <= now)
            if (link->deliver(now, out)) ++delivered;
        now += spacing;
    }
    benchmark::DoNotOptimize(delivered);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    const auto& s = link->emu_stats();
    state.counters["drop%"] = 100.0 * static_cast<double>(s.total_dropped()) / static_cast<double>(s.sent);
}

// All stages: Gilbert–Elliott loss, duplicate, corrupt, 100 Mbit/s droptail
// queue, normal jitter with i.i.d. ordering and the reorder knob; 1200-byte
// packets at 96 Mbit/s (just under the rate).
void BM_EmuAllStages(benchmark::State& state) {
    drive(state,
          "delay=20ms,jitter=5ms,distribution=normal,order=iid,reorder=1%,gemodel=1%/30%/80%/0.1%,duplicate=1%,"
          "corrupt=1%,rate=100mbit,queue=1000pkt",
          100us);
}
BENCHMARK(BM_EmuAllStages)->Arg(1200)->Arg(64);

// The same with CoDel (lazy dequeue decisions) under 1.2x overload.
void BM_EmuAllStagesCodel(benchmark::State& state) {
    drive(state,
          "delay=20ms,jitter=5ms,distribution=normal,order=iid,reorder=1%,gemodel=1%/30%/80%/0.1%,duplicate=1%,"
          "corrupt=1%,rate=100mbit,queue=1000pkt,aqm=codel",
          80us);
}
BENCHMARK(BM_EmuAllStagesCodel)->Arg(1200);

// urban-lte (the seed): uniform jitter, i.i.d. reordering, 5 % loss, no rate.
void BM_EmuUrbanLte(benchmark::State& state) { drive(state, "urban-lte", 100us); }
BENCHMARK(BM_EmuUrbanLte)->Arg(1200);

// A Mahimahi trace at 12 Mbit/s, saturated (2x) with loss and order-preserving jitter.
void BM_EmuTrace(benchmark::State& state) {
    drive(state, "trace=const-12mbit.trace,queue=200pkt,delay=20ms,jitter=5ms,loss=1%", 500us);
}
BENCHMARK(BM_EmuTrace)->Arg(1200);

}  // namespace

BENCHMARK_MAIN();
