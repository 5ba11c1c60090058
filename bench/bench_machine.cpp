// What this machine charges for the two kernel crossings a UDP data path is
// made of: a system call, and one thread waking another (the receiver woken
// by arriving data, an io-wq worker woken by a queued send). The loopback
// numbers in RESULTS.md are read against these: in a VM both can be several
// times what they are on bare metal.
//
//   build/bench/bench_machine --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <thread>

namespace {

// The cheapest real system call: entry and exit only.
void BM_Syscall(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(::syscall(SYS_getppid));
}
BENCHMARK(BM_Syscall);

// One round trip between two threads that block in between (eventfd): two
// wake-ups, two sleeps. CPU time is this thread's half of it.
void BM_WakeRoundTrip(benchmark::State& state) {
    const int ping = ::eventfd(0, EFD_CLOEXEC), pong = ::eventfd(0, EFD_CLOEXEC);
    if (ping < 0 || pong < 0) throw std::runtime_error("eventfd");
    std::thread peer([&] {
        std::uint64_t v;
        while (::read(ping, &v, sizeof v) == sizeof v && v != UINT64_MAX - 1) {
            v = 1;
            if (::write(pong, &v, sizeof v) != sizeof v) break;
        }
    });
    std::uint64_t v = 1;
    for (auto _ : state) {
        if (::write(ping, &v, sizeof v) != sizeof v || ::read(pong, &v, sizeof v) != sizeof v) {
            state.SkipWithError("eventfd round trip failed");
            break;
        }
        v = 1;
    }
    v = UINT64_MAX - 1;  // the largest value eventfd accepts: tells the peer to stop
    if (::write(ping, &v, sizeof v) != sizeof v) state.SkipWithError("eventfd stop failed");
    peer.join();
    ::close(ping);
    ::close(pong);
}
BENCHMARK(BM_WakeRoundTrip)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
