// CRC32C throughput (the integrity tag over every packet, sealed by the sender
// and checked by the receiver): GB/s per implementation at 64 B, a 1452-byte
// packet, a short 256-byte one, a 9000-byte jumbo frame and the largest UDP payload.
//   build/bench/bench_crc32c [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "transport/crc32c.hpp"

namespace {

void BM_Crc32c(benchmark::State& state, ndm::wire::Crc32cImpl impl) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<std::uint8_t> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<std::uint8_t>(i * 131 + 7);
    std::uint32_t crc = 0;
    for (auto _ : state) {
        crc = impl.fn(buf, crc);  // chained, so calls cannot overlap or be hoisted
        benchmark::DoNotOptimize(crc);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

// One benchmark per implementation the CPU runs, and the dispatcher.
const bool registered = [] {
    for (const auto& impl : ndm::wire::crc32c_implementations())
        benchmark::RegisterBenchmark((std::string("BM_Crc32c/") + impl.name).c_str(), BM_Crc32c, impl)
            ->Arg(64)->Arg(256)->Arg(1452)->Arg(9000)->Arg(65507);
    benchmark::RegisterBenchmark("BM_Crc32c/dispatch", BM_Crc32c,
                                 ndm::wire::Crc32cImpl{"dispatch", &ndm::wire::crc32c})
        ->Arg(64)->Arg(256)->Arg(1452)->Arg(9000)->Arg(65507);
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
