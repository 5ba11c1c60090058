#include "transport/ack_frequency.hpp"

#include <algorithm>
#include <bit>
#include <chrono>

namespace ndm::transport {

std::uint64_t AckFrequencyRequester::threshold_for(std::uint64_t cwnd, std::size_t max_datagram_size) {
    const std::uint64_t packets = cwnd / std::max<std::size_t>(max_datagram_size, 1);
    const std::uint64_t t = std::clamp<std::uint64_t>(packets / kWindowFraction, 1, kMaxThreshold);
    return std::bit_floor(t);  // powers of two: a frame only when the window doubles or halves
}

std::optional<wire::AckFrequencyFrame> AckFrequencyRequester::due(std::uint64_t cwnd, std::size_t max_datagram_size,
                                                                  Duration peer_max_ack_delay,
                                                                  std::uint64_t reordering_threshold, Duration srtt,
                                                                  Instant now) const {
    wire::AckFrequencyFrame f;
    f.sequence = last_ ? last_->sequence + 1 : 0;
    f.ack_eliciting_threshold = threshold_for(cwnd, max_datagram_size);
    f.requested_max_ack_delay_us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(peer_max_ack_delay).count());
    f.reordering_threshold = reordering_threshold;
    if (!last_ || resend_) return f;
    const bool changed = f.ack_eliciting_threshold != last_->ack_eliciting_threshold ||
                         f.requested_max_ack_delay_us != last_->requested_max_ack_delay_us ||
                         f.reordering_threshold != last_->reordering_threshold;
    if (!changed) return std::nullopt;
    // A smaller window asks for more ACKs at once: a stale, larger threshold
    // could exceed what the sender may have in flight, and the peer would
    // wait for its max_ack_delay each round trip. Raising it can wait.
    if (f.ack_eliciting_threshold < last_->ack_eliciting_threshold) return f;
    return now < last_sent_ + srtt ? std::nullopt : std::optional(f);
}

void AckFrequencyRequester::on_sent(const wire::AckFrequencyFrame& f, Instant now) {
    last_ = f;
    last_sent_ = now;
    resend_ = false;
}

void AckFrequencyRequester::on_lost(std::uint64_t sequence) {
    if (last_ && sequence == last_->sequence) resend_ = true;
}

}  // namespace ndm::transport
