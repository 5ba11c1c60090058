// RACK's reordering window (RFC 8985 §6.2 Steps 2 and 4), for
// LossDetection::rack. The loss detector owns the RACK send time and RTT
// (Steps 1 and 5); this class owns how much reordering to tolerate.
//
// QUIC has no DSACK: the signal that a loss was spurious is an
// acknowledgement of a packet already declared lost, which arrives when the
// original is delivered (TCP's DSACK follows the needless retransmission, a
// round trip later).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::transport {

class RackReorderingWindow {
public:
    // RFC 8985 §6.2 Step 4: recoveries without a spurious loss before the
    // multiplier falls back to 1.
    static constexpr int kPersist = 16;
    static constexpr int kMaxMultiplier = 255;

    // Step 2: a packet was acknowledged after a later-sent one was.
    void on_reordering() { seen_ = true; }
    [[nodiscard]] bool reordering_seen() const { return seen_; }

    // Step 4: a spurious loss. The multiplier grows at most once per round
    // trip: not again until a packet sent from now on (packet number >=
    // next_pn) is acknowledged.
    void on_spurious_loss(std::uint64_t next_pn) {
        seen_ = true;
        if (round_open_) return;
        round_open_ = true;
        round_end_ = next_pn;
        multiplier_ = std::min(multiplier_ + 1, kMaxMultiplier);
        persist_ = kPersist;
    }
    void on_largest_acked(std::uint64_t largest_acked) {
        if (round_open_ && largest_acked >= round_end_) round_open_ = false;
    }

    // Step 4 counts recoveries as they end; counting them as they start
    // gives the same count one recovery earlier, and the detector knows when
    // one starts (a loss of a packet sent after the previous one began).
    void on_recovery() {
        if (persist_ > 0) --persist_;
        if (persist_ == 0) multiplier_ = 1;
    }

    // Step 4 RACK_update_reo_wnd's result. Until reordering is seen the window
    // is 0 in recovery and once the 3-packet rule holds (dupthresh_met), so
    // the first losses are found as quickly as RFC 9002's threshold finds
    // them.
    [[nodiscard]] Duration window(bool in_recovery, bool dupthresh_met, Duration min_rtt, Duration srtt) const {
        if (!seen_ && (in_recovery || dupthresh_met)) return Duration{0};
        return std::min(min_rtt / 4 * multiplier_, srtt);
    }
    [[nodiscard]] int multiplier() const { return multiplier_; }

private:
    bool seen_ = false;
    int multiplier_ = 1;
    int persist_ = kPersist;
    bool round_open_ = false;
    std::uint64_t round_end_ = 0;
};

}  // namespace ndm::transport
