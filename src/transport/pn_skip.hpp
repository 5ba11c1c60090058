// When a sender skips a packet number on purpose (RFC 9000 §21.4), so that a
// peer acknowledging packets it never received (an optimistic ACK, which
// would let a receiver drive the sender past what the path carries) names
// a number that was never sent and is caught (LossDetector::skip_packet_number).
//
// The gap between skips is drawn uniformly from [1, 2·period]: unpredictable
// to the peer, who cannot tell a skipped number from a lost packet. The
// period starts short, so a receiver that lies from the start is caught in
// its first round trips, and doubles up to a bound, so that a long transfer
// pays one extra ACK range (and one immediate ACK, RFC 9000 §13.2.1) per
// ~kMaxPeriod packets while a liar who starts late is still caught within
// ~2·kMaxPeriod packets (a few MB).
#pragma once

#include <algorithm>
#include <cstdint>

#include "util/rng.hpp"

namespace ndm::transport {

class PacketNumberSkip {
public:
    static constexpr std::uint64_t kFirstPeriod = 16;
    static constexpr std::uint64_t kMaxPeriod = 1024;

    // seed: secret from the peer (a real connection's random source; the
    // simulator's seed, for reproducible runs). Disabled: never skips.
    PacketNumberSkip(std::uint64_t seed, bool enabled) : rng_(seed), enabled_(enabled) { draw(); }

    // Called before each packet number is taken; true: skip this one first.
    bool due() {
        if (!enabled_ || --countdown_ > 0) return false;
        period_ = std::min(period_ * 2, kMaxPeriod);
        draw();
        return true;
    }

private:
    void draw() { countdown_ = 1 + rng_.next() % (2 * period_); }

    util::Xoshiro256 rng_;
    std::uint64_t period_ = kFirstPeriod;
    std::uint64_t countdown_ = 0;
    bool enabled_;
};

}  // namespace ndm::transport
