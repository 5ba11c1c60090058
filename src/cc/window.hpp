// Helpers shared by the window-based controllers (Reno, Cubic, ...): the
// RFC 9002 §7.2 window bounds and the §7.3.2 recovery period.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::cc {

// kInitialWindow, RFC 9002 §7.2: ten datagrams, limited to 14720 bytes unless
// two datagrams are already larger than that.
constexpr std::uint64_t initial_window(std::uint64_t max_datagram_size) {
    return std::min(10 * max_datagram_size,
                    std::max<std::uint64_t>(14720, 2 * max_datagram_size));
}

// kMinimumWindow, RFC 9002 §7.2.
constexpr std::uint64_t minimum_window(std::uint64_t max_datagram_size) {
    return 2 * max_datagram_size;
}

// The recovery period of RFC 9002 §7.3.2 (congestion_recovery_start_time of
// Appendix B): the window is reduced at most once per period, and a packet
// sent before the period started neither reduces again when lost nor grows
// the window when acknowledged.
class RecoveryPeriod {
public:
    // InCongestionRecovery(sent_time) of RFC 9002 Appendix B.4.
    [[nodiscard]] bool in_recovery(Instant sent_time) const noexcept { return sent_time <= start_; }

    // Called on every congestion event with the send time of the largest lost
    // packet. Returns true when the event starts a new period (the caller
    // reduces its window then); a loss of a packet sent before the current
    // period began belongs to that period and returns false.
    bool start_if_new(Instant largest_lost_sent_time, Instant now) noexcept {
        if (in_recovery(largest_lost_sent_time)) return false;
        start_ = now;
        active_ = true;
        return true;
    }

    // Called on every ACK: the period ends once a packet sent after its start
    // is acknowledged (RFC 9002 §7.3.2). Only active() changes; start() stays,
    // so late losses of older packets still do not reduce again.
    void on_ack(Instant largest_acked_sent_time) noexcept {
        if (largest_acked_sent_time > start_) active_ = false;
    }

    // Forgets the period entirely, as after persistent congestion (RFC 9002
    // Appendix B.8 sets congestion_recovery_start_time = 0) or an undo.
    void reset() noexcept {
        start_ = Instant::min();
        active_ = false;
    }

    // True from the start of a period until a packet sent after it is acked:
    // the "recovery" state for statistics.
    [[nodiscard]] bool active() const noexcept { return active_; }
    // Instant::min() when no period was ever started (or after reset()).
    [[nodiscard]] Instant start() const noexcept { return start_; }

private:
    // Instant::min() rather than 0 of Appendix B: in virtual time a packet may
    // well be sent at Instant{} and must not count as "in recovery".
    Instant start_ = Instant::min();
    bool active_ = false;
};

}  // namespace ndm::cc
