#include "transport/rtt_estimator.hpp"

#include <algorithm>

namespace ndm::transport {

void RttEstimator::update(Duration latest_rtt, Duration ack_delay, bool handshake_confirmed,
                          Duration max_ack_delay) {
    latest_rtt = std::max(latest_rtt, Duration{0});
    ack_delay = std::max(ack_delay, Duration{0});
    latest_ = latest_rtt;
    if (!has_sample_) {
        // RFC 9002 §5.3: the first sample initializes everything.
        has_sample_ = true;
        min_ = latest_rtt;
        smoothed_ = latest_rtt;
        rttvar_ = latest_rtt / 2;
        return;
    }
    // RFC 9002 §5.2: min_rtt uses the raw sample, never adjusted for ack_delay.
    min_ = std::min(min_, latest_rtt);
    // RFC 9002 §5.3: the peer's max_ack_delay bounds ack_delay only once the
    // handshake is confirmed (before that the value is not authenticated).
    if (handshake_confirmed) ack_delay = std::min(ack_delay, max_ack_delay);
    // Subtract ack_delay only if that does not take the sample below min_rtt.
    // Compared as latest - min (>= 0 here): min_ + ack_delay overflows for a
    // peer's ack_delay near Duration::max(), which is not capped before the
    // handshake is confirmed.
    Duration adjusted = latest_rtt;
    if (latest_rtt - min_ >= ack_delay) adjusted = latest_rtt - ack_delay;
    const Duration diff = smoothed_ > adjusted ? smoothed_ - adjusted : adjusted - smoothed_;
    rttvar_ = (3 * rttvar_ + diff) / 4;
    smoothed_ = (7 * smoothed_ + adjusted) / 8;
}

Duration RttEstimator::pto_period(Duration max_ack_delay) const {
    return smoothed_ + std::max(4 * rttvar_, kGranularity) + max_ack_delay;
}

}  // namespace ndm::transport
