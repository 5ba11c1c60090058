// The loss discrimination of the `ndm` controller (docs/ndm-controller.md §7):
// for each loss event (one ACK's or timeout's batch of lost packets) a
// verdict, random or congestive, from the NDM model's P(congestive) for the
// round and from safety rules that override the model. It holds only the
// bookkeeping the rules need (the forgiven-loss budget over recent rounds)
// and sees the path through the typed LossEvidence below, so the rules are
// tested on their own (tests/transport/test_ndm_discriminator.cpp).
//
// The rules, in the order they are checked (each makes the loss congestive):
//   1. ECN CE marks: a router said its queue is building (RFC 9002 §7.1).
//   2. Persistent congestion (RFC 9002 §7.6), the RTO analogue.
//   3. A loss detected after an ACK silence longer than a PTO (RFC 9002
//      §6.2.1: smoothed_rtt + 4·rttvar): the path stopped delivering.
//   4. The forgiven-loss cap: forgiving the event would take the forgiven
//      share of the packets of the last kCapRounds round trips (and the
//      current one) above `cap` (default 15 %, BBRv1's random-loss ceiling
//      with margin: its ProbeBW gain of 1.25 keeps the bandwidth estimate
//      while 1.25·(1 − p) ≥ 1, p ≤ 20 %).
//   5. Queueing-delay evidence: the smallest queueing delay of the last round
//      trip, relative to min_rtt, at least `queue` (default 1.5) — a queue
//      that did not drain for a whole round trip. The threshold sits above
//      the RTT floor that order-preserving jitter raises by itself (each
//      packet waits behind its predecessors, so a round's smallest RTT is
//      near the jitter's maximum: ~1.0–1.2·min_rtt on a 30 ± 10 ms or
//      50 ± 20 ms one-way path), and below a deep buffer's queue (Cubic
//      beside ndm in a 4-BDP buffer keeps ≥ 2.5 BDP after its reduction).
//      Smaller standing queues are the model's to judge.
//   6. A saturated probe with excess loss: BBR is probing for bandwidth
//      (Startup, or ProbeBW_UP after its first round), the delivery rate has
//      stopped growing (Startup: a round with under 25 % growth; UP: the last
//      round under 1.1× the bandwidth estimate the probe started from), and
//      the round's losses exceed what the path's random loss explains: more
//      than e + 3·√e packets, e = the round's packets × the loss rate of
//      recent rounds that did not probe (ProbeBW's CRUISE and REFILL, which
//      send at most the estimated BDP: their losses are the path's, not the
//      probe's). The pacing gain found no more bandwidth and raised the loss
//      rate, so the path is full and the extra loss is the overflow of a
//      bottleneck's buffer — however small that buffer, whose queue (a
//      ¼-BDP droptail: ≤ 0.25·min_rtt) no delay rule sees. On a path with
//      random loss and spare capacity the probe's losses are the path's
//      usual ones, and are left to rule 7.
//   7. The model: P ≥ `threshold` (default 0.5). A higher threshold buys
//      goodput on order-preserving jitter, where the model (trained on the
//      losses of Cubic/Reno senders) leans congestive (0.7: 391 → 479 Mbit/s
//      on a 30 ± 10 ms in-order path at 2 % loss), but beside Cubic at a
//      1-BDP droptail (50 Mbit/s, 30 ms) the model is what keeps ndm fair:
//      at 0.7 Cubic kept 5.0 Mbit/s of 50, at 0.5 21.5 (beside Cubic 22.9).
// Everything else is random: repaired by the transport, ignored by the
// controller's model.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ndm::cc::ndm {

enum class Verdict : std::uint8_t {
    random,      // forgiven
    ecn,         // rule 1
    persistent,  // rule 2
    timeout,     // rule 3
    cap,         // rule 4
    queue,       // rule 5
    probe,       // rule 6
    model,       // rule 7
};
std::string_view to_string(Verdict v) noexcept;
[[nodiscard]] constexpr bool congestive(Verdict v) noexcept { return v != Verdict::random; }

// What the controller knows about one loss event when it judges it.
struct LossEvidence {
    std::uint64_t packets_lost = 0;
    bool ecn_ce = false;         // a CE-mark event (no packets lost)
    bool persistent = false;     // RFC 9002 §7.6
    bool after_silence = false;  // no ACK for longer than a PTO before it
    float p = 0;                 // the model's P(congestive) for this round
    float standing_queue = 0;    // the last round's smallest queueing delay / min_rtt
    bool saturated_probe = false;  // probing for bandwidth found none (rule 6, with excess loss)
};

class LossDiscriminator {
public:
    static constexpr float kDefaultCap = 0.15F;
    static constexpr float kDefaultQueue = 1.5F;
    static constexpr float kDefaultThreshold = 0.5F;
    static constexpr std::size_t kCapRounds = 4;

    LossDiscriminator() = default;
    LossDiscriminator(float cap, float queue, float threshold = kDefaultThreshold) noexcept
        : cap_(cap), queue_(queue), threshold_(threshold) {}

    // Packets newly acknowledged (counted in the cap's window).
    void on_acked(std::uint64_t packets) noexcept { cur_.packets += packets; }
    // A round trip ended: the current round enters the cap's window, and,
    // when `baseline` (a round that sent no more than the estimated BDP),
    // the random-loss baseline of rule 6.
    void on_round_end(bool baseline = false) noexcept;
    // The verdict on one loss event; a random verdict is charged to the
    // forgiven budget. Every event's packets count in the cap's window.
    Verdict judge(const LossEvidence& e) noexcept;

    // The forgiven share of the window's packets, were `extra` more forgiven.
    [[nodiscard]] float forgiven_share(std::uint64_t extra = 0) const noexcept;
    // The loss rate of recent baseline rounds (decayed by 7/8 a round).
    [[nodiscard]] float baseline_loss() const noexcept;
    // The current round's losses exceed what the baseline explains (rule 6).
    [[nodiscard]] bool excess_loss() const noexcept;
    [[nodiscard]] float cap() const noexcept { return cap_; }
    [[nodiscard]] float queue() const noexcept { return queue_; }
    [[nodiscard]] float threshold() const noexcept { return threshold_; }

private:
    struct Round {
        std::uint64_t packets = 0;   // acknowledged + lost
        std::uint64_t lost = 0;
        std::uint64_t forgiven = 0;  // lost and forgiven
    };
    float cap_ = kDefaultCap;
    float queue_ = kDefaultQueue;
    float threshold_ = kDefaultThreshold;
    Round cur_;
    std::array<Round, kCapRounds> past_{};
    std::size_t next_ = 0;
    float base_packets_ = 0;  // decayed sums over baseline rounds
    float base_lost_ = 0;
};

}  // namespace ndm::cc::ndm
