#include "cc/bbr.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "cc/option_values.hpp"
#include "util/rng.hpp"

namespace ndm::cc {

namespace {

// §2.5–§2.16 and the table of §5.6.1.
constexpr double kStartupPacingGain = 2.77;  // 4 ln 2: doubles the rate each round
constexpr double kDrainPacingGain = 0.5;
constexpr double kDefaultCwndGain = 2.0;
constexpr double kProbeDownPacingGain = 0.90;
constexpr double kProbeUpPacingGain = 1.25;
constexpr double kProbeUpCwndGain = 2.25;
constexpr double kProbeRttCwndGain = 0.5;
constexpr double kPacingMargin = 0.01;  // PacingMarginPercent
constexpr double kFullBwGrowth = 1.25;
constexpr unsigned kFullBwCount = 3;
constexpr unsigned kStartupFullLossCnt = 6;  // §5.3.1.3
constexpr std::uint64_t kExtraAckedFilterLen = 10;
constexpr std::uint64_t kRenoRoundsBound = 63;  // §5.3.3.8.2
constexpr Duration kMinRttFilterLen = std::chrono::seconds(10);
constexpr Duration kProbeRttInterval = std::chrono::seconds(5);
constexpr Duration kProbeRttDuration = std::chrono::milliseconds(200);
constexpr Duration kInitialRtt = std::chrono::milliseconds(1);  // InitPacingRate without an RTT
constexpr std::uint64_t kMaxSendQuantum = 64 * 1024;
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// This ACK's rate sample in the draft's names (§2.3), with C.inflight and
// C.is_cwnd_limited (§2.2) after it.
struct Bbr::Signals {
    Instant now;
    double delivery_rate = 0;  // 0 when the sample is not valid
    bool valid = false;
    std::uint64_t delivered = 0, prior_delivered = 0, newly_acked = 0;
    std::uint64_t lost = 0, tx_in_flight = 0;
    bool is_app_limited = false;
    std::optional<Duration> rtt;
    std::uint64_t inflight = 0;
    bool cwnd_limited = false;
};

Bbr::Bbr(const Params& params, const Options& options)
    : mds_(params.max_datagram_size),
      initial_cwnd_(initial_window(params.max_datagram_size)),
      loss_thresh_(get_double(options, "loss_thresh", 0.02, 0.005, 0.2, kName)),
      beta_(get_double(options, "beta", 0.7, 0.3, 0.95, kName)),
      headroom_(get_double(options, "headroom", 0.15, 0, 0.5, kName)),
      rng_(static_cast<std::uint64_t>(params.now.time_since_epoch().count()) ^ 0xbb3u),
      cwnd_(initial_cwnd_),
      bw_shortterm_(kInf) {
    reject_unknown(options, {"loss_thresh", "beta", "headroom"}, kName);
    if (mds_ == 0) {
        throw std::invalid_argument("congestion controller \"" + std::string(kName) +
                                    "\": max_datagram_size must be positive");
    }
    // §5.2.1 OnInit.
    min_rtt_stamp_ = probe_rtt_min_stamp_ = params.now;
    extra_acked_interval_start_ = params.now;
    extra_acked_filter_.set_window(1);
    // §5.6.2 InitPacingRate, before any RTT is known (redone with the first one).
    pacing_rate_ = kStartupPacingGain * static_cast<double>(initial_cwnd_) / to_seconds(kInitialRtt);
    enter_startup();
}

std::string_view Bbr::to_string(State s) {
    switch (s) {
        case State::startup: return "startup";
        case State::drain: return "drain";
        case State::probe_bw_down: return "probe_bw_down";
        case State::probe_bw_cruise: return "probe_bw_cruise";
        case State::probe_bw_refill: return "probe_bw_refill";
        case State::probe_bw_up: return "probe_bw_up";
        case State::probe_rtt: return "probe_rtt";
    }
    return "?";
}

Bbr::Model Bbr::model() const {
    return {state_,
            ack_phase_,
            pacing_gain_,
            cwnd_gain_,
            max_bw_,
            bw_,
            bw_shortterm_,
            inflight_longterm_,
            inflight_shortterm_,
            extra_acked_,
            max_inflight_,
            min_rtt_,
            round_count_,
            drain_start_round_,
            cycle_count_,
            full_bw_reached_,
            full_bw_now_,
            full_bw_count_,
            prev_probe_too_high_,
            prev_probe_precautionary_,
            idle_restart_,
            probe_up_acked_per_inc_,
            bw_probe_up_rounds_,
            bw_probe_wait_,
            prior_cwnd_,
            undo_state_,
            loss_ranges_in_round_,
            cycle_stamp_,
            inflight(bw_, 1.0),
            inflight(max_bw_, 1.0),
            inflight_with_headroom()};
}

// ---------------------------------------------------------------- events

// §5.2.2 OnTransmit → §5.4.1 HandleRestartFromIdle: nothing in flight and
// the application had run dry.
void Bbr::on_packet_sent(const PacketSent& p) {
    inflight_now_ = p.bytes_in_flight;
    if (p.bytes_in_flight != p.bytes || !p.in_app_limited_phase) return;
    idle_restart_ = true;
    extra_acked_interval_start_ = p.time;
    if (in_probe_bw()) {
        set_pacing_rate_with_gain(1.0);
    } else if (state_ == State::probe_rtt) {
        check_probe_rtt_done(p.time);
    }
}

// §5.5.10.2 HandleLostPacket.
void Bbr::on_packet_lost(const PacketLost& p) {
    // §5.3.1.3 counts discontiguous lost ranges for Startup's exit.
    if (!last_lost_pn_ || p.packet_number != *last_lost_pn_ + 1) ++loss_ranges_in_round_;
    last_lost_pn_ = p.packet_number;
    // §5.6.4.4 OnEnterFastRecovery → SaveStateUponLoss, once per recovery
    // episode and before this event's losses can lower the model. The draft
    // also saves from NoteLoss on a round's first loss; but when that loss
    // ends ProbeBW_UP, StartProbeBW_DOWN clears is_loss_in_round, and the
    // next lost packet of the same event would save the lowered model and
    // leave nothing to undo.
    if (!recovery_.in_recovery(p.time_sent) && !episode_saved_) {
        save_state_upon_loss();
        episode_saved_ = true;
    }
    note_loss();
    if (!is_bw_probe_sample_) return;  // not sent while probing bandwidth
    if (!is_inflight_too_high(p.lost, p.tx_in_flight)) return;
    // InflightAtLoss: where, within this packet, the loss rate crossed LossThresh.
    const double size = static_cast<double>(p.bytes);
    const double inflight_prev = static_cast<double>(p.tx_in_flight) - size;
    const double lost_prev = static_cast<double>(p.lost) - size;
    const double lost_prefix = (loss_thresh_ * inflight_prev - lost_prev) / (1 - loss_thresh_);
    const double at_loss = std::max(0.0, inflight_prev + std::max(0.0, lost_prefix));
    handle_inflight_too_high(p.is_app_limited, static_cast<std::uint64_t>(at_loss), p.now);
}

void Bbr::on_congestion_event(const CongestionEvent& ev) {
    inflight_now_ = ev.bytes_in_flight;
    if (ev.ecn_ce > 0 && ev.bytes_lost == 0) {
        on_ce_marks(ev.now);
        return;
    }
    if (ev.persistent) {
        // §5.6.4.4 OnEnterRTO, for RFC 9002 §7.6's persistent congestion
        // (SaveStateUponLoss ran with the first lost packet).
        episode_saved_ = false;
        save_cwnd();
        recovery_.reset();
        recovery_.start_if_new(ev.largest_lost_sent_time, ev.now);
        recovery_start_round_ = round_count_;
        cwnd_ = ev.bytes_in_flight + mds_;
        return;
    }
    // §5.6.4.4 OnEnterFastRecovery: SaveCwnd and SaveStateUponLoss ran with
    // the episode's first lost packet (on_packet_lost).
    episode_saved_ = false;
    if (recovery_.start_if_new(ev.largest_lost_sent_time, ev.now)) recovery_start_round_ = round_count_;
}

// §3.7: the draft specifies no ECN response of its own but says CE marks
// MUST be treated as congestion. bbr answers them as it answers losses above
// its threshold, without the threshold (a CE mark means the queue is
// already building): the short-term model comes down at the end of the
// round (NoteLoss); Startup ends as its loss exit would; a bandwidth probe
// ends as HandleInflightTooHigh would, at the inflight now. Marks are never
// spurious, so nothing here can be undone.
void Bbr::on_ce_marks(Instant now) {
    note_loss();
    if (state_ == State::startup && !full_bw_reached_) {
        full_bw_reached_ = true;
        inflight_longterm_ = std::max(bdp_multiple(bw_, 1.0), inflight_latest_);
    } else if (is_bw_probe_sample_) {
        handle_inflight_too_high(false, inflight_now_, now);
    }
    undo_state_.reset();
}

// §5.5.11.2 HandleSpuriousLossDetection.
void Bbr::on_spurious_congestion(const SpuriousEvent&) {
    recovery_.reset();
    restore_cwnd();
    is_loss_in_round_ = false;
    reset_full_bw();
    bw_shortterm_ = std::max(bw_shortterm_, undo_bw_shortterm_);
    inflight_shortterm_ = std::max(inflight_shortterm_, undo_inflight_shortterm_);
    inflight_longterm_ = std::max(inflight_longterm_, undo_inflight_longterm_);
    if (undo_state_ == State::startup && state_ != State::startup) {
        full_bw_reached_ = false;
        if (state_ != State::probe_rtt) enter_startup();
    } else if (undo_state_ == State::probe_bw_up && state_ != State::probe_bw_up) {
        if (state_ != State::probe_rtt) start_probe_bw_refill();
    }
    undo_state_.reset();
}

// §5.2.3 UpdateOnACK.
void Bbr::on_ack(const AckEvent& ev) {
    const RateSample& r = ev.rate;
    delivered_ = r.total_delivered;
    inflight_now_ = ev.bytes_in_flight;
    Signals rs;
    rs.now = ev.now;
    rs.valid = r.valid;
    rs.delivery_rate = r.valid ? r.delivery_rate : 0;
    rs.delivered = r.delivered;
    rs.prior_delivered = r.prior_delivered;
    rs.newly_acked = ev.bytes_acked;
    rs.lost = r.lost;
    rs.tx_in_flight = r.tx_in_flight;
    rs.is_app_limited = r.is_app_limited || (app_limited_until_ != 0 && r.prior_delivered >= app_limited_from_ &&
                                             r.prior_delivered <= app_limited_until_);
    if (r.rtt > Duration::zero()) rs.rtt = r.rtt;
    rs.inflight = ev.bytes_in_flight;
    rs.cwnd_limited = !ev.app_limited;

    // §5.6.2: the initial pacing rate from the first RTT measured.
    if (!pacing_from_rtt_ && ev.has_rtt_sample && ev.smoothed_rtt > Duration::zero() && max_bw_ == 0) {
        pacing_rate_ = kStartupPacingGain * static_cast<double>(initial_cwnd_) / to_seconds(ev.smoothed_rtt);
        pacing_from_rtt_ = true;
    }
    // §5.6.4.4: leaving loss recovery restores the last good window.
    const bool was_in_recovery = recovery_.active();
    recovery_.on_ack(ev.largest_acked_sent_time);
    if (was_in_recovery && !recovery_.active()) restore_cwnd();

    // UpdateModelAndState.
    update_latest_delivery_signals(rs);
    update_congestion_signals(rs);
    update_ack_aggregation(rs);
    check_full_bw_reached(rs);
    check_startup_high_loss(rs);
    if (state_ == State::startup && full_bw_reached_) enter_drain();  // CheckStartupDone
    check_drain_done(rs);
    update_probe_bw_cycle_phase(rs);
    update_min_rtt(rs);
    check_probe_rtt(rs);
    advance_latest_delivery_signals(rs);
    bound_bw_for_model();
    // UpdateControlParameters (the send quantum is computed where it is used).
    set_pacing_rate_with_gain(pacing_gain_);
    set_cwnd(rs);
}

// ---------------------------------------------------------------- the model

// §5.5.10.3 UpdateLatestDeliverySignals: the latest round's delivery, and
// whether this ACK ends a loss round.
void Bbr::update_latest_delivery_signals(const Signals& rs) {
    loss_round_start_ = false;
    bw_latest_ = std::max(bw_latest_, rs.delivery_rate);
    inflight_latest_ = std::max(inflight_latest_, rs.delivered);
    if (rs.prior_delivered >= loss_round_delivered_) {
        loss_round_delivered_ = delivered_;
        loss_round_start_ = true;
    }
}

void Bbr::advance_latest_delivery_signals(const Signals& rs) {
    if (!loss_round_start_) return;
    bw_latest_ = rs.delivery_rate;
    inflight_latest_ = rs.delivered;
}

// §5.5.10.3 UpdateCongestionSignals: once per loss round, lower the short-term model.
void Bbr::update_congestion_signals(const Signals& rs) {
    update_max_bw(rs);
    if (!loss_round_start_) return;
    adapt_lower_bounds_from_congestion();
    is_loss_in_round_ = false;
}

void Bbr::adapt_lower_bounds_from_congestion() {
    if (is_probing_bw() || !is_loss_in_round_) return;
    // InitLowerBounds, then LossLowerBounds.
    if (std::isinf(bw_shortterm_)) bw_shortterm_ = max_bw_;
    if (inflight_shortterm_ == kInfinity) inflight_shortterm_ = cwnd_;
    bw_shortterm_ = std::max(bw_latest_, beta_ * bw_shortterm_);
    inflight_shortterm_ = std::max(inflight_latest_, static_cast<std::uint64_t>(beta_ * static_cast<double>(inflight_shortterm_)));
}

void Bbr::cut_short_term(double factor) {
    if (bw_latest_ <= 0) return;
    if (std::isinf(bw_shortterm_)) bw_shortterm_ = max_bw_;  // InitLowerBounds
    bw_shortterm_ = std::min(bw_shortterm_, factor * bw_latest_);
    bound_bw_for_model();
    set_pacing_rate_with_gain(pacing_gain_);
}

void Bbr::stop_probe(Instant now) {
    if (state_ != State::probe_bw_up) return;
    prev_probe_too_high_ = false;  // as UpdateProbeBWCyclePhase's exit on full_bw_now
    start_probe_bw_down(now);
}

// §5.5.5 UpdateMaxBw: app-limited samples count only when they raise the estimate.
void Bbr::update_max_bw(const Signals& rs) {
    update_round(rs);
    if (rs.delivery_rate > 0 && (rs.delivery_rate >= max_bw_ || !rs.is_app_limited)) {
        max_bw_slots_[1] = std::max(max_bw_slots_[1], rs.delivery_rate);
        max_bw_ = std::max(max_bw_slots_[0], max_bw_slots_[1]);
    }
}

// §5.5.1 UpdateRound: a round ends with the ACK of a packet sent after it began.
void Bbr::update_round(const Signals& rs) {
    round_start_ = false;
    if (!rs.valid || rs.prior_delivered < next_round_delivered_) return;
    start_round();
    ++round_count_;
    ++rounds_since_probe_up_;
    round_start_ = true;
}

void Bbr::bound_bw_for_model() { bw_ = std::min(max_bw_, bw_shortterm_); }

// §5.5.9 UpdateACKAggregation: data acknowledged beyond bw × time since the
// interval began is aggregation; the window gets that much on top.
void Bbr::update_ack_aggregation(const Signals& rs) {
    double expected = bw_ * to_seconds(rs.now - extra_acked_interval_start_);
    if (static_cast<double>(extra_acked_delivered_) <= expected) {
        extra_acked_delivered_ = 0;
        extra_acked_interval_start_ = rs.now;
        expected = 0;
    }
    extra_acked_delivered_ += rs.newly_acked;
    const double extra = std::min(static_cast<double>(extra_acked_delivered_) - expected, static_cast<double>(cwnd_));
    extra_acked_filter_.set_window(full_bw_reached_ ? kExtraAckedFilterLen : 1);
    extra_acked_ = static_cast<std::uint64_t>(extra_acked_filter_.update(round_count_, std::max(0.0, extra)));
}

// §5.3.1.2 CheckFullBWReached: three rounds without 25 % growth fill the pipe.
void Bbr::check_full_bw_reached(const Signals& rs) {
    if (full_bw_now_ || !round_start_ || rs.is_app_limited) return;
    if (rs.delivery_rate >= full_bw_ * kFullBwGrowth) {
        reset_full_bw();
        full_bw_ = rs.delivery_rate;
        return;
    }
    ++full_bw_count_;
    full_bw_now_ = full_bw_count_ >= kFullBwCount;
    if (full_bw_now_) full_bw_reached_ = true;
}

// §5.3.1.3 CheckStartupHighLoss, checked at the end of each loss round (as
// Linux does): in recovery for a full round, more than LossThresh lost, and
// at least six discontiguous lost ranges in the round.
void Bbr::check_startup_high_loss(const Signals& rs) {
    if (!loss_round_start_) return;
    const unsigned ranges = loss_ranges_in_round_;
    loss_ranges_in_round_ = 0;
    if (full_bw_reached_ || state_ != State::startup) return;
    if (!recovery_.active() || round_count_ <= recovery_start_round_ || ranges < kStartupFullLossCnt ||
        !is_inflight_too_high(rs.lost, rs.tx_in_flight))
        return;
    undo_state_ = State::startup;
    full_bw_reached_ = true;
    inflight_longterm_ = std::max(bdp_multiple(bw_, 1.0), inflight_latest_);
}

// §5.3.2 CheckDrainDone.
void Bbr::check_drain_done(const Signals& rs) {
    if (state_ == State::drain && (rs.inflight <= inflight(bw_, 1.0) || round_count_ > drain_start_round_ + 3))
        enter_probe_bw(rs.now);
}

// §5.3.3.9 UpdateProbeBWCyclePhase.
void Bbr::update_probe_bw_cycle_phase(const Signals& rs) {
    if (!full_bw_reached_) return;
    if (adapt_long_term_model(rs)) return;
    switch (state_) {
        case State::probe_bw_down:
            if (is_time_to_probe_bw(rs.now)) return;
            if (is_time_to_cruise(rs)) start_probe_bw_cruise();
            break;
        case State::probe_bw_cruise:
            (void)is_time_to_probe_bw(rs.now);
            break;
        case State::probe_bw_refill:
            if (round_start_) {  // after one round of REFILL, start UP
                is_bw_probe_sample_ = true;
                start_probe_bw_up(rs);
            }
            break;
        case State::probe_bw_up:
            if (is_time_to_go_down(rs)) {
                prev_probe_too_high_ = false;  // no high loss (yet)
                start_probe_bw_down(rs.now);
            }
            break;
        default: break;  // only the ProbeBW states here
    }
}

// §5.3.3.9 AdaptLongTermModel: track the ACK phase, advance the max_bw
// window once per cycle, and raise inflight_longterm while loss is low.
// True when it decided a state transition.
bool Bbr::adapt_long_term_model(const Signals& rs) {
    if (ack_phase_ == AckPhase::probe_starting && round_start_) ack_phase_ = AckPhase::probe_feedback;
    if (ack_phase_ == AckPhase::probe_stopping && round_start_) {
        is_bw_probe_sample_ = false;
        ack_phase_ = AckPhase::init;
        if (in_probe_bw() && !rs.is_app_limited) {  // AdvanceMaxBwFilter
            ++cycle_count_;
            if (max_bw_slots_[1] > 0) {
                max_bw_slots_[0] = max_bw_slots_[1];
                max_bw_slots_[1] = 0;
                max_bw_ = max_bw_slots_[0];
            }
        }
        // §5.3.3.6 Precautionary Bandwidth Probing: Acceleration.
        if (in_probe_bw() && prev_probe_precautionary_ && !prev_probe_too_high_) {
            start_probe_bw_refill();
            return true;
        }
    }
    if (is_inflight_too_high(rs.lost, rs.tx_in_flight)) return false;
    if (inflight_longterm_ == kInfinity) return false;  // no upper bound to raise
    if (rs.tx_in_flight > inflight_longterm_) inflight_longterm_ = rs.tx_in_flight;
    if (state_ == State::probe_bw_up) probe_inflight_longterm_upward(rs);
    return false;
}

// §5.3.3.9 ProbeInflightLongtermUpward: 1, 2, 4, ... packets more each
// round, spread over the round's ACKs, while the window is what limits.
void Bbr::probe_inflight_longterm_upward(const Signals& rs) {
    if (!rs.cwnd_limited || cwnd_ < inflight_longterm_) return;
    bw_probe_up_acked_ += rs.newly_acked;
    if (bw_probe_up_acked_ >= probe_up_acked_per_inc_) {
        const std::uint64_t delta = bw_probe_up_acked_ / probe_up_acked_per_inc_;
        bw_probe_up_acked_ -= delta * probe_up_acked_per_inc_;
        inflight_longterm_ += delta * mds_;
    }
    if (round_start_) raise_inflight_longterm_slope();
}

void Bbr::raise_inflight_longterm_slope() {
    const std::uint64_t growth_this_round = std::uint64_t{1} << bw_probe_up_rounds_;
    bw_probe_up_rounds_ = std::min(bw_probe_up_rounds_ + 1, 30u);
    probe_up_acked_per_inc_ = std::max(cwnd_ / growth_this_round, mds_);
}

// §5.3.3.8.2: DOWN or CRUISE → REFILL after 2–3 s or the Reno-coexistence
// number of rounds (the estimated BDP in packets, at most 63).
bool Bbr::is_time_to_probe_bw(Instant now) {
    const std::uint64_t reno_rounds = std::min(target_inflight() / mds_, kRenoRoundsBound);
    if (now > cycle_stamp_ + bw_probe_wait_ || rounds_since_probe_up_ >= reno_rounds) {
        start_probe_bw_refill();
        return true;
    }
    return false;
}

bool Bbr::is_time_to_cruise(const Signals& rs) const {
    return rs.inflight <= inflight_with_headroom() && rs.inflight <= inflight(max_bw_, 1.0);
}

bool Bbr::is_time_to_go_down(const Signals& rs) {
    // §5.3.3.6 Precautionary Bandwidth Probing: Deceleration.
    if (prev_probe_too_high_ && rs.inflight >= inflight_longterm_) {
        prev_probe_precautionary_ = true;
        return true;
    }
    if (rs.cwnd_limited && cwnd_ >= inflight_longterm_) {
        // The bound, not the path, limits the rate: the plateau means nothing.
        reset_full_bw();
        full_bw_ = rs.delivery_rate;
    } else if (full_bw_now_) {
        return true;
    }
    return false;
}

// §5.3.4.3 UpdateMinRTT: probe_rtt_min_delay over 5 s schedules ProbeRTT;
// min_rtt over 10 s is the model's.
void Bbr::update_min_rtt(const Signals& rs) {
    probe_rtt_expired_ = rs.now > probe_rtt_min_stamp_ + kProbeRttInterval;
    if (rs.rtt && (!probe_rtt_min_delay_ || *rs.rtt < *probe_rtt_min_delay_ || probe_rtt_expired_)) {
        probe_rtt_min_delay_ = rs.rtt;
        probe_rtt_min_stamp_ = rs.now;
    }
    const bool min_rtt_expired = rs.now > min_rtt_stamp_ + kMinRttFilterLen;
    if (probe_rtt_min_delay_ && (!min_rtt_ || *probe_rtt_min_delay_ < *min_rtt_ || min_rtt_expired)) {
        min_rtt_ = probe_rtt_min_delay_;
        min_rtt_stamp_ = probe_rtt_min_stamp_;
    }
}

// §5.3.4.3 CheckProbeRTT.
void Bbr::check_probe_rtt(const Signals& rs) {
    if (state_ != State::probe_rtt && probe_rtt_expired_ && !idle_restart_) {
        enter_probe_rtt();
        save_cwnd();
        probe_rtt_done_stamp_.reset();
        ack_phase_ = AckPhase::probe_stopping;
        start_round();
    }
    if (state_ == State::probe_rtt) handle_probe_rtt(rs);
    if (rs.delivered > 0) idle_restart_ = false;
}

void Bbr::handle_probe_rtt(const Signals& rs) {
    // MarkConnectionAppLimited: ProbeRTT's low-rate samples say nothing of the path.
    app_limited_until_ = std::max<std::uint64_t>(delivered_ + rs.inflight, 1);
    if (!probe_rtt_done_stamp_ && rs.inflight <= probe_rtt_cwnd()) {
        // At least ProbeRTTDuration and one round at the low inflight.
        probe_rtt_done_stamp_ = rs.now + kProbeRttDuration;
        probe_rtt_round_done_ = false;
        start_round();
    } else if (probe_rtt_done_stamp_) {
        if (round_start_) probe_rtt_round_done_ = true;
        if (probe_rtt_round_done_) check_probe_rtt_done(rs.now);
    }
}

void Bbr::check_probe_rtt_done(Instant now) {
    if (!probe_rtt_done_stamp_ || now <= *probe_rtt_done_stamp_) return;
    probe_rtt_min_stamp_ = now;  // schedules the next ProbeRTT
    restore_cwnd();
    exit_probe_rtt(now);
}

// ---------------------------------------------------------------- control

// §5.6.2: below the estimate by the margin; before the pipe is full, only upward.
void Bbr::set_pacing_rate_with_gain(double gain) {
    const double rate = gain * bw_ * (1 - kPacingMargin);
    if (full_bw_reached_ || rate > pacing_rate_) pacing_rate_ = rate;
}

// §5.6.4.6 SetCwnd, then §5.6.4.5 and §5.6.4.7's bounds.
void Bbr::set_cwnd(const Signals& rs) {
    max_inflight_ = quantization_budget(bdp_multiple(bw_, cwnd_gain_) + extra_acked_);  // UpdateMaxInflight
    if (full_bw_reached_) {
        cwnd_ = std::min(cwnd_ + rs.newly_acked, max_inflight_);
    } else if (cwnd_ < max_inflight_ || delivered_ < initial_cwnd_) {
        cwnd_ += rs.newly_acked;
    }
    cwnd_ = std::max(cwnd_, min_pipe_cwnd());
    if (state_ == State::probe_rtt) cwnd_ = std::min(cwnd_, probe_rtt_cwnd());  // BoundCwndForProbeRTT
    // BoundCwndForModel.
    std::uint64_t cap = kInfinity;
    if (in_probe_bw() && state_ != State::probe_bw_cruise) {
        cap = inflight_longterm_;
    } else if (state_ == State::probe_rtt || state_ == State::probe_bw_cruise) {
        cap = inflight_with_headroom();
    }
    cap = std::max(std::min(cap, inflight_shortterm_), min_pipe_cwnd());
    cwnd_ = std::min(cwnd_, cap);
}

// §5.6.4.2 BDPMultiple.
std::uint64_t Bbr::bdp_multiple(double bw, double gain) const {
    if (!min_rtt_) return initial_cwnd_;  // no RTT sample yet
    return static_cast<std::uint64_t>(gain * bw * to_seconds(*min_rtt_));
}

// §5.6.4.2 QuantizationBudget, with §5.5.8.2's QUIC offload budget (the send
// quantum of §5.6.3: 1 ms at the pacing rate, 2 packets to 64 KB).
std::uint64_t Bbr::quantization_budget(std::uint64_t inflight_cap) const {
    const auto quantum = std::max(std::min(static_cast<std::uint64_t>(pacing_rate_ * 1e-3), kMaxSendQuantum), 2 * mds_);
    inflight_cap = std::max({inflight_cap, quantum, min_pipe_cwnd()});
    if (state_ == State::probe_bw_up) inflight_cap += 2 * mds_;
    return inflight_cap;
}

std::uint64_t Bbr::inflight(double bw, double gain) const { return quantization_budget(bdp_multiple(bw, gain)); }

// §5.3.3.9 InflightWithHeadroom: leave 15 % of inflight_longterm for others.
std::uint64_t Bbr::inflight_with_headroom() const {
    if (inflight_longterm_ == kInfinity) return kInfinity;
    const auto headroom = std::max(mds_, static_cast<std::uint64_t>(headroom_ * static_cast<double>(inflight_longterm_)));
    const std::uint64_t left = inflight_longterm_ > headroom ? inflight_longterm_ - headroom : 0;
    return std::max(left, min_pipe_cwnd());
}

// §5.3.3.8.2 TargetInflight: the BDP, unless congestion cut the window.
std::uint64_t Bbr::target_inflight() const {
    if (!min_rtt_) return cwnd_;
    return std::min(bdp_multiple(bw_, 1.0), cwnd_);
}

// §5.6.4.5 ProbeRTTCwnd.
std::uint64_t Bbr::probe_rtt_cwnd() const {
    return std::max(bdp_multiple(bw_, kProbeRttCwndGain), min_pipe_cwnd());
}

// ---------------------------------------------------------------- states

void Bbr::enter_startup() {
    state_ = State::startup;
    pacing_gain_ = kStartupPacingGain;
    cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::enter_drain() {
    state_ = State::drain;
    pacing_gain_ = kDrainPacingGain;
    cwnd_gain_ = kDefaultCwndGain;
    drain_start_round_ = round_count_;
}

void Bbr::enter_probe_bw(Instant now) {
    cwnd_gain_ = kDefaultCwndGain;
    start_probe_bw_down(now);
}

// The gains of each ProbeBW state are the table's (§5.6.1).
void Bbr::start_probe_bw_down(Instant now) {
    reset_congestion_signals();
    probe_up_acked_per_inc_ = kInfinity;  // not growing inflight_longterm
    pick_probe_wait();
    cycle_stamp_ = now;
    ack_phase_ = AckPhase::probe_stopping;
    start_round();
    state_ = State::probe_bw_down;
    pacing_gain_ = kProbeDownPacingGain;
    cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_cruise() {
    state_ = State::probe_bw_cruise;
    pacing_gain_ = 1.0;
    cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_refill() {
    reset_short_term_model();
    bw_probe_up_rounds_ = 0;
    bw_probe_up_acked_ = 0;
    prev_probe_precautionary_ = false;
    ack_phase_ = AckPhase::refilling;
    start_round();
    state_ = State::probe_bw_refill;
    pacing_gain_ = 1.0;
    cwnd_gain_ = kDefaultCwndGain;
}

void Bbr::start_probe_bw_up(const Signals& rs) {
    ack_phase_ = AckPhase::probe_starting;
    start_round();
    reset_full_bw();
    full_bw_ = rs.delivery_rate;
    state_ = State::probe_bw_up;
    pacing_gain_ = kProbeUpPacingGain;
    cwnd_gain_ = kProbeUpCwndGain;
    raise_inflight_longterm_slope();
}

void Bbr::enter_probe_rtt() {
    state_ = State::probe_rtt;
    pacing_gain_ = 1.0;
    cwnd_gain_ = kProbeRttCwndGain;
    app_limited_from_ = delivered_;
}

// §5.3.4.4 ExitProbeRTT: the queue is drained already, so straight to CRUISE.
void Bbr::exit_probe_rtt(Instant now) {
    reset_short_term_model();
    if (full_bw_reached_) {
        start_probe_bw_down(now);
        start_probe_bw_cruise();
    } else {
        enter_startup();
    }
}

// §5.3.3.8.2 PickProbeWait: 0 or 1 rounds, 2–3 s.
void Bbr::pick_probe_wait() {
    rounds_since_probe_up_ = util::splitmix64_next(rng_) % 2;
    const double unit = static_cast<double>(util::splitmix64_next(rng_) >> 11) * 0x1.0p-53;
    bw_probe_wait_ = std::chrono::seconds(2) + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(unit));
}

void Bbr::reset_full_bw() {
    full_bw_ = 0;
    full_bw_count_ = 0;
    full_bw_now_ = false;
}

void Bbr::reset_congestion_signals() {
    is_loss_in_round_ = false;
    bw_latest_ = 0;
    inflight_latest_ = 0;
}

void Bbr::reset_short_term_model() {
    bw_shortterm_ = kInf;
    inflight_shortterm_ = kInfinity;
}

// ---------------------------------------------------------------- losses

// §5.5.10.2 NoteLoss (its SaveStateUponLoss runs per episode: on_packet_lost).
void Bbr::note_loss() {
    if (!is_loss_in_round_) loss_round_delivered_ = delivered_;
    is_loss_in_round_ = true;
}

// §5.5.10.2 IsInflightTooHigh (QUIC always has selective ACKs).
bool Bbr::is_inflight_too_high(std::uint64_t lost, std::uint64_t tx_in_flight) const {
    return static_cast<double>(lost) > static_cast<double>(tx_in_flight) * loss_thresh_;
}

// §5.5.10.2 HandleInflightTooHigh: react once per probe, no lower than β of the target.
void Bbr::handle_inflight_too_high(bool app_limited, std::uint64_t tx_in_flight, Instant now) {
    prev_probe_too_high_ = true;
    is_bw_probe_sample_ = false;
    if (!app_limited) {
        inflight_longterm_ = std::max(tx_in_flight, static_cast<std::uint64_t>(static_cast<double>(target_inflight()) * beta_));
    }
    if (state_ == State::probe_bw_up) {
        undo_state_ = State::probe_bw_up;
        start_probe_bw_down(now);
    }
}

// §5.5.11.1 SaveStateUponLoss.
void Bbr::save_state_upon_loss() {
    save_cwnd();
    undo_state_.reset();
    undo_bw_shortterm_ = bw_shortterm_;
    undo_inflight_shortterm_ = inflight_shortterm_;
    undo_inflight_longterm_ = inflight_longterm_;
}

// §5.6.4.4 SaveCwnd: the last window not lowered by recovery or ProbeRTT.
void Bbr::save_cwnd() {
    if (!recovery_.active() && state_ != State::probe_rtt) {
        prior_cwnd_ = cwnd_;
    } else {
        prior_cwnd_ = std::max(prior_cwnd_, cwnd_);
    }
}

bool Bbr::in_probe_bw() const {
    return state_ == State::probe_bw_down || state_ == State::probe_bw_cruise || state_ == State::probe_bw_refill ||
           state_ == State::probe_bw_up;
}

bool Bbr::is_probing_bw() const {
    return state_ == State::startup || state_ == State::probe_bw_refill || state_ == State::probe_bw_up;
}

}  // namespace ndm::cc
