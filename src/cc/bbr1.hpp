// BBRv1, the version in mainline Linux (net/ipv4/tcp_bbr.c; Cardwell et al.,
// "BBR: Congestion-Based Congestion Control", ACM Queue 2016), for comparison
// with kernel BBR: a model of the path (the bottleneck bandwidth as the
// windowed maximum of delivery-rate samples over 10 rounds, the minimum RTT
// over 10 s) sets the pacing rate and a window of cwnd_gain times the BDP.
// Startup paces at 2/ln 2 until the bandwidth stops growing by 25 % for three
// rounds, Drain empties the queue Startup built, ProbeBW cycles its pacing
// gain through 1.25, 0.75 and six rounds of 1, and ProbeRTT drops to four
// packets for 200 ms when the minimum RTT has not been seen for 10 s. Losses
// do not shrink the model: in recovery the window follows packet
// conservation for one round and is restored afterwards. Long-term sampling
// detects a token-bucket policer (loss ≥ 20 % over 4–16 rounds at a steady
// rate) and then paces at its rate for 48 rounds. The kernel's ACK
// aggregation allowance (extra_acked) is kept as well.
//
// Differences from Linux, by necessity: amounts are bytes, not packets (the
// quantization budget and the minimums are packets of max_datagram_size);
// the recovery state is RFC 9002's recovery period (§7.3.2) held one min_rtt
// longer, as TCP's lasts until the retransmissions are acknowledged; persistent
// congestion (RFC 9002 §7.6) plays the part of an RTO; the random ProbeBW
// phase comes from a generator seeded by the creation time, so virtual-time
// runs repeat.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "cc/window.hpp"
#include "cc/windowed_max.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

class Bbr1 final : public Controller {
public:
    static constexpr std::string_view kName = "bbr1";
    static constexpr std::string_view kDescription =
        "BBRv1 as in Linux's tcp_bbr.c: bandwidth and min-RTT model, Startup/Drain/ProbeBW/ProbeRTT; "
        "options: lt_bw (policer detection), ack_aggregation";

    enum class Mode : std::uint8_t { startup, drain, probe_bw, probe_rtt };

    // Options: lt_bw=on|off (long-term bandwidth sampling), ack_aggregation=on|off
    // (the extra_acked allowance). Throws std::invalid_argument for an
    // unknown key or value, or a zero max_datagram_size.
    explicit Bbr1(const Params& params, const Options& options = {});

    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override;
    void on_spurious_congestion(const SpuriousEvent& ev) override;
    void on_idle_restart(Instant now) override;

    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::optional<double> pacing_rate() const override { return pacing_rate_; }
    [[nodiscard]] std::string_view state() const override;
    [[nodiscard]] std::string_view name() const override { return kName; }

    // The model, for tests and traces.
    [[nodiscard]] Mode mode() const { return mode_; }
    [[nodiscard]] double bandwidth() const;  // bytes per second (the long-term one while policed)
    [[nodiscard]] std::optional<Duration> min_rtt() const { return min_rtt_; }
    [[nodiscard]] double pacing_gain() const { return pacing_gain_; }
    [[nodiscard]] bool full_bandwidth_reached() const { return full_bw_reached_; }

private:
    // Per ACK, in tcp_bbr.c's order (bbr_update_model).
    void update_bandwidth(const AckEvent& ev);
    void update_ack_aggregation(const AckEvent& ev);
    void update_cycle_phase(const AckEvent& ev);
    void check_full_bandwidth(const RateSample& rs);
    void check_drain(const AckEvent& ev);
    void update_min_rtt(const AckEvent& ev);
    void update_gains();
    void set_pacing_rate(double bw, double gain, const AckEvent* ev);
    void set_cwnd(const AckEvent& ev);
    bool recover_or_restore(const AckEvent& ev, std::uint64_t lost);
    [[nodiscard]] bool in_tcp_recovery(const AckEvent& ev) const;

    // Long-term (policer) sampling.
    void lt_sampling(const AckEvent& ev);
    void lt_interval_done(double bw, const RateSample& rs, Instant now);
    void lt_reset_interval(const RateSample& rs, Instant now);
    void lt_reset();

    void enter_probe_bw(Instant now);
    void advance_cycle_phase(Instant now);
    void save_cwnd();
    [[nodiscard]] std::uint64_t bdp(double bw, double gain) const;
    [[nodiscard]] std::uint64_t inflight(double bw, double gain) const;
    [[nodiscard]] std::uint64_t quantization_budget(std::uint64_t cwnd) const;
    [[nodiscard]] std::uint64_t ack_aggregation_allowance() const;
    [[nodiscard]] std::uint64_t min_pipe_cwnd() const { return 4 * mds_; }

    std::uint64_t mds_;
    bool lt_enabled_;
    bool aggregation_enabled_;
    std::uint64_t rng_;  // for the first ProbeBW phase

    std::uint64_t cwnd_;
    std::uint64_t prior_cwnd_ = 0;
    double pacing_rate_;
    bool has_seen_rtt_ = false;
    Mode mode_ = Mode::startup;
    double pacing_gain_;
    double cwnd_gain_;

    WindowedMax bw_{10};  // bytes/s over 10 rounds (bbr_bw_rtts)
    std::optional<Duration> min_rtt_;
    Instant min_rtt_stamp_{};
    std::uint64_t round_count_ = 0;
    std::uint64_t next_round_delivered_ = 0;
    bool round_start_ = false;

    double full_bw_ = 0;
    unsigned full_bw_count_ = 0;
    bool full_bw_reached_ = false;

    unsigned cycle_index_ = 0;
    Instant cycle_stamp_{};

    std::optional<Instant> probe_rtt_done_;
    bool probe_rtt_round_done_ = false;
    bool idle_restart_ = false;

    RecoveryPeriod recovery_;
    bool prev_in_recovery_ = false;
    bool packet_conservation_ = false;
    std::uint64_t total_lost_ = 0;  // bytes declared lost so far (tp->lost)

    // ACK aggregation (bbr_update_ack_aggregation): the most data acked
    // beyond what the bandwidth explains, over two windows of 5 rounds.
    std::uint64_t extra_acked_[2] = {0, 0};
    unsigned extra_acked_index_ = 0;
    unsigned extra_acked_rounds_ = 0;
    Instant ack_epoch_start_{};
    std::uint64_t ack_epoch_acked_ = 0;

    // Long-term sampling (bbr_lt_bw_sampling).
    bool lt_sampling_ = false;
    bool lt_use_bw_ = false;
    double lt_bw_ = 0;
    unsigned lt_rounds_ = 0;
    Instant lt_last_stamp_{};
    std::uint64_t lt_last_delivered_ = 0;
    std::uint64_t lt_last_lost_ = 0;
};

}  // namespace ndm::cc
