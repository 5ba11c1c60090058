// Cost of a congestion controller per ACK on the recorded ACK traces of
// tests/data/ack-traces (real controller-event streams from simulated
// transfers; format in its README.md). One iteration replays a whole trace
// (its PacketSent, congestion and spurious events included) into a fresh
// controller; per_ack is the replay time divided by the trace's ACKs (all
// its events counted), per_event by its events.
// Controllers are created by name through ndm::cc::make, so another one is
// benchmarked by adding a line to register_all().
#include <benchmark/benchmark.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../tests/support/ack_trace.hpp"
#include "ndm/cc.hpp"

namespace {

const char* const kTraces[] = {"urban-lte-ndm", "droptail-20m-cubic", "lte-verizon-reno"};

void BM_Replay(benchmark::State& state, const ndm::testing::AckTrace& trace, const std::string& cc,
               const std::string& options) {
    ndm::cc::Params params;
    params.max_datagram_size = trace.max_datagram_size;
    std::uint64_t acks = 0;
    for (const auto& ev : trace.events) acks += std::holds_alternative<ndm::cc::AckEvent>(ev) ? 1 : 0;
    // Controllers are made ahead in batches (timing paused once per batch:
    // pausing costs microseconds here, a replay tens of microseconds).
    std::vector<std::unique_ptr<ndm::cc::Controller>> fresh;
    for (auto _ : state) {
        if (fresh.empty()) {
            state.PauseTiming();
            for (int i = 0; i < 64; ++i) fresh.push_back(ndm::cc::make(cc, params, options));
            state.ResumeTiming();
        }
        auto& c = *fresh.back();
        for (const auto& ev : trace.events) ndm::testing::apply(c, ev);
        benchmark::DoNotOptimize(c.cwnd());
        fresh.pop_back();
    }
    const auto total = static_cast<double>(acks * state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(total));
    // Seconds per ACK and per event, printed with an SI prefix ("12.3n").
    state.counters["per_ack"] = benchmark::Counter(total, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["per_event"] =
        benchmark::Counter(static_cast<double>(trace.events.size() * state.iterations()),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["acks"] = static_cast<double>(acks);
    state.counters["events"] = static_cast<double>(trace.events.size());
}

void register_all() {
    static std::vector<ndm::testing::AckTrace> traces;
    for (const char* name : kTraces) {
        traces.push_back(ndm::testing::load_trace(std::string(NDM_SOURCE_DIR) + "/tests/data/ack-traces/" + name +
                                                  ".ndmt"));
    }
    const struct {
        const char* label;
        const char* cc;
        const char* options;
    } controllers[] = {{"reno", "reno", ""},       {"reno_beta07", "reno", "beta=0.7"}, {"cubic", "cubic", ""},
                       {"ndm_lkm", "ndm-lkm", ""}, {"ndm_cubic", "ndm-cubic", ""}, {"bbr", "bbr", ""},
                       {"ndm", "ndm", ""}};
    for (const auto& c : controllers) {
        for (const auto& t : traces) {
            benchmark::RegisterBenchmark(("BM_Replay/" + std::string(c.label) + "/" + t.name).c_str(),
                                         [&t, cc = std::string(c.cc), o = std::string(c.options)](
                                             benchmark::State& s) { BM_Replay(s, t, cc, o); });
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        register_all();
    } catch (const std::exception& e) {
        std::cerr << "bench_cc: " << e.what() << "\n";
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
