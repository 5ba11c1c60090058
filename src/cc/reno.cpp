#include "cc/reno.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cc/option_values.hpp"

namespace ndm::cc {

Reno::Reno(const Params& params, const Options& options)
    : mds_(params.max_datagram_size),
      beta_(get_double(options, "beta", kDefaultBeta, 0.1, 0.95, kName)),
      cwnd_(initial_window(params.max_datagram_size)) {
    reject_unknown(options, {"beta"}, kName);
    if (mds_ == 0) {
        throw std::invalid_argument("congestion controller \"" + std::string(kName) +
                                    "\": max_datagram_size must be > 0");
    }
}

void Reno::on_ack(const AckEvent& ev) {
    recovery_.on_ack(ev.largest_acked_sent_time);
    // RFC 9002 §7.3.2: no growth for packets sent before the recovery period
    // started. Only the largest acked packet's send time is known here, so an
    // ACK that also covers older packets grows by all of its bytes.
    if (recovery_.in_recovery(ev.largest_acked_sent_time)) return;
    // RFC 9002 §7.8: a window the sender did not fill says nothing about the
    // path, so it must not grow.
    if (ev.app_limited) return;

    std::uint64_t bytes = ev.bytes_acked;
    if (cwnd_ < ssthresh_) {
        // Slow start (RFC 9002 §7.3.1), capped at ssthresh so that the outcome
        // does not depend on how many packets one ACK covers; the rest of the
        // bytes count toward congestion avoidance.
        const auto grow = std::min(bytes, ssthresh_ - cwnd_);
        cwnd_ += grow;
        bytes -= grow;
    }
    // Congestion avoidance (RFC 9002 §7.3.3, Appendix B.5) with exact byte
    // counting: one MDS per full window acknowledged.
    ca_acked_ += bytes;
    while (ca_acked_ >= cwnd_) {
        ca_acked_ -= cwnd_;
        cwnd_ += mds_;
    }
}

void Reno::on_congestion_event(const CongestionEvent& ev) {
    // RFC 9002 Appendix B.6 OnCongestionEvent: at most one reduction per
    // recovery period.
    // A CE-mark event (ev.ecn_ce, RFC 9002 §7.1, B.7) reduces the same way,
    // dated by the largest acknowledged packet's send time, so it too reduces
    // once per round; it cannot prove spurious, so it is not undoable.
    if (recovery_.start_if_new(ev.largest_lost_sent_time, ev.now)) {
        can_undo_ = ev.ecn_ce == 0;
        undo_cwnd_ = cwnd_;
        undo_ssthresh_ = ssthresh_;
        // Rounded, not truncated: 12000 * 0.7 is 8399.999... in binary.
        ssthresh_ = static_cast<std::uint64_t>(std::round(static_cast<double>(cwnd_) * beta_));
        cwnd_ = std::max(ssthresh_, minimum_window(mds_));
        ca_acked_ = 0;
    }
    // RFC 9002 §7.6.2 and Appendix B.8: after the (possible) reduction above,
    // persistent congestion collapses the window and forgets the recovery
    // period, so the sender slow-starts back up to ssthresh.
    if (ev.persistent) {
        cwnd_ = minimum_window(mds_);
        ca_acked_ = 0;
        recovery_.reset();
    }
}

void Reno::on_spurious_congestion(const SpuriousEvent&) {
    // Not in RFC 9002; the undo of RFC 9438 §4.9 (and Linux's
    // tcp_undo_cwnd_reduction): go back to the window before the last
    // reduction, never shrinking one that has grown since, and leave recovery.
    if (!can_undo_) return;
    can_undo_ = false;
    cwnd_ = std::max(cwnd_, undo_cwnd_);
    ssthresh_ = std::max(ssthresh_, undo_ssthresh_);
    ca_acked_ = 0;
    recovery_.reset();
}

void Reno::on_idle_restart(Instant) {
    // RFC 9002 §7.8 only forbids growth while under-using the window (handled
    // through AckEvent::app_limited) and leaves a reduction after idle
    // (RFC 7661-style) optional; the core's pacer (§7.7) already prevents a
    // line-rate burst of a full window. So the window is kept as it is.
}

std::string_view Reno::state() const {
    if (recovery_.active()) return "recovery";
    return cwnd_ < ssthresh_ ? "slow_start" : "congestion_avoidance";
}

}  // namespace ndm::cc
