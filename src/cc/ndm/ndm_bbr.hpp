// "ndm": BBRv3 (src/cc/bbr, draft-ietf-ccwg-bbr-06) whose loss response is
// fed only by the losses the NDM loss discriminator judges congestive
// (docs/ndm-controller.md). The delivery-rate / min-RTT model, the state
// machine and pacing are BBRv3's, unchanged: the Bbr is embedded and sees
// every event, except that
//   - a loss event judged random is not passed on: its PacketLost reports
//     and its CongestionEvent never reach the Bbr, so it starts no recovery
//     period, cuts neither inflight_longterm (HandleInflightTooHigh) nor the
//     short-term model (β), and does not end Startup; the transport repairs
//     it as any loss;
//   - the loss counts the Bbr reads from rate samples and lost packets
//     (RateSample::lost, PacketLost::lost: its 2 %-per-round threshold) have
//     the forgiven bytes taken off (ForgivenLedger);
//   - a spurious-loss undo reaches the Bbr only when the last loss event did.
// The verdict (LossDiscriminator) comes from the NDM model, run through the
// SIMD engine on the round's features (FeatureTracker: raw RTT samples'
// queueing delay relative to min_rtt, its spread and entropy, the
// delivery-rate trend, loss runs) once per round with losses, bounded by
// safety rules: ECN CE, persistent congestion and PTO-like silences always
// congestive, a cap on the forgiven share of packets, a standing queue, and
// a bandwidth probe that found no bandwidth (BBR's own evidence of a full
// path).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cc/bbr.hpp"
#include "cc/ndm/features.hpp"
#include "cc/ndm/forgiven_ledger.hpp"
#include "cc/ndm/kernels.hpp"
#include "cc/ndm/loss_discriminator.hpp"
#include "cc/ndm/queue_response.hpp"
#include "ndm/cc.hpp"
#include "ndm/ndm_model.hpp"

namespace ndm::cc::ndm {

class NdmBbr final : public Controller {
public:
    static constexpr std::string_view kName = "ndm";
    static constexpr std::string_view kDescription =
        "BBRv3 whose loss response sees only the losses the NDM engine judges congestive (docs/ndm-controller.md); "
        "options: model, simd, cap, queue, threshold, probe, qprobe, qcruise, qnoise, stall, loss_thresh, beta, headroom";
    static constexpr std::uint32_t kMaxState = 8;  // GRU units a model may have in total

    // Options: model=PATH|default, simd=auto|scalar|sse42|avx2|avx512|neon,
    // cap=0.01..0.5 (forgiven share of packets), queue=0.05..10 (× min_rtt),
    // threshold=0..1 (the model's P from which a loss is congestive),
    // probe=on|off (the saturated-probe rule), the queue rules' qprobe=0..10
    // and qcruise=0..10 (× min_rtt; 0 turns the rule off), qnoise=0..100 and
    // stall=on|off (a probe that found no bandwidth in a round ends),
    // and bbr's loss_thresh, beta, headroom. Throws std::invalid_argument for
    // an unknown key, a bad value, a model that cannot be loaded or does not
    // have 8 inputs and 1 output, or a zero max_datagram_size.
    explicit NdmBbr(const Params& params, const Options& options = {});

    void on_packet_sent(const PacketSent& p) override { bbr_.on_packet_sent(p); }
    void on_packet_lost(const PacketLost& p) override;
    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override;
    void on_spurious_congestion(const SpuriousEvent& ev) override;
    void on_idle_restart(Instant now) override { bbr_.on_idle_restart(now); }

    [[nodiscard]] std::uint64_t cwnd() const override { return bbr_.cwnd(); }
    [[nodiscard]] std::optional<double> pacing_rate() const override { return bbr_.pacing_rate(); }
    [[nodiscard]] std::string_view state() const override { return bbr_.state(); }
    [[nodiscard]] std::string_view name() const override { return kName; }

    // Loss events by verdict (index: Verdict), saturating.
    using Counters = std::array<std::uint32_t, 8>;
    [[nodiscard]] const Counters& counters() const noexcept { return counters_; }
    [[nodiscard]] const Bbr& bbr() const noexcept { return bbr_; }
    [[nodiscard]] const FeatureTracker& features() const noexcept { return features_; }
    [[nodiscard]] const LossDiscriminator& discriminator() const noexcept { return disc_; }
    [[nodiscard]] const QueueResponse& queue_response() const noexcept { return queue_; }
    [[nodiscard]] const ForgivenLedger& ledger() const noexcept { return ledger_; }
    [[nodiscard]] float last_p() const noexcept { return p_; }
    [[nodiscard]] Simd simd() const noexcept { return kernels_->simd; }

private:
    [[nodiscard]] float round_p(const CongestionEvent& ev);
    // Rule 6's evidence: probing for bandwidth found none.
    [[nodiscard]] bool saturated_probe() const;
    // In ProbeBW_UP for `rounds` full rounds or more, and max_bw under 1.1x
    // its value when the probe began.
    [[nodiscard]] bool stalled_probe(unsigned rounds) const;
    void track_probe(bool round_end);
    void answer_queue(const AckEvent& ev);

    Bbr bbr_;
    FeatureTracker features_;
    LossDiscriminator disc_;
    QueueResponse queue_;
    ForgivenLedger ledger_;
    const Model* model_;
    const Kernels* kernels_;
    std::array<float, kMaxState> h_{};  // the GRU state, committed once per round
    std::vector<PacketLost> pending_;    // this loss event's packets, until its verdict
    Counters counters_{};
    Instant last_ack_{};
    Duration pto_{0};  // smoothed_rtt + 4·rttvar after the latest ACK (RFC 9002 §6.2.1)
    float p_ = 0;      // the model's P for the current round
    float up_start_bw_ = 0;       // bbr's max_bw when its ProbeBW_UP began, bytes/s
    std::uint8_t up_rounds_ = 0;  // rounds since then (saturating)
    bool in_up_ = false;
    bool probe_rule_;
    bool p_valid_ = false;
    bool acked_ = false;
    bool last_forwarded_ = false;  // the Bbr saw the latest loss event
};

}  // namespace ndm::cc::ndm
