// Credit-based flow control (RFC 9000 §4), one object per direction and
// level (connection or stream).
#pragma once

#include <algorithm>
#include <cstdint>

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
class ReceiveWindow {
public:
    explicit ReceiveWindow(std::uint64_t window = 0) : window_(window), limit_(window) {}
    [[nodiscard]] std::uint64_t limit() const { return limit_; }
    [[nodiscard]] std::uint64_t received() const { return received_; }
    // Records data up to end_offset; false means the peer exceeded our limit.
    bool on_received(std::uint64_t end_offset) {
        if (end_offset > limit_) return false;
        received_ = std::max(received_, end_offset);
        return true;
    }
    void on_consumed(std::uint64_t n) { consumed_ += n; }
    [[nodiscard]] bool should_update() const { return consumed_ + window_ - limit_ >= window_ / 2; }
    // Slides the window and returns the new limit to advertise.
    std::uint64_t update() {
        limit_ = consumed_ + window_;
        return limit_;
    }

private:
    std::uint64_t window_;
    std::uint64_t limit_;
    std::uint64_t received_ = 0;
    std::uint64_t consumed_ = 0;
};

}  // namespace ndm::transport
