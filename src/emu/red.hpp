// RED's marking decision (Floyd & Jacobson, "Random Early Detection Gateways
// for Congestion Avoidance", IEEE/ACM ToN 1993, §4 and Figure 2), on the
// backlog a datagram finds at the bottleneck.
//
// With the weight w_q = 1 (QueueConfig::red_wq's default) the "average" is
// the instantaneous backlog and there is no count spacing: each verdict
// depends on this datagram's queue alone, as with DualPI2's step (and as
// ndm's ecn=red always did). With w_q < 1 it is the paper's RED: an EWMA of
// the backlog, decayed over idle periods as if m small packets had arrived
// to an empty queue (m = idle time / typical transmission time), and the
// marking probability spread by the count of datagrams since the last mark,
// p_a = p_b / (1 - count * p_b), so marks come at roughly even intervals: at
// most 1/p_b datagrams apart while the average stays in the ramp.
#pragma once

#include <cmath>
#include <cstddef>

#include "ndm/emu.hpp"
#include "emu/streams.hpp"

namespace ndm::emu {

class RedMarker {
public:
    // typical_tx: the transmission time of a typical packet at the bottleneck
    // (the paper's s), which turns an idle period into packet arrivals.
    RedMarker(const QueueConfig& q, Duration typical_tx)
        : min_(static_cast<double>(q.red_min)), max_(static_cast<double>(q.red_max)), max_p_(q.red_max_p),
          wq_(q.red_wq), typical_tx_(typical_tx) {}

    // The verdict for a datagram arriving at `now` to `backlog` queued places;
    // `idle_since` is when the queue last emptied (used when backlog is 0).
    bool picks(std::size_t backlog, Instant now, Instant idle_since, Rng& rng) {
        if (wq_ >= 1) return ramp(static_cast<double>(backlog), 0, rng);
        update_average(backlog, now, idle_since);
        if (avg_ < min_) {
            count_ = -1;
            return false;
        }
        if (avg_ >= max_) {
            count_ = 0;
            return true;
        }
        ++count_;
        const bool pick = ramp(avg_, count_, rng);
        if (pick) count_ = 0;
        return pick;
    }

    [[nodiscard]] double average() const { return avg_; }

private:
    void update_average(std::size_t backlog, Instant now, Instant idle_since) {
        if (backlog > 0 || typical_tx_ <= Duration::zero()) {
            avg_ = (1 - wq_) * avg_ + wq_ * static_cast<double>(backlog);
            return;
        }
        // Instant::min(): the queue has never served anything (the average is 0 still).
        if (idle_since == Instant::min() || now <= idle_since) return;
        const double m = to_seconds(now - idle_since) / to_seconds(typical_tx_);
        avg_ *= std::pow(1 - wq_, m);
    }

    // The linear ramp from min to max, spread by `count` (0: no spacing).
    bool ramp(double q, int count, Rng& rng) const {
        if (q < min_) return false;
        if (q >= max_) return true;
        const double pb = max_p_ * (q - min_) / (max_ - min_);
        if (count <= 0) return rng.chance(pb);
        const double spread = 1 - count * pb;
        return spread <= 0 || rng.chance(pb / spread);
    }

    double min_, max_, max_p_, wq_;
    Duration typical_tx_;
    double avg_ = 0;
    int count_ = -1;
};

}  // namespace ndm::emu
