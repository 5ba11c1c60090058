// A controller plugin as a researcher would write one (ndm/cc_plugin.hpp):
// "plugin-aimd", additive increase of one datagram per window, halving on a
// congestion event, with an "increase" option; its own code only.
#include <memory>
#include <stdexcept>
#include <string>

#include "ndm/cc_plugin.hpp"

namespace {

class Aimd final : public ndm::cc::Controller {
public:
    Aimd(const ndm::cc::Params& p, const ndm::cc::Options& o) : mds_(p.max_datagram_size), cwnd_(10 * mds_) {
        if (const auto it = o.find("increase"); it != o.end()) {
            increase_ = std::stoul(it->second);
            if (increase_ == 0 || increase_ > 100) throw std::invalid_argument("plugin-aimd: increase must be 1..100");
        } else if (!o.empty()) {
            throw std::invalid_argument("plugin-aimd: unknown option " + o.begin()->first);
        }
    }
    void on_ack(const ndm::cc::AckEvent& ev) override {
        acked_ += ev.bytes_acked;
        if (acked_ >= cwnd_) {
            acked_ -= cwnd_;
            cwnd_ += increase_ * mds_;
        }
    }
    void on_congestion_event(const ndm::cc::CongestionEvent&) override {
        cwnd_ = std::max<std::uint64_t>(cwnd_ / 2, 2 * mds_);
        acked_ = 0;
    }
    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::string_view state() const override { return "congestion_avoidance"; }
    [[nodiscard]] std::string_view name() const override { return "plugin-aimd"; }

private:
    std::uint64_t mds_, cwnd_, acked_ = 0, increase_ = 1;
};

}  // namespace

NDM_CC_PLUGIN("test AIMD plugin",
              {{"plugin-aimd", "AIMD from a plugin (tests/plugin)",
                [](const ndm::cc::Params& p, const ndm::cc::Options& o) { return std::make_unique<Aimd>(p, o); }}})
