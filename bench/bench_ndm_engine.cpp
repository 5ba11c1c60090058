// The NDM inference engine: one GRU step + head of the default "ndm" model
// (GRU 8→8, dense 8→1 sigmoid; 441 parameters) for a batch of connections,
// per kernel available on this CPU, at batch 1, 8, 64 and 1024. The
// ns_per_conn counter is the time per connection-inference (target ≤ 10 ns
// at batch ≥ 64 with AVX2, ≥ 4× faster than scalar).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "cc/ndm/default_model.hpp"
#include "cc/ndm/engine.hpp"
#include "cc/ndm/kernels.hpp"

namespace {

namespace nn = ndm::cc::ndm;

void BM_Infer(benchmark::State& state, nn::Simd simd) {
    const auto& model = *nn::default_model();
    const auto n = static_cast<std::size_t>(state.range(0));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-0.5F, 1.5F);
    std::vector<float> x(model.input_dim * n);
    for (auto& v : x) v = u(rng);
    std::vector<float> h(model.state_dim() * n, 0.0F);
    std::vector<float> y(n);
    nn::Engine engine(simd);
    for (auto _ : state) {
        engine.infer(model, {n, n, x.data(), h.data(), y.data()});
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
    state.counters["ns_per_conn"] = benchmark::Counter(
        static_cast<double>(n) * 1e-9,
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

int main(int argc, char** argv) {
    for (const auto simd : nn::supported_simd()) {
        benchmark::RegisterBenchmark(("BM_Infer/" + std::string(nn::simd_name(simd))).c_str(), BM_Infer,
                                     simd)
            ->Arg(1)
            ->Arg(8)
            ->Arg(64)
            ->Arg(1024);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
