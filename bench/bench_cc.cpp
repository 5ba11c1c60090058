// Cost of Controller::on_ack over a synthetic, recorded-like ACK stream.
// Controllers are created by name through ndm::cc::make, so another one is
// benchmarked by adding a BENCHMARK_CAPTURE line with its name (and options).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/cc.hpp"

namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kMds = 1200;

struct Step {
    bool loss = false;      // a congestion event precedes this ACK
    bool spurious = false;  // ... and is found spurious right after
    ndm::cc::CongestionEvent congestion;
    ndm::cc::AckEvent ack;
};

// A deterministic stream in the shape of a bulk transfer over a ~20 ms path:
// ACKs every ~100 us covering 1-2 packets (sometimes an aggregated 3-10),
// jittered RTT, short app-limited stretches, a congestion event every ~400
// ACKs (1 in 20 found spurious), rarely persistent congestion. The stream
// does not react to the controller: a replayed trace, not a simulation.
const std::vector<Step>& ack_stream() {
    static const std::vector<Step> steps = [] {
        std::mt19937_64 rng(0x5eed'cc01);
        auto chance = [&](std::uint64_t one_in) { return rng() % one_in == 0; };
        std::vector<Step> out(1 << 16);
        ndm::Instant now{};
        ndm::Duration srtt = 20ms;
        std::uint64_t in_flight = 40 * kMds;
        int app_limited_left = 0;
        for (auto& s : out) {
            now += ndm::Duration(50'000 + rng() % 100'000);  // 50-150 us between ACKs
            const ndm::Duration rtt = 20ms + ndm::Duration(rng() % 5'000'000);
            srtt = (7 * srtt + rtt) / 8;
            if (app_limited_left > 0) {
                --app_limited_left;
            } else if (chance(500)) {
                app_limited_left = 20 + static_cast<int>(rng() % 100);
            }
            const std::uint64_t packets = chance(20) ? 3 + rng() % 8 : 1 + rng() % 2;

            auto& a = s.ack;
            a.now = now;
            a.bytes_acked = packets * kMds;
            a.packets_acked = packets;
            a.has_rtt_sample = true;
            a.latest_rtt = rtt;
            a.smoothed_rtt = srtt;
            a.rttvar = 1ms;
            a.min_rtt = 20ms;
            a.prior_bytes_in_flight = in_flight;
            a.bytes_in_flight = in_flight - a.bytes_acked;
            a.largest_acked_sent_time = now - rtt;
            a.app_limited = app_limited_left > 0;

            if (chance(400)) {
                s.loss = true;
                s.spurious = chance(20);
                auto& c = s.congestion;
                c.now = now;
                c.packets_lost = 1 + rng() % 3;
                c.bytes_lost = c.packets_lost * kMds;
                c.largest_lost_sent_time = now - rtt + ndm::Duration(rng() % 1'000'000);
                c.bytes_in_flight = in_flight - c.bytes_lost;
                c.persistent = chance(100);
            }
        }
        return out;
    }();
    return steps;
}

void BM_OnAck(benchmark::State& state, std::string_view name, std::string_view options) {
    const auto& steps = ack_stream();
    ndm::cc::Params params;
    params.max_datagram_size = kMds;
    auto cc = ndm::cc::make(name, params, options);
    std::size_t i = 0;
    for (auto _ : state) {
        const auto& s = steps[i];
        if (s.loss) {
            cc->on_congestion_event(s.congestion);
            if (s.spurious) cc->on_spurious_congestion({s.ack.now});
        }
        cc->on_ack(s.ack);
        benchmark::DoNotOptimize(cc->cwnd());
        if (++i == steps.size()) {
            // The trace's clock restarts: so does the controller (once per 64 Ki ACKs).
            state.PauseTiming();
            cc = ndm::cc::make(name, params, options);
            i = 0;
            state.ResumeTiming();
        }
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(BM_OnAck, reno, "reno", "");
BENCHMARK_CAPTURE(BM_OnAck, reno_beta07, "reno", "beta=0.7");
BENCHMARK_CAPTURE(BM_OnAck, cubic, "cubic", "");
BENCHMARK_CAPTURE(BM_OnAck, ndm_lkm, "ndm-lkm", "");
BENCHMARK_CAPTURE(BM_OnAck, ndm, "ndm", "");

BENCHMARK_MAIN();
