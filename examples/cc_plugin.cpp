// A congestion controller as a plugin (ndm/cc_plugin.hpp): built as a shared
// object against the installed package, loaded by the tools without touching
// ndm's tree:
//   ndm-compare --cc-plugin ./libndm-example-cc-plugin.so --cc delay-aimd,cubic --virtual
// "delay-aimd": additive increase of one datagram per window, halving on loss
// and, with target_ms=T, also once per window when the smoothed RTT exceeds the
// minimum by more than T ms (a simple delay signal).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include <ndm/cc_plugin.hpp>

namespace {

class DelayAimd final : public ndm::cc::Controller {
public:
    DelayAimd(const ndm::cc::Params& p, const ndm::cc::Options& o) : mds_(p.max_datagram_size), cwnd_(10 * mds_) {
        for (const auto& [key, value] : o) {
            if (key != "target_ms") throw std::invalid_argument("delay-aimd: unknown option '" + key + "' (target_ms)");
            target_ = std::chrono::milliseconds(std::stoul(value));
        }
    }
    void on_ack(const ndm::cc::AckEvent& ev) override {
        acked_ += ev.bytes_acked;
        if (acked_ < cwnd_) return;
        acked_ -= cwnd_;
        const bool queue_building = target_.count() > 0 && ev.smoothed_rtt - ev.min_rtt > target_;
        cwnd_ = queue_building ? std::max<std::uint64_t>(cwnd_ / 2, 2 * mds_) : cwnd_ + mds_;
    }
    void on_congestion_event(const ndm::cc::CongestionEvent&) override {
        cwnd_ = std::max<std::uint64_t>(cwnd_ / 2, 2 * mds_);
        acked_ = 0;
    }
    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::string_view state() const override { return "congestion_avoidance"; }
    [[nodiscard]] std::string_view name() const override { return "delay-aimd"; }

private:
    std::uint64_t mds_, cwnd_, acked_ = 0;
    ndm::Duration target_{0};
};

}  // namespace

NDM_CC_PLUGIN("ndm example plugin",
              {{"delay-aimd", "AIMD with an optional delay target (examples/cc_plugin.cpp)",
                [](const ndm::cc::Params& p, const ndm::cc::Options& o) { return std::make_unique<DelayAimd>(p, o); }}})
