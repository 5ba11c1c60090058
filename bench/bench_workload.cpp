// The CLI's workload: the generator and hash by where they write, a
// stream's send ring cycled at a given capacity
// (bench/results/2026-12-06-sender-rings.md), and the receiver's two checks.
// Past the caches every write first reads its line from memory, so a ring
// much larger than the bytes in flight makes the generator several times
// slower than the same bytes through a small one.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <vector>

#include "transport/stream.hpp"
#include "ndm/workload.hpp"

namespace {

using ndm::transport::OffsetBuffer;

// 64 KiB writes through an OffsetBuffer kept at `ring` bytes of capacity
// with half of it held (as a send buffer with its bytes in flight; a ring
// holding less than a quarter would halve).
void BM_PayloadIntoRing(benchmark::State& state) {
    const auto ring = static_cast<std::size_t>(state.range(0));
    const bool hash = state.range(1) != 0;
    constexpr std::size_t kChunk = 64u << 10;
    ndm::workload::Payload payload(1);
    ndm::workload::StreamHash h;
    OffsetBuffer b;
    const std::uint64_t held = ring / 2;
    b.append(std::vector<std::uint8_t>(ring));  // grows it to `ring`
    b.drop_front_to(b.end() - held);
    std::uint64_t written = b.end();
    for (auto _ : state) {
        std::span<std::uint8_t> room = b.prepare(kChunk);
        payload.fill(written, room);
        if (hash) h.update(room);
        b.commit(room.size());
        written += room.size();
        b.drop_front_to(written - held);
    }
    if (b.ring_capacity() != ring) state.SkipWithError("the ring changed size");
    benchmark::DoNotOptimize(h.digest());
    state.SetBytesProcessed(static_cast<std::int64_t>(written - ring));
}
BENCHMARK(BM_PayloadIntoRing)
    ->ArgNames({"ring", "hash"})
    ->ArgsProduct({{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}, {0, 1}});

// The receiver's check of 64 KiB read from a 1 MiB buffer (in the cache):
// XXH3 (StreamHash, what -F's files take) or the comparison with the
// generator (PayloadCheck, the generated payload's).
void BM_ReceiverCheck(benchmark::State& state) {
    const bool hash = state.range(0) != 0;
    constexpr std::size_t kChunk = 64u << 10, kBuffer = 1u << 20;
    ndm::workload::Payload payload(1);
    std::vector<std::uint8_t> stream(kBuffer);
    payload.fill(0, stream);
    ndm::workload::StreamHash h;
    std::uint64_t offset = 0, differing = 0;
    for (auto _ : state) {
        const std::span<const std::uint8_t> chunk(stream.data() + offset % kBuffer, kChunk);
        if (hash) h.update(chunk);
        else differing += payload.mismatch(offset % kBuffer, chunk) != kChunk;  // PayloadCheck's step
        offset += kChunk;
    }
    if (differing > 0) state.SkipWithError("the check failed");
    benchmark::DoNotOptimize(h.digest());
    state.SetBytesProcessed(static_cast<std::int64_t>(offset));
}
BENCHMARK(BM_ReceiverCheck)->ArgName("hash")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
