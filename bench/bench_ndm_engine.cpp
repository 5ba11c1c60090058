// The NDM inference engine: one GRU step + head for a batch of connections,
// per kernel available on this CPU, at batch 1, 8, 64 and 1024, for
//   BM_Infer:     the default "ndm" model (GRU 8→2, dense 2→1 sigmoid; 75
//                 parameters), what the controller runs;
//   BM_InferGru8: a GRU 8→8 + dense 8→1 model (441 parameters), the size
//                 docs/ndm-controller.md §1.2 suggests for a learned model.
// The per_conn counter is the time per connection-inference (target ≤ 10 ns
// at batch ≥ 64 with AVX2, ≥ 4× faster than scalar).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ndm/ndm_model.hpp"
#include "cc/ndm/engine.hpp"
#include "cc/ndm/kernels.hpp"

namespace {

namespace nn = ndm::cc::ndm;

nn::Model gru8_model() {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-0.5F, 0.5F);
    nn::Model m;
    m.input_dim = 8;
    for (const auto kind : {nn::LayerKind::gru, nn::LayerKind::dense}) {
        nn::Layer l;
        l.kind = kind;
        l.act = kind == nn::LayerKind::gru ? nn::Act::linear : nn::Act::sigmoid;
        l.in = 8;
        l.out = kind == nn::LayerKind::gru ? 8 : 1;
        l.params.resize(nn::Layer::param_count(kind, l.in, l.out));
        for (auto& p : l.params) p = u(rng);
        m.layers.push_back(std::move(l));
    }
    m.validate();
    return m;
}

void run(benchmark::State& state, nn::Simd simd, const nn::Model& model) {
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
    // Seconds per connection-inference, printed with an SI prefix ("9.5n").
    state.counters["per_conn"] = benchmark::Counter(
        static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Infer(benchmark::State& state, nn::Simd simd) { run(state, simd, *nn::default_model()); }

void BM_InferGru8(benchmark::State& state, nn::Simd simd) {
    static const nn::Model model = gru8_model();
    run(state, simd, model);
}

}  // namespace

int main(int argc, char** argv) {
    for (const auto& [name, fn] : {std::pair{"BM_Infer/", &BM_Infer}, std::pair{"BM_InferGru8/", &BM_InferGru8}}) {
        for (const auto simd : nn::supported_simd()) {
            benchmark::RegisterBenchmark((name + std::string(nn::simd_name(simd))).c_str(), fn, simd)
                ->Arg(1)
                ->Arg(8)
                ->Arg(64)
                ->Arg(1024);
        }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
