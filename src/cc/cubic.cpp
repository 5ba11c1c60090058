#include "cc/cubic.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cc/option_values.hpp"

namespace ndm::cc {

Cubic::Cubic(const Params& params, const Options& options)
    : mds_(static_cast<std::uint32_t>(params.max_datagram_size)),
      fast_convergence_(get_bool(options, "fast_convergence", true, kName)),
      hystart_enabled_(get_bool(options, "hystart", true, kName)),
      beta_(get_double(options, "beta", kDefaultBeta, 0.5, 0.9, kName)),
      c_(get_double(options, "c", kDefaultC, 0.1, 4, kName)),
      alpha_cubic_(3 * (1 - beta_) / (1 + beta_)) {
    reject_unknown(options, {"beta", "c", "fast_convergence", "hystart"}, kName);
    if (params.max_datagram_size == 0 || params.max_datagram_size > UINT32_MAX) {
        throw std::invalid_argument("congestion controller \"" + std::string(kName) +
                                    "\": max_datagram_size must be in 1..4294967295");
    }
    s_.cwnd = initial_window(mds_);
    // Off: a HyStart++ that has already finished leaves plain slow start.
    if (!hystart_enabled_) hystart_.on_congestion();
}

void Cubic::on_ack(const AckEvent& ev) {
    recovery_.on_ack(ev.largest_acked_sent_time);
    last_ack_ = ev.now;

    if (s_.cwnd < s_.ssthresh && !hystart_.done()) {
        hystart_.on_ack(ev);
        if (hystart_.done()) {
            // CSS_ROUNDS rounds of CSS without loss (RFC 9406 §4.2): congestion
            // avoidance from here, and since W_max is unknown, the curve starts
            // flat at the current window (RFC 9438 §4.10).
            s_.ssthresh = s_.cwnd;
            s_.cwnd_prior = static_cast<double>(s_.cwnd) / mds_d();
            s_.w_max_from_epoch = true;
            s_.epoch_started = false;
        }
    }

    // RFC 9002 §7.3.2: no growth for packets sent before the recovery period
    // started (only the largest acked packet's send time is known).
    if (recovery_.in_recovery(ev.largest_acked_sent_time)) return;
    // RFC 9438 §5.8 / RFC 9002 §7.8: a window the sender did not fill says
    // nothing about the path: no growth, and the curve's clock stops.
    if (ev.app_limited) {
        if (s_.epoch_started && !paused_) {
            paused_ = true;
            paused_since_ = ev.now;
        }
        return;
    }
    if (paused_) {
        paused_ = false;
        if (s_.epoch_started) s_.epoch_start += ev.now - paused_since_;
    }

    std::uint64_t bytes = ev.bytes_acked;
    if (s_.cwnd < s_.ssthresh) {
        if (hystart_.phase() == HyStart::Phase::conservative_slow_start) {
            s_.cwnd += hystart_.growth(bytes);  // ssthresh is still unset in CSS
            return;
        }
        // Slow start, capped at ssthresh; the rest counts toward congestion
        // avoidance so that the outcome does not depend on ACK aggregation.
        const auto grow = std::min(bytes, s_.ssthresh - s_.cwnd);
        s_.cwnd += grow;
        bytes -= grow;
        if (bytes == 0) return;
    }
    congestion_avoidance(ev, bytes);
}

void Cubic::start_epoch(Instant now) noexcept {
    s_.epoch_started = true;
    s_.epoch_start = now;
    s_.cwnd_epoch = static_cast<double>(s_.cwnd) / mds_d();
    if (s_.w_max_from_epoch || s_.w_max <= s_.cwnd_epoch) {
        // After a timeout (§4.8), a loss-free slow-start exit (§4.10), or when
        // the window already exceeds W_max: the curve's plateau is here and
        // the convex part starts at once (K = 0).
        s_.w_max = s_.cwnd_epoch;
        s_.k = 0;
        s_.w_max_from_epoch = false;
    } else {
        s_.k = std::cbrt((s_.w_max - s_.cwnd_epoch) / c_);  // RFC 9438 §4.2, Figure 2
    }
    // RFC 9438 §4.3: W_est starts at cwnd_epoch, with α_cubic until it
    // reaches cwnd_prior.
    s_.w_est = s_.cwnd_epoch;
    s_.alpha_one = s_.w_est >= s_.cwnd_prior;
    growth_remainder_ = 0;
}

void Cubic::congestion_avoidance(const AckEvent& ev, std::uint64_t bytes) noexcept {
    // The epoch begins with the first ACK that may grow the window in
    // congestion avoidance: after the recovery period, like Linux's
    // epoch_start, so that recovery time does not count as growth time.
    if (!s_.epoch_started) start_epoch(ev.now);
    const double cwnd = static_cast<double>(s_.cwnd);
    const double t = to_seconds(ev.now - s_.epoch_start);

    // Reno-friendly estimate (RFC 9438 §4.3): W_est += α·segments_acked/cwnd,
    // which in bytes is α·bytes/cwnd segments. Kept as a double; the rounding
    // error is ~1e-16 of W_est per ACK.
    s_.w_est += alpha() * static_cast<double>(bytes) / cwnd;
    if (!s_.alpha_one && s_.w_est >= s_.cwnd_prior) s_.alpha_one = true;

    reno_friendly_ = w_cubic(t) < s_.w_est;
    if (reno_friendly_) {
        const auto est = static_cast<std::uint64_t>(s_.w_est * mds_d());
        if (est > s_.cwnd) s_.cwnd = est;
        return;
    }

    // Concave and convex regions (RFC 9438 §4.4, §4.5). The target looks one
    // RTT ahead; RTT is the smoothed RTT as the RFC says (Linux uses the
    // minimum RTT, which aims lower while a queue builds): with ACKs arriving
    // over one RTT, cwnd then tracks W_cubic(t) itself rather than lagging it.
    const double target = w_cubic(t + to_seconds(ev.smoothed_rtt)) * mds_d();
    if (!(target > cwnd)) return;  // clamp to cwnd: no growth (NaN-safe)
    const std::uint64_t target_bytes = target >= 1.5 * cwnd
                                           ? s_.cwnd + s_.cwnd / 2
                                           : static_cast<std::uint64_t>(target);

    // cwnd += (target − cwnd)/cwnd segments per acked segment, which is
    // (target − cwnd)·bytes/cwnd bytes; the division's remainder is carried
    // to the next ACK, so no byte of growth is lost or invented. 128 bits:
    // (cwnd/2)·bytes overflows 64 bits for multi-GB windows.
    // The 64-bit division is taken whenever the product fits (always, short
    // of multi-GB windows): a 128-bit one is a slow library call.
    __extension__ using u128 = unsigned __int128;
    const u128 num = static_cast<u128>(target_bytes - s_.cwnd) * bytes + growth_remainder_;
    if (num >> 64 == 0) {
        const auto n64 = static_cast<std::uint64_t>(num);
        growth_remainder_ = n64 % s_.cwnd;
        s_.cwnd += n64 / s_.cwnd;
        return;
    }
    const u128 q = num / s_.cwnd;
    growth_remainder_ = static_cast<std::uint64_t>(num - q * s_.cwnd);
    s_.cwnd += static_cast<std::uint64_t>(q);
}

void Cubic::on_congestion_event_scaled(const CongestionEvent& ev, double beta) {
    if (recovery_.start_if_new(ev.largest_lost_sent_time, ev.now)) {
        // RFC 9002 Appendix B.6: one reduction per recovery period. CE marks
        // (ev.ecn_ce) reduce as a loss does (RFC 9438 §4.6 with RFC 8311's
        // optional smaller β not taken), but are never spurious: no undo.
        can_undo_ = ev.ecn_ce == 0;
        saved_ = s_;
        saved_hystart_phase_ = hystart_.phase();
        hystart_.on_congestion();  // RFC 9406 §4.2: loss ends slow start and CSS

        // RFC 9438 §4.6 and §4.7.
        const double cwnd_seg = static_cast<double>(s_.cwnd) / mds_d();
        s_.cwnd_prior = cwnd_seg;
        s_.w_max = fast_convergence_ && cwnd_seg < s_.w_max ? cwnd_seg * (1 + beta) / 2
                                                             : cwnd_seg;
        // ssthresh from cwnd, not from the flight size of §4.6: the core
        // reports flight after removing the lost packets, which undercounts
        // what the path held, and an app-limited sender's cwnd is not inflated
        // because it does not grow (RFC 9002 §7.3.2 and Linux use cwnd too).
        // Rounded, not truncated: 12000 · 0.7 is 8399.999... in binary. At
        // least the minimum window (§4.6: ssthresh ≥ 2 segments).
        s_.ssthresh = std::max(
            static_cast<std::uint64_t>(std::round(static_cast<double>(s_.cwnd) * beta)),
            minimum_window(mds_));
        s_.cwnd = s_.ssthresh;
        s_.epoch_started = false;
        s_.w_max_from_epoch = false;
        growth_remainder_ = 0;
        paused_ = false;
    }
    if (ev.persistent) {
        // RFC 9002 §7.6.2: collapse to the minimum window and forget the
        // recovery period; the next epoch starts with K = 0 and W_max at its
        // own cwnd, as after a timeout (RFC 9438 §4.8).
        s_.cwnd = minimum_window(mds_);
        s_.epoch_started = false;
        s_.w_max_from_epoch = true;
        growth_remainder_ = 0;
        paused_ = false;
        recovery_.reset();
    }
}

void Cubic::on_spurious_congestion(const SpuriousEvent&) {
    // RFC 9438 §4.9: restore cwnd, ssthresh, W_max, K, cwnd_prior, W_est and
    // the epoch (and HyStart++ if the loss ended it), never shrinking a
    // window that has grown since, and leave recovery.
    if (!can_undo_) return;
    can_undo_ = false;
    const auto cwnd_now = s_.cwnd;
    s_ = saved_;
    s_.cwnd = std::max(s_.cwnd, cwnd_now);
    // Only the phase: the rounds marked by packets sent since the loss stay.
    hystart_.restore_phase(saved_hystart_phase_);
    growth_remainder_ = 0;
    paused_ = false;
    recovery_.reset();
}

void Cubic::on_idle_restart(Instant now) {
    // RFC 9438 §5.8: idle time does not count as growth time. Nothing was in
    // flight since the last ACK; if an app-limited pause is already running
    // it will cover the idle time when growth resumes.
    if (!s_.epoch_started || paused_ || last_ack_ == Instant::min()) return;
    if (now > last_ack_ && last_ack_ >= s_.epoch_start) s_.epoch_start += now - last_ack_;
}

std::string_view Cubic::state() const {
    if (recovery_.active()) return "recovery";
    if (s_.cwnd >= s_.ssthresh) return "congestion_avoidance";
    return hystart_.phase() == HyStart::Phase::conservative_slow_start
               ? "conservative_slow_start"
               : "slow_start";
}

}  // namespace ndm::cc
