#include "cc/hystart.hpp"

#include <algorithm>

namespace ndm::cc {

void HyStart::start_round() noexcept {
    // RFC 9406 §4.2: at the start of each round in slow start and CSS.
    last_round_min_rtt_ = current_round_min_rtt_;
    current_round_min_rtt_ = kInfinite;
    rtt_sample_count_ = 0;
    window_end_ = last_sent_;
    ++rounds_;
}

void HyStart::on_ack(const AckEvent& ev) noexcept {
    if (done()) return;

    // The round ends when a packet sent after its start is acknowledged; the
    // very first ACK ends the empty round before any packet was sent. This
    // ACK's own sample belongs to the new round: its packet was sent in it.
    if (ev.largest_acked_sent_time > window_end_) {
        if (phase_ == Phase::conservative_slow_start && ++css_rounds_ >= kCssRounds) {
            // RFC 9406 §4.2: CSS lasts at most CSS_ROUNDS rounds, the partial
            // round in which it was entered included.
            phase_ = Phase::congestion_avoidance;
            return;
        }
        start_round();
    }

    if (!ev.has_rtt_sample) return;
    current_round_min_rtt_ = std::min(current_round_min_rtt_, ev.latest_rtt);
    if (rtt_sample_count_ < kNRttSample) ++rtt_sample_count_;
    if (rtt_sample_count_ < kNRttSample) return;

    if (phase_ == Phase::slow_start) {
        if (current_round_min_rtt_ == kInfinite || last_round_min_rtt_ == kInfinite) return;
        // Delay increase: the queue is building, leave slow start early.
        if (current_round_min_rtt_ >= last_round_min_rtt_ + rtt_thresh(last_round_min_rtt_)) {
            css_baseline_min_rtt_ = current_round_min_rtt_;
            phase_ = Phase::conservative_slow_start;
            css_rounds_ = 0;
            css_remainder_ = 0;
        }
    } else if (current_round_min_rtt_ < css_baseline_min_rtt_) {
        // The RTT fell back below the baseline: the exit was spurious, resume
        // slow start (RFC 9406 §4.2).
        css_baseline_min_rtt_ = kInfinite;
        phase_ = Phase::slow_start;
    }
}

std::uint64_t HyStart::growth(std::uint64_t bytes_acked) noexcept {
    if (phase_ != Phase::conservative_slow_start) return bytes_acked;
    // cwnd += acked / CSS_GROWTH_DIVISOR, with no byte lost to truncation.
    const std::uint64_t total = bytes_acked + css_remainder_;
    css_remainder_ = static_cast<std::uint8_t>(total % kCssGrowthDivisor);
    return total / kCssGrowthDivisor;
}

}  // namespace ndm::cc
