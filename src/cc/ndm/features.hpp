// Per-round-trip features for the "ndm" controller (docs/ndm-controller.md §1.2,
// "Signals"), from raw RTT samples (latest_rtt, not the smoothed srtt the
// published module used, §1.1 item 3).
//
// A round ends when a packet sent after the round began is acknowledged: one
// round trip, whatever the window (the module's 16 samples could be a tiny
// fraction of an RTT, §1.1 item 3). Delays are normalised by the windowed
// minimum RTT so that the network sees scale-free magnitudes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "cc/ndm/entropy.hpp"
#include "ndm/cc.hpp"
#include "ndm/ndm_model.hpp"
#include "ndm/time.hpp"

namespace ndm::cc::ndm {

// Feature, kFeatureCount and FeatureVector: include/ndm/ndm_model.hpp.

// Windowed minimum (Kathleen Nichols' algorithm, as Linux lib/win_minmax.c
// used by BBR): the best, second and third best samples of the window.
// Values in µs (32 bits: RTTs up to 71 minutes), 36 bytes.
class WindowedMin {
public:
    void update(Instant now, Duration v, Duration window) noexcept;
    [[nodiscard]] Duration get() const noexcept { return std::chrono::microseconds(v_[0]); }
    [[nodiscard]] bool empty() const noexcept { return v_[0] == UINT32_MAX; }

private:
    std::array<Instant, 3> t_{};
    std::array<std::uint32_t, 3> v_{UINT32_MAX, UINT32_MAX, UINT32_MAX};
};

class FeatureTracker {
public:
    static constexpr Duration kMinRttWindow = std::chrono::seconds(10);
    // Fewer samples than this in the round so far: a loss uses the last
    // complete round's distribution features.
    static constexpr std::uint32_t kMinSamples = 4;

    // Per ACK (the cost that matters: no division, no log). Returns true when
    // this ACK ended a round; round() then holds its features.
    bool on_ack(const AckEvent& ev) noexcept;
    // Counts the lost packets into the round.
    void on_loss(const CongestionEvent& ev) noexcept;
    // The features of a loss event now: the round so far (or the last round
    // when it has too few samples), with the queueing delay at the loss (the
    // RTT of the packets acknowledged around it, i.e. the latest sample) and
    // this event's run length.
    [[nodiscard]] FeatureVector at_loss(const CongestionEvent& ev) const noexcept;

    [[nodiscard]] const FeatureVector& round() const noexcept { return last_; }
    [[nodiscard]] Duration min_rtt() const noexcept { return min_rtt_.get(); }
    [[nodiscard]] bool has_min_rtt() const noexcept { return !min_rtt_.empty(); }
    // The smallest q of the last complete round / min_rtt: a queue that never
    // drained during a whole round trip is a standing queue.
    [[nodiscard]] float standing_queue() const noexcept { return standing_; }
    [[nodiscard]] std::uint32_t samples() const noexcept { return samples_; }
    // Delivery rate of the last complete round, bytes/s (rate_ratio was
    // computed as rate / max_rate at that round's end).
    [[nodiscard]] float round_rate() const noexcept { return last_[kRateRatio] * max_rate_; }

private:
    void compute(FeatureVector& out, Instant now) const noexcept;
    void start_round(Instant now) noexcept;

    WindowedMin min_rtt_;
    Instant round_start_ = Instant::min();
    // Least squares of q over time within the round, t and q in µs from the
    // round start (floats are enough for rounds of up to ~10 s).
    float sum_t_ = 0;
    float sum_q_ = 0;
    float sum_tt_ = 0;
    float sum_tq_ = 0;
    float q_last_ = 0;      // µs
    float q_min_ = 0;       // µs, this round
    float max_rate_ = 0;    // bytes/s, decays by 1/8 per round
    float standing_ = 0;
    std::uint64_t bytes_ = 0;  // acked in the round
    std::uint32_t samples_ = 0;
    std::uint32_t acked_ = 0;  // packets
    std::uint32_t lost_ = 0;   // packets
    std::uint16_t max_run_ = 0;
    DelayHistogram hist_;
    FeatureVector last_{};
};

}  // namespace ndm::cc::ndm
