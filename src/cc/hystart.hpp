// HyStart++ (RFC 9406): leaves slow start when the round-trip time grows,
// before the queue overflows, through a Conservative Slow Start (CSS) phase
// that grows at a quarter of the slow-start rate for up to CSS_ROUNDS rounds.
//
// A reusable component: a window-based controller embeds one, forwards its
// PacketSent events and, while cwnd < ssthresh, every ACK, and asks it how
// much the window may grow. The controller owns the window and ssthresh; when
// phase() turns to congestion_avoidance the controller sets ssthresh = cwnd
// (RFC 9406 §4.2). A loss ends HyStart++ through on_congestion().
#pragma once

#include <chrono>
#include <cstdint>

#include "ndm/cc.hpp"
#include "ndm/time.hpp"

namespace ndm::cc {

class HyStart {
public:
    // RFC 9406 §4.3 constants.
    static constexpr Duration kMinRttThresh = std::chrono::milliseconds(4);
    static constexpr Duration kMaxRttThresh = std::chrono::milliseconds(16);
    static constexpr std::int64_t kMinRttDivisor = 8;
    static constexpr std::uint32_t kNRttSample = 8;
    static constexpr std::uint64_t kCssGrowthDivisor = 4;
    static constexpr std::uint32_t kCssRounds = 5;

    enum class Phase : std::uint8_t { slow_start, conservative_slow_start, congestion_avoidance };

    // The round ends when a packet sent after the last one sent so far is
    // acknowledged, so the send times of packets are needed (RFC 9406 §4.2
    // tracks SND.NXT; ACK frames here carry the largest acked packet's send
    // time, not its number). Without any PacketSent every ACK ends a round and
    // no round ever collects N_RTT_SAMPLE samples: slow start is then plain.
    void on_packet_sent(const PacketSent& p) noexcept {
        if (p.time > last_sent_) last_sent_ = p.time;
    }

    // Round tracking, RTT samples and phase changes for one ACK received while
    // the controller is in slow start (cwnd < ssthresh). Call it for every
    // such ACK, app-limited ones included: their RTT samples are valid.
    void on_ack(const AckEvent& ev) noexcept;

    // Window growth in bytes for bytes_acked in the current phase: a quarter
    // in CSS with the remainder carried over exactly, all of it otherwise
    // (slow start, or plain slow start once HyStart++ is over).
    // Growth is not limited to L·SMSS (RFC 9406 §4.2): L is infinite for a
    // paced sender, and the ndm core paces (RFC 9002 §7.7).
    [[nodiscard]] std::uint64_t growth(std::uint64_t bytes_acked) noexcept;

    // Loss or ECN in slow start or CSS: go to congestion avoidance
    // (RFC 9406 §4.2; the controller reduces ssthresh its own way).
    void on_congestion() noexcept { phase_ = Phase::congestion_avoidance; }
    // Undo of a spurious loss (RFC 9438 §4.9): the phase before on_congestion().
    // Nothing else changes while HyStart++ is over (on_ack() returns at once,
    // growth() is not asked for), so the phase is all an undo has to restore.
    void restore_phase(Phase p) noexcept { phase_ = p; }

    [[nodiscard]] Phase phase() const noexcept { return phase_; }
    [[nodiscard]] bool done() const noexcept { return phase_ == Phase::congestion_avoidance; }

    // For tests and statistics. Duration::max() stands for "infinity".
    [[nodiscard]] Duration last_round_min_rtt() const noexcept { return last_round_min_rtt_; }
    [[nodiscard]] Duration current_round_min_rtt() const noexcept { return current_round_min_rtt_; }
    [[nodiscard]] Duration css_baseline_min_rtt() const noexcept { return css_baseline_min_rtt_; }
    [[nodiscard]] std::uint32_t rounds() const noexcept { return rounds_; }
    [[nodiscard]] std::uint32_t css_rounds() const noexcept { return css_rounds_; }
    [[nodiscard]] Instant last_sent() const noexcept { return last_sent_; }

    // RttThresh = clamp(lastRoundMinRTT / MIN_RTT_DIVISOR, MIN_RTT_THRESH,
    // MAX_RTT_THRESH), RFC 9406 §4.2.
    static constexpr Duration rtt_thresh(Duration last_round_min_rtt) noexcept {
        const Duration d = last_round_min_rtt / kMinRttDivisor;
        return d < kMinRttThresh ? kMinRttThresh : (d > kMaxRttThresh ? kMaxRttThresh : d);
    }

private:
    static constexpr Duration kInfinite = Duration::max();

    void start_round() noexcept;

    // 48 bytes: the small counters are bytes (each is bounded, see below), so
    // a controller embedding HyStart (and ndm's embedding of Cubic) stays small.
    Instant last_sent_ = Instant::min();   // send time of the latest packet (SND.NXT)
    Instant window_end_ = Instant::min();  // the round ends when a later packet is acked
    Duration last_round_min_rtt_ = kInfinite;
    Duration current_round_min_rtt_ = kInfinite;
    Duration css_baseline_min_rtt_ = kInfinite;
    std::uint32_t rounds_ = 0;  // rounds completed, for tests
    Phase phase_ = Phase::slow_start;
    // Saturates at N_RTT_SAMPLE: only "fewer than N_RTT_SAMPLE" matters.
    std::uint8_t rtt_sample_count_ = 0;
    std::uint8_t css_rounds_ = 0;     // CSS rounds completed (≤ CSS_ROUNDS), the partial first one included
    std::uint8_t css_remainder_ = 0;  // acked bytes (< CSS_GROWTH_DIVISOR) not yet turned into CSS growth
};

}  // namespace ndm::cc
