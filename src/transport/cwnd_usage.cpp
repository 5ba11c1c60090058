#include "transport/cwnd_usage.hpp"

namespace ndm::transport {

bool CwndUsage::fills_window(const Send& s) noexcept {
    if (s.bytes_in_flight >= s.cwnd) return true;
    // Paced out with enough waiting to fill the rest of the window.
    return s.paced_out && s.sendable >= s.cwnd - s.bytes_in_flight;
}

void CwndUsage::on_packet_sent(const Send& s) noexcept {
    const bool filled_now = fills_window(s);
    // tcp_cwnd_validate: a new window of sends starts once the previous one
    // was acknowledged; a send that fills the window restarts it latched; an
    // unlatched window tracks the most in flight (and lasts until that is acked).
    const bool window_over = !started_ || (acked_any_ && largest_acked_ >= window_end_);
    if (window_over || filled_now || (!filled_ && s.bytes_in_flight > max_in_flight_)) {
        filled_ = filled_now;
        max_in_flight_ = s.bytes_in_flight;
        window_end_ = s.pn;
        started_ = true;
    }
}

void CwndUsage::on_ack(std::uint64_t largest_acked_pn) noexcept {
    if (!acked_any_ || largest_acked_pn > largest_acked_) largest_acked_ = largest_acked_pn;
    acked_any_ = true;
}

bool CwndUsage::cwnd_limited(std::uint64_t cwnd, std::uint64_t ssthresh) const noexcept {
    if (filled_) return true;
    // "If in slow start, ensure cwnd grows to twice what was ACKed." Written
    // as a halving so that it cannot overflow.
    return cwnd < ssthresh && cwnd / 2 < max_in_flight_;
}

}  // namespace ndm::transport
