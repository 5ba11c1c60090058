// CUBIC (RFC 9438) with HyStart++ (RFC 9406) for the first slow start.
//
// Windows are reasoned about in segments of max_datagram_size, as in the RFC
// (W_max, W_est, cwnd_prior, K's argument), but cwnd and ssthresh are kept and
// reported in bytes so that growth is byte-exact. How this differs from Linux's
// tcp_cubic (net/ipv4/tcp_cubic.c; docs/cubic.md): real time in
// nanoseconds instead of jiffies, the target at t + smoothed RTT instead of
// t + min RTT, HyStart++ instead of the original HyStart, α switching to 1 at
// cwnd_prior, and no 5 %-per-RTT minimum growth before the first loss.
#pragma once

#include <cstdint>
#include <string_view>

#include "cc/hystart.hpp"
#include "cc/window.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

class Cubic final : public Controller {
public:
    static constexpr std::string_view kName = "cubic";
    static constexpr std::string_view kDescription =
        "CUBIC (RFC 9438) with HyStart++ (RFC 9406); options: beta, c, fast_convergence, hystart";
    static constexpr double kDefaultBeta = 0.7;  // β_cubic, RFC 9438 §4.1.1, §4.6
    static constexpr double kDefaultC = 0.4;     // C, RFC 9438 §4.1.1

    // Options: beta=0.5..0.9, c=0.1..4, fast_convergence=on|off (default on),
    // hystart=on|off (default on). Throws std::invalid_argument for an
    // unknown key, a bad value or a zero max_datagram_size.
    explicit Cubic(const Params& params, const Options& options = {});

    void on_packet_sent(const PacketSent& p) override { hystart_.on_packet_sent(p); }
    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override {
        on_congestion_event_scaled(ev, beta_);
    }
    // The same event with the multiplicative decrease β (in (0, 1]) chosen by
    // the caller instead of β_cubic: for controllers that keep Cubic's
    // increase and scale its decrease (ndm, docs/ndm-controller.md §3).
    void on_congestion_event_scaled(const CongestionEvent& ev, double beta);
    void on_spurious_congestion(const SpuriousEvent& ev) override;
    void on_idle_restart(Instant now) override;

    [[nodiscard]] std::uint64_t cwnd() const override { return s_.cwnd; }
    [[nodiscard]] std::uint64_t ssthresh() const override { return s_.ssthresh; }
    [[nodiscard]] std::string_view state() const override;
    [[nodiscard]] std::string_view name() const override { return kName; }

    // W_cubic(t) = C·(t − K)³ + W_max in segments, t in seconds since the epoch
    // start (RFC 9438 §4.2, Figure 1).
    [[nodiscard]] double w_cubic(double t) const noexcept {
        const double d = t - s_.k;
        return c_ * d * d * d + s_.w_max;
    }

    // Read-outs for tests and statistics; windows in segments, K in seconds.
    [[nodiscard]] double beta() const noexcept { return beta_; }
    [[nodiscard]] double c() const noexcept { return c_; }
    [[nodiscard]] double alpha_cubic() const noexcept { return alpha_cubic_; }
    [[nodiscard]] bool fast_convergence() const noexcept { return fast_convergence_; }
    [[nodiscard]] bool hystart_enabled() const noexcept { return hystart_enabled_; }
    [[nodiscard]] double w_max() const noexcept { return s_.w_max; }
    [[nodiscard]] double k() const noexcept { return s_.k; }
    [[nodiscard]] double cwnd_prior() const noexcept { return s_.cwnd_prior; }
    [[nodiscard]] double w_est() const noexcept { return s_.w_est; }
    [[nodiscard]] double alpha() const noexcept { return s_.alpha_one ? 1.0 : alpha_cubic_; }
    [[nodiscard]] bool epoch_started() const noexcept { return s_.epoch_started; }
    [[nodiscard]] Instant epoch_start() const noexcept { return s_.epoch_start; }
    [[nodiscard]] double cwnd_epoch() const noexcept { return s_.cwnd_epoch; }
    // Whether the last window update in congestion avoidance used W_est
    // (W_cubic(t) < W_est, RFC 9438 §4.3).
    [[nodiscard]] bool reno_friendly() const noexcept { return reno_friendly_; }
    [[nodiscard]] const HyStart& hystart() const noexcept { return hystart_; }
    [[nodiscard]] const RecoveryPeriod& recovery() const noexcept { return recovery_; }

private:
    // Everything a spurious congestion event restores (RFC 9438 §4.9), with
    // HyStart++'s phase (saved_hystart_phase_) the only part of HyStart++
    // that can change between a loss and its undo.
    struct State {
        std::uint64_t cwnd = 0;
        std::uint64_t ssthresh = UINT64_MAX;
        double w_max = 0;       // segments; 0 before the first loss
        double k = 0;           // seconds
        double cwnd_prior = 0;  // segments, cwnd before the last reduction
        double w_est = 0;       // segments, Reno-friendly estimate
        double cwnd_epoch = 0;  // segments, cwnd when the epoch started
        Instant epoch_start{};
        bool alpha_one = false;  // α = 1 once W_est ≥ cwnd_prior, else α_cubic
        bool epoch_started = false;
        // The next epoch takes W_max = cwnd_epoch and K = 0: after a
        // timeout-like collapse (§4.8) or a loss-free slow-start exit (§4.10).
        bool w_max_from_epoch = false;
    };

    [[nodiscard]] double mds_d() const noexcept { return static_cast<double>(mds_); }
    void start_epoch(Instant now) noexcept;
    void congestion_avoidance(const AckEvent& ev, std::uint64_t bytes) noexcept;

    // Per-connection state is 272 bytes (it was 416; ndm embeds a Cubic):
    // the datagram size as 32 bits, flags in one byte, α as a flag, and an
    // undo copy without HyStart++. Same arithmetic, same decisions (pinned by
    // the recorded-trace digests of tests/sim/test_ack_traces.cpp).
    std::uint32_t mds_;
    bool fast_convergence_ : 1;
    bool hystart_enabled_ : 1;
    // The curve's clock stops while ACKs say the sender was app-limited
    // (RFC 9438 §4.2 and §5.8): from the first such ACK until growth resumes.
    bool paused_ : 1 = false;
    bool reno_friendly_ : 1 = false;
    bool can_undo_ : 1 = false;
    HyStart::Phase saved_hystart_phase_ = HyStart::Phase::slow_start;
    double beta_;
    double c_;
    double alpha_cubic_;  // 3(1 − β)/(1 + β), RFC 9438 §4.3

    State s_;
    HyStart hystart_;
    // Remainder (in bytes × bytes) of the per-ACK cubic growth
    // (target − cwnd)·acked / cwnd not yet added to cwnd.
    std::uint64_t growth_remainder_ = 0;
    RecoveryPeriod recovery_;
    Instant paused_since_{};
    Instant last_ack_ = Instant::min();
    State saved_;
};

}  // namespace ndm::cc
