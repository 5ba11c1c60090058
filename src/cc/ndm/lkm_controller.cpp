#include "cc/ndm/lkm_controller.hpp"

#include <stdexcept>
#include <string>

#include "cc/option_values.hpp"

namespace ndm::cc::lkm {

namespace {

NoiseCut noise_cut_option(const Options& options) {
    const auto it = options.find("noise_cut");
    if (it == options.end() || it->second == "third") return NoiseCut::third;
    if (it->second == "two_thirds") return NoiseCut::two_thirds;
    throw std::invalid_argument("congestion controller \"" + std::string(LkmController::kName) +
                                "\": option \"noise_cut\" must be third or two_thirds, got \"" +
                                it->second + "\"");
}

bool check_cwnd_limited_option(const Options& options) {
    const auto it = options.find("cwnd_limited");
    if (it == options.end() || it->second == "ignore") return false;
    if (it->second == "check") return true;
    throw std::invalid_argument("congestion controller \"" + std::string(LkmController::kName) +
                                "\": option \"cwnd_limited\" must be ignore or check, got \"" +
                                it->second + "\"");
}

}  // namespace

LkmController::LkmController(const Params& params, const Options& options)
    : mds_(params.max_datagram_size),
      host_(params.max_datagram_size,
            static_cast<std::uint32_t>(
                get_uint(options, "initial_window", kDefaultInitialWindow, 1, 65535, kName)),
            noise_cut_option(options), check_cwnd_limited_option(options)) {
    reject_unknown(options, {"noise_cut", "initial_window", "cwnd_limited"}, kName);
}

std::string_view LkmController::state() const {
    switch (host_.state()) {
        case HostState::recovery:
            return "recovery";
        case HostState::loss:
            return "loss";
        case HostState::open:
            break;
    }
    // The module's own threshold decides how it grows (§1.6: ss = cwnd <
    // S.ssthresh), and it stays low after an undo while the host's is restored.
    return host_.sock().cwnd < host_.module().state().ssthresh ? "slow_start" : "congestion_avoidance";
}

}  // namespace ndm::cc::lkm
