// Credit-based flow control (RFC 9000 §4), one object per direction and
// level (connection or stream).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::transport {

// What we may send: the peer's limit and how much of it we used.
class SendCredit {
public:
    explicit SendCredit(std::uint64_t limit = 0) : limit_(limit) {}
    [[nodiscard]] std::uint64_t available() const { return limit_ - used_; }
    [[nodiscard]] std::uint64_t limit() const { return limit_; }
    [[nodiscard]] std::uint64_t used() const { return used_; }
    void consume(std::uint64_t n) { used_ += std::min(n, available()); }
    // MAX_DATA / MAX_STREAM_DATA only ever raise the limit (RFC 9000 §4.1);
    // returns true when credit became available again.
    bool raise(std::uint64_t limit) {
        if (limit <= limit_) return false;
        bool was_blocked = available() == 0;
        limit_ = limit;
        return was_blocked;
    }

private:
    std::uint64_t limit_;
    std::uint64_t used_ = 0;
};

// What we let the peer send: the limit we advertised, the highest offset
// received, and how much the application consumed. The window slides when
// the application has consumed half of it, so a bulk sender never stalls
// waiting for an update (the update leaves a full RTT of slack).
//
// Auto-tuning (as Linux's tcp_rcv_space_adjust and Chromium's QUIC flow
// controller do): when the window slides again within two RTTs of the
// previous slide, it is the window, not the application, that limits the
// peer, so it doubles, up to kAutoTuneFactor times its initial size. A lossy
// high-BDP path needs several RTTs of data buffered behind each hole
// (bench/RESULTS.md, "Fidelity against the kernel"). Only data the
// application consumed makes it grow, so a peer cannot inflate it alone.
//
// A cap (set_cap) bounds the window from outside: an Endpoint shares one
// receive budget among its connections this way. The auto-tuned size is
// kept under it, so a cap that is lifted gives the grown window back.
class ReceiveWindow {
public:
    static constexpr std::uint64_t kAutoTuneFactor = 4;

    explicit ReceiveWindow(std::uint64_t window = 0)
        : window_(window), max_window_(window * kAutoTuneFactor), limit_(window) {}
    // A new window from now on (auto-tuned up to kAutoTuneFactor times it,
    // or fixed). The limit already advertised stays: a peer's credit is
    // never withdrawn (RFC 9000 §4.1), so a smaller window binds once the
    // peer has used it.
    void resize(std::uint64_t window, bool autotune) {
        window_ = window;
        max_window_ = autotune ? window * kAutoTuneFactor : window;
    }
    [[nodiscard]] std::uint64_t limit() const { return limit_; }
    [[nodiscard]] std::uint64_t received() const { return received_; }
    // The window in use: the auto-tuned size, under the cap.
    [[nodiscard]] std::uint64_t window() const { return std::min(window_, cap_); }
    // At most `bytes` ahead of what the application consumed from now on
    // (credit already advertised stays, as with resize()).
    void set_cap(std::uint64_t bytes) { cap_ = bytes; }
    // Records data up to end_offset; false means the peer exceeded our limit.
    bool on_received(std::uint64_t end_offset) {
        if (end_offset > limit_) return false;
        received_ = std::max(received_, end_offset);
        return true;
    }
    void on_consumed(std::uint64_t n) { consumed_ += n; }
    // Written without a subtraction: after resize() the limit may lie
    // beyond consumed_ + window().
    [[nodiscard]] bool should_update() const { return consumed_ + window() >= limit_ + window() / 2; }
    // Slides the window and returns the limit to advertise. A slide that
    // consumption made due (not the resend of a lost update) grows the
    // window first when the previous one was under two RTTs ago.
    std::uint64_t update(Instant now, Duration rtt) {
        if (should_update()) {
            if (has_slid_ && rtt > Duration::zero() && now - last_slide_ < 2 * rtt) {
                window_ = std::min(2 * window_, max_window_);
            }
            has_slid_ = true;
            last_slide_ = now;
        }
        limit_ = std::max(limit_, consumed_ + window());
        return limit_;
    }

private:
    std::uint64_t window_;
    std::uint64_t max_window_;
    std::uint64_t limit_;
    std::uint64_t cap_ = UINT64_MAX;
    std::uint64_t received_ = 0;
    std::uint64_t consumed_ = 0;
    bool has_slid_ = false;
    Instant last_slide_{};
};

}  // namespace ndm::transport
