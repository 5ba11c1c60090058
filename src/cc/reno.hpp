// NewReno as specified for QUIC by RFC 9002 §7 and Appendix B.
#pragma once

#include <cstdint>
#include <string_view>

#include "cc/window.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

class Reno final : public Controller {
public:
    static constexpr std::string_view kName = "reno";
    static constexpr std::string_view kDescription =
        "NewReno (RFC 9002 section 7): slow start, AIMD with byte counting; options: beta";
    // kLossReductionFactor, RFC 9002 §7.2.
    static constexpr double kDefaultBeta = 0.5;

    // Options: beta=0.1..0.95 (multiplicative decrease). Throws
    // std::invalid_argument for an unknown key, a value out of range or a zero
    // max_datagram_size.
    explicit Reno(const Params& params, const Options& options = {});

    void on_ack(const AckEvent& ev) override;
    void on_congestion_event(const CongestionEvent& ev) override;
    void on_spurious_congestion(const SpuriousEvent& ev) override;
    void on_idle_restart(Instant now) override;

    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::uint64_t ssthresh() const override { return ssthresh_; }
    [[nodiscard]] std::string_view state() const override;
    [[nodiscard]] std::string_view name() const override { return kName; }

    [[nodiscard]] double beta() const { return beta_; }
    [[nodiscard]] const RecoveryPeriod& recovery() const { return recovery_; }

private:
    std::uint64_t mds_;
    double beta_;
    std::uint64_t cwnd_;
    std::uint64_t ssthresh_ = UINT64_MAX;
    // Bytes acknowledged in congestion avoidance not yet turned into growth:
    // cwnd grows by one MDS per cwnd bytes acked, exactly, with no rounding.
    std::uint64_t ca_acked_ = 0;
    RecoveryPeriod recovery_;
    // Window before the last reduction, for on_spurious_congestion.
    bool can_undo_ = false;
    std::uint64_t undo_cwnd_ = 0;
    std::uint64_t undo_ssthresh_ = 0;
};

}  // namespace ndm::cc
