// "ndm-lkm": the published NDM-TCP kernel module (docs/ndm-lkm.md) as a
// controller of this transport. Host (lkm_host.hpp) emulates what Linux does
// around the module, Module (lkm_module.hpp) is the module; this class only
// converts between packets and bytes and names things.
#pragma once

#include <cstdint>
#include <string_view>

#include "cc/ndm/lkm_host.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc::lkm {

class LkmController final : public Controller {
public:
    static constexpr std::string_view kName = "ndm-lkm";
    static constexpr std::string_view kDescription =
        "NDM-TCP kernel module v1.0, bit-exact port with Linux host emulation (docs/ndm-lkm.md); "
        "options: noise_cut=third|two_thirds, initial_window (packets), cwnd_limited=ignore|check";
    static constexpr std::uint32_t kDefaultInitialWindow = 10;  // Linux TCP_INIT_CWND

    // Options: noise_cut=third (published, default) | two_thirds (intended),
    // initial_window=1..65535 packets, cwnd_limited=ignore (published: the
    // hook grows cwnd also when the window is unused, default) | check (the
    // host skips the hook then). Throws std::invalid_argument for an
    // unknown key, a bad value or a zero max_datagram_size.
    explicit LkmController(const Params& params, const Options& options = {});

    void on_ack(const AckEvent& ev) override { host_.on_ack(ev); }
    void on_congestion_event(const CongestionEvent& ev) override { host_.on_congestion_event(ev); }
    void on_spurious_congestion(const SpuriousEvent&) override { host_.on_spurious_congestion(); }
    void on_idle_restart(Instant) override { host_.on_idle_restart(); }

    [[nodiscard]] std::uint64_t cwnd() const override { return std::uint64_t{host_.sock().cwnd} * mds_; }
    [[nodiscard]] std::uint64_t ssthresh() const override {
        return std::uint64_t{host_.sock().ssthresh} * mds_;
    }
    [[nodiscard]] std::string_view state() const override;
    [[nodiscard]] std::string_view name() const override { return kName; }

    [[nodiscard]] const Host& host() const { return host_; }

private:
    std::uint64_t mds_;
    Host host_;
};

}  // namespace ndm::cc::lkm
