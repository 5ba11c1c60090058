// "ndm-cubic": this project's first own NDM controller, the design brief of
// docs/ndm-controller.md §1.2 ("keep the idea, fix the signal") on Cubic.
// `ndm` (ndm_bbr.hpp) puts the same loss classifier on BBRv3's model.
//
// - Increase: Cubic's (RFC 9438 with HyStart++), by embedding the Cubic
//   controller, as Orca layers its agent on Cubic (Abbasloo et al.,
//   SIGCOMM 2020). Cubic also supplies the cwnd-limited rule: no growth on
//   app-limited ACKs (RFC 9002 §7.8).
// - Evidence: per-round features from raw RTT samples (features.hpp) and a
//   real entropy (entropy.hpp).
// - Classifier: a small GRU network run through the SIMD engine outputs
//   P = P(loss is congestive); stepped once per round trip, and once more
//   (without committing its state) at each loss.
// - Decrease scaled by the confidence: β_eff = 1 − (1 − β_cubic)·(2P − 1)
//   for a loss treated as congestive (Cubic's β with bottleneck evidence
//   or in slow start). A loss with P < 0.5 is forgiven: no reduction and no
//   recovery period (one recovery period per RTT would stall Cubic's growth
//   for good at a few % random loss).
// - Safety rules (docs/ndm-controller.md §1.2; El Khayat et al.'s bounded
//   misclassification): at most `forgive` forgiven losses per round trip;
//   persistent congestion (RTO-like) always congestive and collapses the
//   window; a standing queue (the round's smallest queueing delay
//   ≥ standing·min_rtt) at a saturated bottleneck (a steady delivery rate)
//   makes every loss congestive (P = 1), and so does a steady delivery
//   rate with a window above 1.25× what the path delivers per round trip
//   (a tiny buffer overflows with almost no queue). There is
//   deliberately no loss-rate rule: on a lossy path the loss rate is exactly
//   what must not decide (docs/ndm-controller.md §3.3; queueing evidence at the loss does).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "cc/cubic.hpp"
#include "cc/ndm/features.hpp"
#include "cc/ndm/kernels.hpp"
#include "cc/ndm/model.hpp"
#include "cc/ndm/model_choice.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc::ndm {

class NdmController final : public Controller {
public:
    static constexpr std::string_view kName = "ndm-cubic";
    static constexpr std::string_view kDescription =
        "NDM on Cubic (docs/ndm-controller.md 3): Cubic increase, GRU loss classifier on RTT "
        "features scales the decrease; options: model, simd, forgive, standing, beta, "
        "hystart";
    static constexpr std::uint32_t kDefaultForgive = 3;
    static constexpr double kDefaultStanding = 0.25;
    static constexpr std::uint32_t kMaxState = 8;  // GRU units a model may have in total
    static constexpr std::uint8_t kSnapshotRounds = 4;
    // A round's delivery rate is "steady" when it is within e^±0.06 (~6 %) of
    // the previous round's; two steady rounds in a row are the signature of
    // a saturated bottleneck (its service rate is constant while its queue
    // never drains). An order-preserving jittery link's rounds swing by
    // tens of percent (docs/ndm-controller.md §3.3, rule 3).
    static constexpr float kSteadyRate = 0.06F;
    static constexpr std::uint8_t kSteadyRounds = 2;
    // With a steady rate, a queue this large (× min_rtt) makes a congestive
    // verdict take Cubic's full reduction.
    static constexpr float kSteadyQueue = 0.1F;
    // After this many steady rounds the standing-queue threshold is
    // kLongSteadyFraction·standing (0.1·min_rtt by default).
    static constexpr std::uint8_t kLongSteadyRounds = 4;
    static constexpr float kLongSteadyFraction = 0.4F;
    // P is quantised to 1/1024 before use, so that the kernels' last-ulp
    // differences cannot change a decision (docs/ndm-controller.md §4).
    static constexpr float kPQuantum = ndm::kPQuantum;

    // Options: model=PATH (an .ndmm file; "default" = the compiled-in model),
    // simd=auto|scalar|sse42|avx2|avx512|neon, forgive=0..64 losses per round
    // trip, standing=0.05..10 (× min_rtt), beta, hystart
    // (passed to Cubic). Throws std::invalid_argument for an unknown key, a bad
    // value, a model that cannot be loaded or does not have 8 inputs and 1
    // output, or a zero max_datagram_size.
    explicit NdmController(const Params& params, const Options& options = {});

    void on_packet_sent(const PacketSent& p) override { cubic_.on_packet_sent(p); }
    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override;
    void on_spurious_congestion(const SpuriousEvent& ev) override {
        cubic_.on_spurious_congestion(ev);
    }
    void on_idle_restart(Instant now) override { cubic_.on_idle_restart(now); }

    [[nodiscard]] std::uint64_t cwnd() const override { return cubic_.cwnd(); }
    [[nodiscard]] std::uint64_t ssthresh() const override { return cubic_.ssthresh(); }
    [[nodiscard]] std::string_view state() const override { return cubic_.state(); }
    [[nodiscard]] std::string_view name() const override { return kName; }

    struct Counters {
        // Congestion events that started a decision (saturating at 65535):
        std::uint16_t forgiven = 0;     // forgiven (no reduction)
        std::uint16_t congestive = 0;   // reduced by the model's P
        std::uint16_t forced = 0;       // reduced because a safety rule fired
        std::uint16_t persistent = 0;   // persistent congestion
    };
    // Read-outs for tests and statistics.
    [[nodiscard]] const Counters& counters() const noexcept { return counters_; }
    [[nodiscard]] float last_p() const noexcept { return last_p_; }
    [[nodiscard]] const FeatureTracker& features() const noexcept { return features_; }
    [[nodiscard]] const Cubic& cubic() const noexcept { return cubic_; }
    [[nodiscard]] Simd simd() const noexcept { return kernels_->simd; }
    // What this controller adds to the Cubic it embeds (features, network
    // state, decision state), excluding the shared model.
    static constexpr std::size_t ndm_state_bytes() noexcept {
        return sizeof(NdmController) - sizeof(Cubic);
    }

private:
    // Runs the model on f from state h (batch of one); returns the quantised P.
    float run_model(const FeatureVector& f, float* h) const noexcept;
    // True when, over the last few rounds, the window grew by a tenth or more
    // and the delivery rate grew along with it: the path absorbed the larger
    // window as rate, not as queue, so an elevated RTT floor is not a
    // standing bottleneck queue (an order-preserving jittery link).
    [[nodiscard]] bool rate_follows_window() const noexcept;
    // True when the last kSteadyRounds rounds each delivered within
    // kSteadyRate of the round before: a bottleneck is serving at its
    // constant rate.
    [[nodiscard]] bool steady_rate() const noexcept { return steady_rounds_ >= kSteadyRounds; }

    Cubic cubic_;
    FeatureTracker features_;
    // The compiled-in default or a file loaded once per process and path
    // (both live until exit): a plain pointer keeps the state small.
    const Model* model_;
    const Kernels* kernels_;
    std::array<float, kMaxState> h_{};  // the GRU state, committed once per round
    float last_p_ = 0;
    float standing_;
    std::uint8_t forgive_;
    std::uint8_t forgiven_in_round_ = 0;
    std::uint8_t rounds_since_snapshot_ = 0;
    std::uint8_t steady_rounds_ = 0;  // consecutive rounds with a steady delivery rate (saturating)
    Counters counters_;
    // Delivery rate and cwnd a few rounds ago: whether the rate follows the
    // window (no bottleneck) or not (a standing queue at a bottleneck).
    float snap_rate_ = 0;
    float snap_cwnd_ = 0;
    float prev_rate_ = 0;  // the previous round's delivery rate, bytes/s
};

}  // namespace ndm::cc::ndm
