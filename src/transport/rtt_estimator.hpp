// RTT estimation (RFC 9002 §5): min_rtt, an exponentially weighted
// smoothed_rtt and rttvar, and the probe timeout period derived from them.
#pragma once

#include <chrono>

#include "ndm/time.hpp"

namespace ndm::transport {

// RFC 9002 §6.1.2: timer granularity; §6.2.2: RTT assumed before any sample.
inline constexpr Duration kGranularity = std::chrono::milliseconds{1};
inline constexpr Duration kInitialRtt = std::chrono::milliseconds{333};

class RttEstimator {
public:
    // One RTT sample (RFC 9002 §5.3). ack_delay is the peer's reported delay;
    // it is capped by max_ack_delay once the handshake is confirmed.
    void update(Duration latest_rtt, Duration ack_delay, bool handshake_confirmed,
                Duration max_ack_delay);

    // RFC 9002 §5.2: after persistent congestion, min_rtt restarts from the
    // newest sample (the path may have changed).
    void reset_min_rtt() { min_ = latest_; }

    [[nodiscard]] bool has_sample() const { return has_sample_; }
    [[nodiscard]] Duration latest() const { return latest_; }
    [[nodiscard]] Duration smoothed() const { return smoothed_; }
    [[nodiscard]] Duration rttvar() const { return rttvar_; }
    [[nodiscard]] Duration min() const { return min_; }

    // RFC 9002 §6.2.1: smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay.
    [[nodiscard]] Duration pto_period(Duration max_ack_delay) const;

private:
    bool has_sample_ = false;
    Duration latest_{0};
    Duration smoothed_ = kInitialRtt;    // RFC 9002 §5.3 / §6.2.2 before the first sample
    Duration rttvar_ = kInitialRtt / 2;
    Duration min_{0};
};

}  // namespace ndm::transport
