// How a sender tells a lost packet from a reordered one (ConnectionConfig::
// loss_detection). Every mode keeps RFC 9002's probe timeout, persistent
// congestion and spurious-loss undo; they differ in the thresholds that
// declare a packet lost once a later one has been acknowledged.
#pragma once

#include <optional>
#include <string_view>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

enum class LossDetection {
    // RFC 9002 §6.1 thresholds that widen when a loss proves spurious (a
    // packet declared lost is acknowledged after all): the packet threshold
    // grows to the reordering seen (at most 300, Linux's tcp_max_reordering)
    // and the time threshold by 1/8 RTT per spurious loss (at most 2 RTTs).
    // They never shrink: reordering is taken to be a property of the path.
    // The default.
    adaptive,
    // RFC 9002 §6.1 as written: 3 packets, 9/8 of the RTT, fixed.
    rfc9002,
    // RFC 8985 (RACK-TLP) §6.2, the time-based loss detection of Linux TCP:
    // lost when sent a reordering window before the most recently delivered
    // packet's send time plus its RTT. The window is 0 until reordering has
    // been seen (with the 3-packet rule as well), then min_rtt/4 times a
    // multiplier that grows by one per round trip with a spurious loss (TCP's
    // DSACK), up to the smoothed RTT, and falls back to 1 after 16 recoveries
    // without one. For comparisons with kernel TCP on reordering paths.
    rack,
};

constexpr std::string_view to_string(LossDetection d) {
    switch (d) {
        case LossDetection::adaptive: return "adaptive";
        case LossDetection::rfc9002: return "rfc9002";
        case LossDetection::rack: return "rack";
    }
    return "?";
}

constexpr std::optional<LossDetection> parse_loss_detection(std::string_view s) {
    for (LossDetection d : {LossDetection::adaptive, LossDetection::rfc9002, LossDetection::rack}) {
        if (s == to_string(d)) return d;
    }
    return std::nullopt;
}

}  // namespace ndm

#pragma GCC visibility pop
