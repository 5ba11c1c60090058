// The data sender's half of the ACK frequency extension
// (draft-ietf-quic-ack-frequency-14): which ACK_FREQUENCY frame to send and
// when. The receiver's half is AckTracker::set_frequency.
//
// Policy (§8): one ACK per cwnd/8 full-sized packets, rounded down to a power
// of two and capped at 32 (the congestion controller still hears from the
// path at least 8 times a window, §8.1), the peer's own max_ack_delay (so
// the PTO needs no change, §7), and a reordering threshold equal to loss
// detection's packet threshold (§9: a gap is reported when, and not before,
// it can be declared lost). A new frame goes out when the threshold rises,
// at most once per smoothed RTT (§8.1), and at once when it falls (after a
// congestion event) or when the latest frame was lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ndm/time.hpp"
#include "wire/frame.hpp"

namespace ndm::transport {

class AckFrequencyRequester {
public:
    static constexpr std::uint64_t kMaxThreshold = 32;
    static constexpr std::uint64_t kWindowFraction = 8;
    // The Ack-Eliciting Threshold to ask for at this congestion window.
    [[nodiscard]] static std::uint64_t threshold_for(std::uint64_t cwnd, std::size_t max_datagram_size);

    // The frame to send now, if one is due: thresholds from cwnd, the
    // peer's max_ack_delay as the requested delay, reordering_threshold.
    [[nodiscard]] std::optional<wire::AckFrequencyFrame> due(std::uint64_t cwnd, std::size_t max_datagram_size,
                                                             Duration peer_max_ack_delay,
                                                             std::uint64_t reordering_threshold, Duration srtt,
                                                             Instant now) const;
    void on_sent(const wire::AckFrequencyFrame& f, Instant now);
    // A packet carrying the frame with this sequence number was lost: if no
    // later one was sent, the next due() sends the request again.
    void on_lost(std::uint64_t sequence);
    // The threshold last asked for (1, RFC 9000's, before any).
    [[nodiscard]] std::uint64_t threshold() const { return last_ ? last_->ack_eliciting_threshold : 1; }

private:
    std::optional<wire::AckFrequencyFrame> last_;
    Instant last_sent_{};
    bool resend_ = false;
};

}  // namespace ndm::transport
