// BBRv3 as specified in draft-ietf-ccwg-bbr-06 (docs/bbr.md): a model of the
// path — the maximum delivery rate over the current and previous ProbeBW
// cycles (max_bw), the minimum RTT over 10 s, and, from loss, a long-term
// bound on inflight (inflight_longterm) and short-term bounds on rate and
// inflight (bw_shortterm, inflight_shortterm) — sets the pacing rate and the
// window. Startup paces at 2.77× until the rate plateaus or losses exceed 2 %
// of a round; Drain empties the queue; ProbeBW cycles DOWN (0.9×), CRUISE,
// REFILL (one round at 1×) and UP (1.25×, growing inflight_longterm faster
// each round) at most every 2–3 s or 63 rounds, whichever comes first;
// ProbeRTT halves the window for 200 ms when the RTT floor is 5 s old.
//
// Section numbers in the comments are the draft's. Where the draft leaves a
// choice to the transport, this file takes QUIC's (§5.5.8.2 offload budget =
// send quantum; RFC 9002 §7.3.2 recovery periods for "fast recovery";
// persistent congestion, §7.6, for "RTO"). The transport cannot be told to
// mark itself application-limited (§5.3.4.3 HandleProbeRTT), so ProbeRTT
// treats the samples of packets it sent as app-limited itself.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cc/window.hpp"
#include "cc/windowed_max.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

class Bbr final : public Controller {
public:
    static constexpr std::string_view kName = "bbr";
    static constexpr std::string_view kDescription =
        "BBRv3 (draft-ietf-ccwg-bbr-06): bandwidth/min-RTT model with loss-bounded inflight, "
        "Startup/Drain/ProbeBW(DOWN,CRUISE,REFILL,UP)/ProbeRTT; options: loss_thresh, beta, headroom";

    enum class State : std::uint8_t {
        startup, drain, probe_bw_down, probe_bw_cruise, probe_bw_refill, probe_bw_up, probe_rtt
    };
    // §2.14: what the ACKs now arriving say about bandwidth probing.
    enum class AckPhase : std::uint8_t { init, refilling, probe_starting, probe_feedback, probe_stopping };

    // Options: loss_thresh (0.005–0.2, default 0.02), beta (0.3–0.95,
    // default 0.7), headroom (0–0.5, default 0.15). Throws
    // std::invalid_argument for an unknown key or a bad value, or a zero
    // max_datagram_size.
    explicit Bbr(const Params& params, const Options& options = {});

    void on_packet_sent(const PacketSent& p) override;
    void on_packet_lost(const PacketLost& p) override;
    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override;
    void on_spurious_congestion(const SpuriousEvent& ev) override;

    // Bounds the short-term bandwidth model to `factor` × the latest round's
    // delivery rate (never raising it), as a congestion signal other than a
    // loss would bound it; pacing follows at once. ndm's cruise queue rule
    // (src/cc/ndm/queue_response.hpp) is the caller; bbr itself never is.
    void cut_short_term(double factor);
    // Ends a ProbeBW_UP as its own full-bandwidth exit would (§5.3.3.6
    // IsTimeToGoDown): ProbeBW_DOWN, with no congestion signal and the models
    // unchanged; nothing in another state. ndm's stall rule is the caller
    // (src/cc/ndm/queue_response.hpp); bbr itself never is.
    void stop_probe(Instant now);

    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::optional<double> pacing_rate() const override { return pacing_rate_; }
    [[nodiscard]] std::string_view state() const override { return to_string(state_); }
    [[nodiscard]] std::string_view name() const override { return kName; }

    static std::string_view to_string(State s);

    // The model, for tests and traces. Amounts in bytes, rates in bytes/s;
    // kInfinity stands for the draft's "Infinity".
    static constexpr std::uint64_t kInfinity = UINT64_MAX;
    struct Model {
        State state;
        AckPhase ack_phase;
        double pacing_gain, cwnd_gain;
        double max_bw, bw, bw_shortterm;  // bw_shortterm: +inf when unset
        std::uint64_t inflight_longterm, inflight_shortterm;
        std::uint64_t extra_acked, max_inflight;
        std::optional<Duration> min_rtt;
        std::uint64_t round_count, drain_start_round, cycle_count;
        bool full_bw_reached, full_bw_now;
        unsigned full_bw_count;
        bool prev_probe_too_high, prev_probe_precautionary, idle_restart;
        std::uint64_t probe_up_acked_per_inc;  // kInfinity when not growing
        unsigned bw_probe_up_rounds;
        Duration bw_probe_wait;
        std::uint64_t prior_cwnd;
        std::optional<State> undo_state;
        unsigned startup_loss_ranges;  // discontiguous lost ranges this round
        Instant cycle_stamp;
        // Inflight(1.0) with bw and with max_bw, and InflightWithHeadroom().
        std::uint64_t inflight_bdp, inflight_bdp_max_bw, inflight_headroom;
    };
    [[nodiscard]] Model model() const;
    // What a controller built on this one reads on every ACK, without
    // copying the whole Model: the state, max_bw (bytes/s) and the rounds
    // of Startup without bandwidth growth.
    [[nodiscard]] State state_id() const noexcept { return state_; }
    [[nodiscard]] double max_bw() const noexcept { return max_bw_; }
    [[nodiscard]] unsigned full_bw_count() const noexcept { return full_bw_count_; }

private:
    struct Signals;  // this ACK's rate sample as the draft's RS, with C.inflight

    // §5.2.3 UpdateModelAndState, in the draft's order.
    void update_latest_delivery_signals(const Signals& rs);
    void update_congestion_signals(const Signals& rs);
    void update_max_bw(const Signals& rs);
    void update_round(const Signals& rs);
    void adapt_lower_bounds_from_congestion();
    void update_ack_aggregation(const Signals& rs);
    void check_full_bw_reached(const Signals& rs);
    void check_startup_high_loss(const Signals& rs);
    void check_drain_done(const Signals& rs);
    void update_probe_bw_cycle_phase(const Signals& rs);
    bool adapt_long_term_model(const Signals& rs);
    void probe_inflight_longterm_upward(const Signals& rs);
    [[nodiscard]] bool is_time_to_probe_bw(Instant now);
    [[nodiscard]] bool is_time_to_cruise(const Signals& rs) const;
    [[nodiscard]] bool is_time_to_go_down(const Signals& rs);
    void update_min_rtt(const Signals& rs);
    void check_probe_rtt(const Signals& rs);
    void handle_probe_rtt(const Signals& rs);
    void check_probe_rtt_done(Instant now);
    void advance_latest_delivery_signals(const Signals& rs);
    void bound_bw_for_model();
    // §5.2.3 UpdateControlParameters.
    void set_pacing_rate_with_gain(double gain);
    void set_cwnd(const Signals& rs);

    // State entries (§5.3).
    void enter_startup();
    void enter_drain();
    void enter_probe_bw(Instant now);
    void start_probe_bw_down(Instant now);
    void start_probe_bw_cruise();
    void start_probe_bw_refill();
    void start_probe_bw_up(const Signals& rs);
    void enter_probe_rtt();
    void exit_probe_rtt(Instant now);
    void pick_probe_wait();
    void start_round() { next_round_delivered_ = delivered_; }
    void reset_full_bw();
    void reset_congestion_signals();
    void reset_short_term_model();
    void raise_inflight_longterm_slope();

    // Losses (§5.5.10) and their undo (§5.5.11), CE marks (§3.7), windows (§5.6.4).
    void note_loss();
    void on_ce_marks(Instant now);
    void handle_inflight_too_high(bool app_limited, std::uint64_t tx_in_flight, Instant now);
    [[nodiscard]] bool is_inflight_too_high(std::uint64_t lost, std::uint64_t tx_in_flight) const;
    void save_state_upon_loss();
    void save_cwnd();
    void restore_cwnd() { cwnd_ = std::max(cwnd_, prior_cwnd_); }

    [[nodiscard]] bool in_probe_bw() const;
    [[nodiscard]] bool is_probing_bw() const;
    [[nodiscard]] std::uint64_t bdp_multiple(double bw, double gain) const;
    [[nodiscard]] std::uint64_t quantization_budget(std::uint64_t inflight_cap) const;
    [[nodiscard]] std::uint64_t inflight(double bw, double gain) const;
    [[nodiscard]] std::uint64_t inflight_with_headroom() const;
    [[nodiscard]] std::uint64_t target_inflight() const;
    [[nodiscard]] std::uint64_t probe_rtt_cwnd() const;
    [[nodiscard]] std::uint64_t min_pipe_cwnd() const { return 4 * mds_; }

    // Constants and options.
    std::uint64_t mds_;  // C.SMSS
    std::uint64_t initial_cwnd_;
    double loss_thresh_, beta_, headroom_;
    std::uint64_t rng_;  // PickProbeWait's draws, seeded by the creation time

    // Transport state as the controller sees it.
    std::uint64_t cwnd_;
    double pacing_rate_;
    bool pacing_from_rtt_ = false;  // InitPacingRate ran with a measured RTT
    std::uint64_t delivered_ = 0;   // C.delivered after the latest ACK
    std::uint64_t inflight_now_ = 0;  // C.inflight after the latest event
    RecoveryPeriod recovery_;

    State state_ = State::startup;
    double pacing_gain_ = 0, cwnd_gain_ = 0;
    std::uint64_t round_count_ = 0, next_round_delivered_ = 0;
    bool round_start_ = false;
    bool idle_restart_ = false;
    std::uint64_t drain_start_round_ = 0;

    // The long-term model.
    std::array<double, 2> max_bw_slots_{};  // max_bw_filter: the previous and current ProbeBW cycle
    std::uint64_t cycle_count_ = 0;
    double max_bw_ = 0;
    double bw_ = 0;
    std::uint64_t inflight_longterm_ = kInfinity;
    std::optional<Duration> min_rtt_;
    Instant min_rtt_stamp_{};
    std::optional<Duration> probe_rtt_min_delay_;
    Instant probe_rtt_min_stamp_{};
    bool probe_rtt_expired_ = false;
    // The short-term model (kInfinity / +inf when unset).
    double bw_shortterm_;
    std::uint64_t inflight_shortterm_ = kInfinity;
    double bw_latest_ = 0;
    std::uint64_t inflight_latest_ = 0;
    std::uint64_t loss_round_delivered_ = 0;
    bool loss_round_start_ = false;
    bool is_loss_in_round_ = false;
    // §5.3.1.3: discontiguous lost ranges in this round, for Startup's exit.
    unsigned loss_ranges_in_round_ = 0;
    std::optional<std::uint64_t> last_lost_pn_;
    std::uint64_t recovery_start_round_ = 0;
    bool episode_saved_ = false;  // SaveStateUponLoss ran for the congestion event being reported

    // Aggregation (§5.5.9).
    WindowedMax extra_acked_filter_{10};
    std::uint64_t extra_acked_ = 0;
    Instant extra_acked_interval_start_{};
    std::uint64_t extra_acked_delivered_ = 0;
    std::uint64_t max_inflight_ = 0;

    // Startup (§5.3.1.2).
    bool full_bw_reached_ = false, full_bw_now_ = false;
    double full_bw_ = 0;
    unsigned full_bw_count_ = 0;

    // ProbeBW (§2.14).
    AckPhase ack_phase_ = AckPhase::init;
    bool is_bw_probe_sample_ = false;
    std::uint64_t bw_probe_up_acked_ = 0;
    std::uint64_t probe_up_acked_per_inc_ = kInfinity;
    unsigned bw_probe_up_rounds_ = 0;
    std::uint64_t rounds_since_probe_up_ = 0;
    Duration bw_probe_wait_{0};
    Instant cycle_stamp_{};
    bool prev_probe_too_high_ = false, prev_probe_precautionary_ = false;

    // ProbeRTT (§5.3.4).
    std::optional<Instant> probe_rtt_done_stamp_;
    bool probe_rtt_round_done_ = false;
    // MarkConnectionAppLimited emulated: samples of packets sent while the
    // connection's delivered count was in [from, until] are app-limited.
    std::uint64_t app_limited_from_ = 0, app_limited_until_ = 0;

    // Undo (§2.15) and the window saved across recovery and ProbeRTT.
    std::uint64_t prior_cwnd_ = 0;
    std::optional<State> undo_state_;
    double undo_bw_shortterm_ = 0;
    std::uint64_t undo_inflight_shortterm_ = 0, undo_inflight_longterm_ = 0;
};

}  // namespace ndm::cc
