// Whether the congestion window is what limits the sender (RFC 9002 §7.8),
// so that controllers grow it only when it was used. Stream data waiting in
// the send buffer is not enough: flow control, the pacer, an application
// writing in bursts or a sender whose CPU cannot keep up all leave the window
// unused while data waits, and a window grown on such ACKs says nothing about
// the path (it reached gigabytes on loopback).
//
// The rule is Linux's (tcp_cwnd_validate, tcp_is_cwnd_limited): a latch set
// when a send fills the window, held for one window of sends (until a packet
// sent after it was set is acknowledged); and in slow start, also while cwnd
// is less than twice the most bytes in flight in that window, so that slow
// start can double what the path was actually given. The core owns bytes in
// flight, the controller the window: the connection asks cwnd_limited() with
// the controller's cwnd and ssthresh on every ACK and tells it the answer
// (AckEvent::app_limited).
#pragma once

#include <cstdint>

namespace ndm::transport {

class CwndUsage {
public:
    struct Send {
        std::uint64_t pn = 0;               // the packet just sent (in flight)
        std::uint64_t bytes_in_flight = 0;  // after adding it
        std::uint64_t cwnd = 0;
        // RFC 9002 §7.8: "A sender SHOULD NOT consider itself application
        // limited if it would have fully utilized the congestion window
        // without pacing delay." paced_out: the pacer, not the window, delays
        // the next packet; sendable: bytes that could go at once without it
        // (new stream data within flow control, at least).
        bool paced_out = false;
        std::uint64_t sendable = 0;
    };

    // Every packet that counts in flight, after it was added to bytes in flight.
    void on_packet_sent(const Send& s) noexcept;
    // Every ACK that newly acknowledges in-flight packets: the largest of them.
    void on_ack(std::uint64_t largest_acked_pn) noexcept;

    // tcp_is_cwnd_limited(): may a controller with this window grow on an ACK
    // now? Yes when the window was filled in the current window of sends, or,
    // in slow start (cwnd < ssthresh), while cwnd < 2 × max_bytes_in_flight().
    [[nodiscard]] bool cwnd_limited(std::uint64_t cwnd, std::uint64_t ssthresh) const noexcept;

    // The latch (Linux's is_cwnd_limited) and the most bytes in flight in the
    // current window of sends (max_packets_out, in bytes).
    [[nodiscard]] bool window_filled() const noexcept { return filled_; }
    [[nodiscard]] std::uint64_t max_bytes_in_flight() const noexcept { return max_in_flight_; }

    // Whether this send used the whole window (the pacing rule above included).
    [[nodiscard]] static bool fills_window(const Send& s) noexcept;

private:
    bool filled_ = false;
    bool started_ = false;         // a window of sends has begun
    bool acked_any_ = false;
    std::uint64_t max_in_flight_ = 0;
    std::uint64_t window_end_ = 0;  // cwnd_usage_seq: the window ends once this pn is acked
    std::uint64_t largest_acked_ = 0;
};

}  // namespace ndm::transport
