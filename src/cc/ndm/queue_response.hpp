// The queue rules of the `ndm` controller (docs/ndm-controller.md §7.2): what
// stands in for the loss response ndm withholds while it forgives losses.
//
// BBRv3 keeps its queue short partly through its loss response: on a path
// with random loss, every round with losses lowers its short-term model
// (bw_shortterm = max(bw_latest, β·bw_shortterm)) and a probe ends at the
// first round above 2 % loss. ndm forgives the random losses, so it paces at
// the max-filtered bandwidth estimate — which, beside a flow whose rate
// swings (a loss-limited Cubic), is more than its share — and probes until
// the delivery rate stops growing. Both build a queue that a loss-limited
// flow beside it pays for in RTT (Mathis: rate ∝ 1/RTT). Three rules stand
// in for the loss response, and only while losses are being forgiven
// (without forgiven losses ndm is bbr and bbr's loss response applies):
//   - probe: in ProbeBW_UP after its first full round, a delivery rate that
//     has not grown 10 % while the standing queue (a round's smallest
//     queueing delay / min_rtt) rose by `probe` since the probe began: the
//     pacing gain filled a queue, not a pipe. ndm answers as bbr answers a
//     CE mark (the probe ends, inflight_longterm is set from the inflight).
//   - cruise: in ProbeBW_CRUISE, a standing queue `cruise` or more when a
//     round of the last 5 s found the queue empty (ProbeRTT and ProbeBW_DOWN
//     drain the queue ndm makes; a path whose RTT floor is jitter never
//     shows an empty round, and the rule stays off there): ndm's estimate is
//     above its share. The short-term bandwidth bound becomes the latest
//     round's delivery rate / (1 + queue), which drains it in about a round
//     trip.
//   - stall: in ProbeBW_UP after its first full round, a delivery rate that
//     has not grown 10 %, whatever the queue: the probe ends as bbr's own
//     full-bandwidth exit ends it (ProbeBW_DOWN, no congestion signal, the
//     models unchanged). bbr's probe on a lossy path ends at the first round
//     above 2 % loss; ndm's, its random losses forgiven, would otherwise run
//     until the rate has stopped growing for three rounds, at 1.25× the
//     estimate, taking the share of a flow beside it that does answer its
//     losses (bbr, Cubic) into the queue (docs/ndm-controller.md §7.2).
// The queue thresholds are raised to `noise` × the mean round-to-round change of
// the standing queue: order-preserving jitter (an LTE bearer's in-sequence
// delivery) moves a round's smallest RTT by itself, with the sending rate,
// and is not a bottleneck's queue.
#pragma once

#include <cstdint>

#include "cc/ndm/features.hpp"
#include "ndm/time.hpp"

namespace ndm::cc::ndm {

// What the controller should do at the end of a round.
enum class QueueAction : std::uint8_t {
    none,
    end_probe,        // answer as to a CE mark
    cut_short_term,   // bound the short-term bandwidth to factor × the latest delivery rate
    stop_probe,       // end ProbeBW_UP without a congestion signal
};

struct QueueDecision {
    QueueAction action = QueueAction::none;
    double factor = 1.0;  // for cut_short_term
};

// The controller's state at a round's end, as the rules need it.
struct QueueRound {
    Instant now;
    bool has_queue = false;  // a standing queue was measured (min_rtt known)
    float standing = 0;      // the round's smallest queueing delay / min_rtt
    bool forgiving = false;  // losses were forgiven in the recent rounds
    bool cruising = false;   // bbr is in ProbeBW_CRUISE
    // bbr is in ProbeBW_UP, past its first full round, and its max_bw has
    // not grown 10 % over its value when the probe began.
    bool stalled_probe = false;
};

class QueueResponse {
public:
    static constexpr float kDefaultProbe = 0.1F;
    static constexpr float kDefaultCruise = 0.1F;
    static constexpr float kDefaultNoise = 5.0F;
    static constexpr Duration kFloorWindow = std::chrono::seconds(5);
    // A standing queue below this (× min_rtt) is an empty queue: the path's
    // floor was reached.
    static constexpr float kEmptyQueue = 1e-3F;

    QueueResponse() = default;
    // A threshold of 0 turns its rule off; `stall` false turns the stall rule off.
    QueueResponse(float probe, float cruise, float noise, bool stall = true) noexcept
        : probe_(probe), cruise_(cruise), noise_(noise), stall_(stall) {}

    // ProbeBW_UP began: the standing queue it starts from.
    void on_probe_start(float standing) noexcept { probe_start_ = standing; }
    QueueDecision on_round_end(const QueueRound& r) noexcept;

    [[nodiscard]] float probe() const noexcept { return probe_; }
    [[nodiscard]] float cruise() const noexcept { return cruise_; }
    [[nodiscard]] float noise() const noexcept { return noise_; }
    [[nodiscard]] bool stall() const noexcept { return stall_; }
    // The mean round-to-round change of the standing queue (decayed by 7/8 a round).
    [[nodiscard]] float jitter() const noexcept { return jitter_; }
    // The standing queue's minimum over the last kFloorWindow, / min_rtt.
    [[nodiscard]] float floor() const noexcept;
    // Decisions taken (saturating), for traces and tests.
    [[nodiscard]] std::uint32_t probes_ended() const noexcept { return probes_ended_; }
    [[nodiscard]] std::uint32_t cuts() const noexcept { return cuts_; }
    [[nodiscard]] std::uint32_t probes_stopped() const noexcept { return probes_stopped_; }

private:
    float probe_ = kDefaultProbe;
    float cruise_ = kDefaultCruise;
    float noise_ = kDefaultNoise;
    bool stall_ = true;
    WindowedMin floor_;  // in µ(min_rtt): the standing queue × 10⁶
    float jitter_ = 0;
    float last_ = 0;
    float probe_start_ = 0;
    std::uint32_t probes_ended_ = 0;
    std::uint32_t cuts_ = 0;
    std::uint32_t probes_stopped_ = 0;
};

}  // namespace ndm::cc::ndm
