#include "cc/bbr1.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cc/option_values.hpp"
#include "util/rng.hpp"

namespace ndm::cc {

namespace {

// tcp_bbr.c's constants.
constexpr double kHighGain = 2.885;              // 2/ln(2): doubles the sending rate each round
constexpr double kDrainGain = 1 / kHighGain;     // drains Startup's queue in one round
constexpr double kCwndGain = 2;                  // ProbeBW's window: 2 BDP
constexpr std::array<double, 8> kCycleGains = {1.25, 0.75, 1, 1, 1, 1, 1, 1};
constexpr unsigned kCycleRand = 7;               // the first phase is random, never the 0.75 one
constexpr double kPacingMargin = 0.99;           // pace 1 % below the estimate
constexpr double kFullBwThresh = 1.25;           // Startup: growth that still counts
constexpr unsigned kFullBwCount = 3;             // rounds without it end Startup
constexpr Duration kMinRttWindow = std::chrono::seconds(10);
constexpr Duration kProbeRttTime = std::chrono::milliseconds(200);
constexpr Duration kInitialRtt = std::chrono::milliseconds(1);  // before any RTT is known
constexpr std::uint64_t kInitialCwndPackets = 10;  // TCP_INIT_CWND
// ACK aggregation (bbr_extra_acked_*).
constexpr unsigned kExtraAckedWindowRounds = 5;
constexpr Duration kExtraAckedMax = std::chrono::milliseconds(100);
constexpr std::uint64_t kAckEpochResetBytes = 1u << 20;  // Linux: 2^20 packets; here bytes, ample
// Long-term sampling (bbr_lt_*).
constexpr unsigned kLtIntervalMinRounds = 4;
constexpr double kLtLossThresh = 50.0 / 256;     // 20 % loss in an interval: a policer's drops
constexpr double kLtBwRatio = 1.0 / 8;           // two intervals within 12.5 % ...
constexpr double kLtBwDiff = 4000;               // ... or within 4 kB/s: a steady policed rate
constexpr unsigned kLtBwMaxRounds = 48;          // how long the policed rate is used

}  // namespace

Bbr1::Bbr1(const Params& params, const Options& options)
    : mds_(params.max_datagram_size),
      lt_enabled_(get_bool(options, "lt_bw", true, kName)),
      aggregation_enabled_(get_bool(options, "ack_aggregation", true, kName)),
      rng_(static_cast<std::uint64_t>(params.now.time_since_epoch().count()) ^ 0xbb41u),
      cwnd_(initial_window(params.max_datagram_size)),
      pacing_gain_(kHighGain),
      cwnd_gain_(kHighGain) {
    reject_unknown(options, {"lt_bw", "ack_aggregation"}, kName);
    if (mds_ == 0) {
        throw std::invalid_argument("congestion controller \"" + std::string(kName) +
                                    "\": max_datagram_size must be positive");
    }
    // bbr_init_pacing_rate_from_rtt, before any RTT: the initial window per 1 ms.
    pacing_rate_ = kHighGain * static_cast<double>(cwnd_) / to_seconds(kInitialRtt) * kPacingMargin;
    min_rtt_stamp_ = params.now;
    ack_epoch_start_ = params.now;
}

std::string_view Bbr1::state() const {
    switch (mode_) {
        case Mode::startup: return "startup";
        case Mode::drain: return "drain";
        case Mode::probe_bw: return "probe_bw";
        case Mode::probe_rtt: return "probe_rtt";
    }
    return "?";
}

double Bbr1::bandwidth() const { return lt_use_bw_ ? lt_bw_ : bw_.get(); }

// ---------------------------------------------------------------- events

void Bbr1::on_congestion_event(const CongestionEvent& ev) {
    // CE marks (ev.ecn_ce, no loss) are ignored, as Linux's tcp_bbr.c
    // ignores ECN: BBRv1's model does not take them, and entering recovery
    // on them would throttle a window that nothing was lost from.
    if (ev.ecn_ce > 0) return;
    total_lost_ += ev.bytes_lost;
    if (ev.persistent) {
        // RFC 9002 §7.6 in the part of TCP's RTO (bbr_set_state TCP_CA_Loss):
        // the round ends, Startup's growth check starts over, the window
        // falls to the minimum and is restored when recovery ends.
        save_cwnd();
        recovery_.start_if_new(ev.largest_lost_sent_time, ev.now);
        prev_in_recovery_ = true;  // restored on exit, no conservation on entry
        full_bw_ = 0;
        round_start_ = true;
        cwnd_ = min_pipe_cwnd();
        return;
    }
    // RFC 9002 §7.3.2: one recovery period per round of losses; the window
    // before it is kept to restore (bbr_save_cwnd via ssthresh).
    if (recovery_.start_if_new(ev.largest_lost_sent_time, ev.now)) save_cwnd();
}

void Bbr1::on_spurious_congestion(const SpuriousEvent&) {
    // bbr_undo_cwnd: the loss was not one; Startup's plateau count and the
    // policer detection start over, and the window before recovery returns.
    full_bw_ = 0;
    full_bw_count_ = 0;
    lt_reset();
    if (recovery_.active()) {
        recovery_.reset();
        prev_in_recovery_ = false;
        packet_conservation_ = false;
        cwnd_ = std::max(cwnd_, prior_cwnd_);
    }
}

void Bbr1::on_idle_restart(Instant now) {
    // CA_EVENT_TX_START: no ProbeRTT for a sender coming back from idle, and
    // ProbeBW paces at the estimate rather than probing above it at once.
    idle_restart_ = true;
    ack_epoch_start_ = now;
    ack_epoch_acked_ = 0;
    if (mode_ == Mode::probe_bw) set_pacing_rate(bandwidth(), 1.0, nullptr);
}

void Bbr1::on_ack(const AckEvent& ev) {
    recovery_.on_ack(ev.largest_acked_sent_time);
    // bbr_main: the model, then the gains it implies, then rate and window.
    update_bandwidth(ev);
    update_ack_aggregation(ev);
    update_cycle_phase(ev);
    check_full_bandwidth(ev.rate);
    check_drain(ev);
    update_min_rtt(ev);
    update_gains();
    set_pacing_rate(bandwidth(), pacing_gain_, &ev);
    set_cwnd(ev);
}

// ---------------------------------------------------------------- the model

// bbr_update_bw: a round ends when a packet sent after its start is
// acknowledged; the sample joins the max filter unless it is app-limited and
// below the estimate (it then says only that the path is at least that fast).
void Bbr1::update_bandwidth(const AckEvent& ev) {
    round_start_ = false;
    const RateSample& rs = ev.rate;
    if (!rs.valid) return;
    if (rs.prior_delivered >= next_round_delivered_) {
        next_round_delivered_ = rs.total_delivered;
        ++round_count_;
        round_start_ = true;
        packet_conservation_ = false;
    }
    if (lt_enabled_) lt_sampling(ev);
    if (!rs.is_app_limited || rs.delivery_rate >= bw_.get()) bw_.update(round_count_, rs.delivery_rate);
}

// bbr_update_ack_aggregation: data acknowledged beyond bw × time since the
// epoch began is what ACK aggregation (Wi-Fi, cellular, delayed ACKs)
// delivers in bursts; the window gets that much on top (capped at 100 ms).
void Bbr1::update_ack_aggregation(const AckEvent& ev) {
    if (!aggregation_enabled_ || ev.bytes_acked == 0 || !ev.rate.valid) return;
    if (round_start_) {
        extra_acked_rounds_ = std::min(extra_acked_rounds_ + 1, 0x1Fu);
        if (extra_acked_rounds_ >= kExtraAckedWindowRounds) {
            extra_acked_rounds_ = 0;
            extra_acked_index_ ^= 1;
            extra_acked_[extra_acked_index_] = 0;
        }
    }
    auto expected = static_cast<std::uint64_t>(bw_.get() * to_seconds(ev.now - ack_epoch_start_));
    // A new epoch when the ACK rate fell to the estimate, or the count grew large.
    if (ack_epoch_acked_ <= expected || ack_epoch_acked_ + ev.bytes_acked >= kAckEpochResetBytes) {
        ack_epoch_acked_ = 0;
        ack_epoch_start_ = ev.now;
        expected = 0;
    }
    ack_epoch_acked_ += ev.bytes_acked;
    const std::uint64_t extra = std::min(ack_epoch_acked_ - std::min(ack_epoch_acked_, expected), cwnd_);
    extra_acked_[extra_acked_index_] = std::max(extra_acked_[extra_acked_index_], extra);
}

std::uint64_t Bbr1::ack_aggregation_allowance() const {
    if (!aggregation_enabled_ || !full_bw_reached_) return 0;
    const auto cap = static_cast<std::uint64_t>(bw_.get() * to_seconds(kExtraAckedMax));
    return std::min(std::max(extra_acked_[0], extra_acked_[1]), cap);
}

// bbr_update_cycle_phase / bbr_is_next_cycle_phase: a phase lasts a min_rtt;
// probing (1.25) lasts until it built its extra inflight or saw loss, and
// draining (0.75) ends early once inflight is down to the BDP.
void Bbr1::update_cycle_phase(const AckEvent& ev) {
    if (mode_ != Mode::probe_bw) return;
    const bool full_length = min_rtt_ && ev.now - cycle_stamp_ > *min_rtt_;
    const double gain = pacing_gain_;
    const std::uint64_t prior_inflight = ev.prior_bytes_in_flight;
    bool next = full_length;
    if (gain > 1) {
        next = full_length && (ev.rate.newly_lost > 0 || prior_inflight >= inflight(bw_.get(), gain));
    } else if (gain < 1) {
        next = full_length || prior_inflight <= inflight(bw_.get(), 1);
    }
    if (next) advance_cycle_phase(ev.now);
}

void Bbr1::advance_cycle_phase(Instant now) {
    cycle_index_ = (cycle_index_ + 1) % kCycleGains.size();
    cycle_stamp_ = now;
}

// bbr_check_full_bw_reached: Startup ends after three rounds in which the
// bandwidth grew by less than 25 % (app-limited rounds do not count).
void Bbr1::check_full_bandwidth(const RateSample& rs) {
    if (full_bw_reached_ || !round_start_ || rs.is_app_limited) return;
    if (bw_.get() >= full_bw_ * kFullBwThresh) {
        full_bw_ = bw_.get();
        full_bw_count_ = 0;
        return;
    }
    full_bw_reached_ = ++full_bw_count_ >= kFullBwCount;
}

// bbr_check_drain: Startup → Drain once the pipe is full; Drain → ProbeBW
// once inflight is down to the BDP.
void Bbr1::check_drain(const AckEvent& ev) {
    if (mode_ == Mode::startup && full_bw_reached_) mode_ = Mode::drain;
    if (mode_ == Mode::drain && ev.bytes_in_flight <= inflight(bw_.get(), 1)) enter_probe_bw(ev.now);
}

void Bbr1::enter_probe_bw(Instant now) {
    mode_ = Mode::probe_bw;
    // bbr_reset_probe_bw_mode: a random phase other than the draining one.
    const auto r = static_cast<unsigned>(util::splitmix64_next(rng_) % kCycleRand);
    cycle_index_ = static_cast<unsigned>(kCycleGains.size()) - 1 - r;
    advance_cycle_phase(now);
}

// bbr_update_min_rtt: a new minimum, or any sample once the minimum is 10 s
// old; when it expired, ProbeRTT cuts the window to 4 packets for 200 ms and
// a round, so the queue drains and the true minimum shows.
void Bbr1::update_min_rtt(const AckEvent& ev) {
    const RateSample& rs = ev.rate;
    const bool expired = ev.now > min_rtt_stamp_ + kMinRttWindow;
    if (rs.rtt > Duration::zero() && (!min_rtt_ || rs.rtt < *min_rtt_ || expired)) {
        min_rtt_ = rs.rtt;
        min_rtt_stamp_ = ev.now;
    }
    if (expired && !idle_restart_ && mode_ != Mode::probe_rtt) {
        mode_ = Mode::probe_rtt;
        save_cwnd();
        probe_rtt_done_.reset();
    }
    if (mode_ == Mode::probe_rtt) {
        if (!probe_rtt_done_ && ev.bytes_in_flight <= min_pipe_cwnd()) {
            probe_rtt_done_ = ev.now + kProbeRttTime;
            probe_rtt_round_done_ = false;
            next_round_delivered_ = rs.total_delivered;
        } else if (probe_rtt_done_) {
            if (round_start_) probe_rtt_round_done_ = true;
            if (probe_rtt_round_done_ && ev.now > *probe_rtt_done_) {
                min_rtt_stamp_ = ev.now;
                cwnd_ = std::max(cwnd_, prior_cwnd_);
                if (full_bw_reached_) {
                    enter_probe_bw(ev.now);
                } else {
                    mode_ = Mode::startup;
                }
            }
        }
    }
    if (rs.delivered > 0) idle_restart_ = false;
}

void Bbr1::update_gains() {
    switch (mode_) {
        case Mode::startup:
            pacing_gain_ = cwnd_gain_ = kHighGain;
            break;
        case Mode::drain:
            pacing_gain_ = kDrainGain;
            cwnd_gain_ = kHighGain;  // keeps the window while the queue drains
            break;
        case Mode::probe_bw:
            pacing_gain_ = lt_use_bw_ ? 1.0 : kCycleGains[cycle_index_];
            cwnd_gain_ = kCwndGain;
            break;
        case Mode::probe_rtt:
            pacing_gain_ = cwnd_gain_ = 1.0;
            break;
    }
}

// ---------------------------------------------------------------- rate and window

// bbr_set_pacing_rate: bw × gain, 1 % under; in Startup it only rises, so a
// sample that fell short does not slow the search.
void Bbr1::set_pacing_rate(double bw, double gain, const AckEvent* ev) {
    if (!has_seen_rtt_ && ev && ev->smoothed_rtt > Duration::zero()) {
        has_seen_rtt_ = true;
        // bbr_init_pacing_rate_from_rtt, now that an RTT is known.
        pacing_rate_ = kHighGain * static_cast<double>(cwnd_) / to_seconds(ev->smoothed_rtt) * kPacingMargin;
    }
    if (bw <= 0) return;
    const double rate = bw * gain * kPacingMargin;
    if (full_bw_reached_ || rate > pacing_rate_) pacing_rate_ = rate;
}

// bbr_bdp: bw × min_rtt × gain, rounded up to whole datagrams; before any
// RTT is known, the initial window.
std::uint64_t Bbr1::bdp(double bw, double gain) const {
    if (!min_rtt_) return kInitialCwndPackets * mds_;
    const double bytes = bw * to_seconds(*min_rtt_) * gain;
    return static_cast<std::uint64_t>(std::ceil(bytes / static_cast<double>(mds_))) * mds_;
}

// bbr_quantization_budget: room for three send quanta in flight (the GSO
// batches of about 1 ms at the pacing rate, 1–127 datagrams), an even
// number of datagrams, and two more while probing at 1.25.
std::uint64_t Bbr1::quantization_budget(std::uint64_t cwnd) const {
    const std::uint64_t min_segs = pacing_rate_ < 150'000 ? 1 : 2;  // bbr_min_tso_segs: 1.2 Mbit/s
    const auto quantum = static_cast<std::uint64_t>(std::min(pacing_rate_ * 1e-3, 65536.0)) / mds_;
    const std::uint64_t segs = std::min<std::uint64_t>(std::max(quantum, min_segs), 127);
    std::uint64_t packets = (cwnd + mds_ - 1) / mds_ + 3 * segs;
    packets = (packets + 1) & ~std::uint64_t{1};
    if (mode_ == Mode::probe_bw && cycle_index_ == 0) packets += 2;
    return packets * mds_;
}

std::uint64_t Bbr1::inflight(double bw, double gain) const { return quantization_budget(bdp(bw, gain)); }

// Linux's TCP_CA_Recovery lasts until every hole below the recovery point
// is repaired (snd_una reaches high_seq): the retransmissions sent as the
// losses are detected must be acknowledged too, about a round after RFC
// 9002's recovery period (§7.3.2) ends. BBR's packet conservation and its
// restore key on that state, so bbr1 keeps it until a packet sent one
// min_rtt after the period began is acknowledged. With the RFC 9002 period
// alone, 5 % loss started a new episode, and a round of conservation, every
// round: 10.2 Mbit/s on a 20 Mbit/s in-order-jitter path where kernel BBR
// gets 16.7 (bench/results/2026-12-04-kernel-fidelity.md).
bool Bbr1::in_tcp_recovery(const AckEvent& ev) const {
    if (recovery_.active()) return true;
    return min_rtt_ && recovery_.start() != Instant::min() && ev.largest_acked_sent_time <= recovery_.start() + *min_rtt_;
}

void Bbr1::save_cwnd() {
    // bbr_save_cwnd: in recovery (as the controller last saw it:
    // prev_ca_state) or ProbeRTT the window is already cut; keep the larger
    // one from before.
    if (!prev_in_recovery_ && mode_ != Mode::probe_rtt) {
        prior_cwnd_ = cwnd_;
    } else {
        prior_cwnd_ = std::max(prior_cwnd_, cwnd_);
    }
}

// bbr_set_cwnd_to_recover_or_restore: losses come off the window; the first
// round of recovery follows packet conservation (no more in flight than was
// just acknowledged); leaving recovery restores the window from before.
// True while conservation holds the window.
bool Bbr1::recover_or_restore(const AckEvent& ev, std::uint64_t lost) {
    const bool in_recovery = in_tcp_recovery(ev);
    if (lost > 0) cwnd_ = std::max(cwnd_ - std::min(cwnd_, lost), mds_);
    if (in_recovery && !prev_in_recovery_) {
        packet_conservation_ = true;
        next_round_delivered_ = ev.rate.total_delivered;  // a round starts now
        cwnd_ = ev.bytes_in_flight + ev.bytes_acked;
    } else if (prev_in_recovery_ && !in_recovery) {
        cwnd_ = std::max(cwnd_, prior_cwnd_);
        packet_conservation_ = false;
    }
    prev_in_recovery_ = in_recovery;
    if (packet_conservation_) {
        cwnd_ = std::max(cwnd_, ev.bytes_in_flight + ev.bytes_acked);
        return true;
    }
    return false;
}

// bbr_set_cwnd: towards cwnd_gain × BDP plus the budget and the ACK
// aggregation allowance, growing by what was acknowledged; before the pipe
// is full, growth never stops below the target. Never under 4 datagrams,
// and at most 4 in ProbeRTT.
void Bbr1::set_cwnd(const AckEvent& ev) {
    if (ev.bytes_acked > 0 && !recover_or_restore(ev, ev.rate.newly_lost)) {
        std::uint64_t target = bdp(bw_.get(), cwnd_gain_);
        target += ack_aggregation_allowance();
        target = quantization_budget(target);
        if (full_bw_reached_) {
            cwnd_ = std::min(cwnd_ + ev.bytes_acked, target);
        } else if (cwnd_ < target || ev.rate.total_delivered < kInitialCwndPackets * mds_) {
            cwnd_ += ev.bytes_acked;
        }
        cwnd_ = std::max(cwnd_, min_pipe_cwnd());
    }
    if (mode_ == Mode::probe_rtt) cwnd_ = std::min(cwnd_, min_pipe_cwnd());
}

// ---------------------------------------------------------------- policer detection

// bbr_lt_bw_sampling: a token-bucket policer shows as an interval of 4–16
// rounds with at least 20 % loss at a steady delivery rate; two such
// intervals whose rates agree make that rate the estimate for 48 rounds.
void Bbr1::lt_sampling(const AckEvent& ev) {
    const RateSample& rs = ev.rate;
    if (lt_use_bw_) {
        if (mode_ == Mode::probe_bw && round_start_ && ++lt_rounds_ >= kLtBwMaxRounds) {
            lt_reset();
            enter_probe_bw(ev.now);
        }
        return;
    }
    // An interval starts at a loss, so it spans the policer's drops.
    if (!lt_sampling_) {
        if (rs.newly_lost == 0) return;
        lt_reset_interval(rs, ev.now);
        lt_sampling_ = true;
    }
    if (rs.is_app_limited) {  // an app-limited interval says nothing of the path
        lt_reset();
        return;
    }
    if (round_start_) ++lt_rounds_;
    if (lt_rounds_ < kLtIntervalMinRounds) return;
    if (lt_rounds_ > 4 * kLtIntervalMinRounds) {
        lt_reset();
        return;
    }
    if (rs.newly_lost == 0) return;  // intervals end at a loss, too
    const std::uint64_t lost = total_lost_ - lt_last_lost_;
    const std::uint64_t delivered = rs.total_delivered - lt_last_delivered_;
    if (delivered == 0 || static_cast<double>(lost) < kLtLossThresh * static_cast<double>(delivered)) return;
    const double seconds = to_seconds(ev.now - lt_last_stamp_);
    if (seconds < 1e-3) return;  // Linux measures in ms
    lt_interval_done(static_cast<double>(delivered) / seconds, rs, ev.now);
}

void Bbr1::lt_interval_done(double bw, const RateSample& rs, Instant now) {
    if (lt_bw_ > 0) {
        const double diff = std::abs(bw - lt_bw_);
        if (diff <= kLtBwRatio * lt_bw_ || diff <= kLtBwDiff) {
            lt_bw_ = (bw + lt_bw_) / 2;  // policed: use the average of both
            lt_use_bw_ = true;
            pacing_gain_ = 1.0;
            lt_rounds_ = 0;
            return;
        }
    }
    lt_bw_ = bw;  // the next interval starts here, to be compared with this one
    lt_reset_interval(rs, now);
}

void Bbr1::lt_reset_interval(const RateSample& rs, Instant now) {
    lt_last_stamp_ = now;
    lt_last_delivered_ = rs.total_delivered;
    lt_last_lost_ = total_lost_;
    lt_rounds_ = 0;
}

void Bbr1::lt_reset() {
    lt_bw_ = 0;
    lt_use_bw_ = false;
    lt_sampling_ = false;
    lt_rounds_ = 0;
}

}  // namespace ndm::cc
