// Coalescing of an application's small writes into full packets: whether new
// stream data short of a full packet, with nothing else to send, waits for
// the application to write more (Connection::set_send_coalescing).
//
// An application that paces its writes (ndm-send -b) hands the connection a
// few bytes at a time; sent as they come, each became a datagram of its own
// (24 bytes of payload a datagram at -b 10M). TCP meets this with Nagle's
// algorithm (RFC 896, RFC 9293 §3.7.4: a sub-MSS segment waits while data is
// unacknowledged) and Linux's autocorking (a small segment waits while the
// socket's previous packets are still queued below it); both can hold a
// write for a whole round trip or longer. Here the wait has a bound the
// application sets from what it knows of its own write rate, and only the
// case that gains from it waits:
// - new stream data, less than a full packet's worth (kPacketOverhead);
// - nothing else waiting: no retransmission, no FIN (a stream's last bytes
//   go at once), no bytes held back by the peer's flow control (more writes
//   would not add to what may go), no control frame; an ACK that is due, a
//   probe or the handshake are sent as ever, and the waiting data rides
//   along with them;
// - for at most max_hold from the first moment the connection found it
//   waiting, after which it goes as it is.
// While data waits the sender is application-limited, as Linux counts a
// sender with less than an MSS unsent (tcp_rate_check_app_limited): its rate
// samples are marked so (delivery_rate.hpp, RFC 9002 §7.8).
#pragma once

#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::transport {

class SendCoalescing {
public:
    // What a 1-RTT packet may spend on other than stream bytes: the short
    // header with the longest connection ID and packet number (1 + 20 + 4),
    // the AEAD tag (16) and a STREAM frame's own header at its longest
    // (type, 8-byte stream ID and offset, 2-byte length: 19). A packet of
    // max datagram size - 60 stream bytes is counted full.
    static constexpr std::uint64_t kPacketOverhead = 60;

    // Off (max_hold 0): every byte goes as soon as the window and pacer allow.
    void set_max_hold(Duration max_hold) { max_hold_ = max_hold; }
    [[nodiscard]] Duration max_hold() const { return max_hold_; }
    [[nodiscard]] bool enabled() const { return max_hold_ > Duration::zero(); }

    // The stream bytes of a full packet of `datagram_size` bytes.
    [[nodiscard]] static std::uint64_t packet_room(std::uint64_t datagram_size) {
        return datagram_size > kPacketOverhead ? datagram_size - kPacketOverhead : 1;
    }
    // Whether what waits may wait: `sendable` new stream bytes that flow
    // control lets go, short of `room`, and nothing else (`only_new_data`).
    [[nodiscard]] static bool holdable(std::uint64_t sendable, std::uint64_t room, bool only_new_data) {
        return only_new_data && sendable > 0 && sendable < room;
    }

    // The send path's look at what waits at `now`: starts the wait's clock
    // when data first waits, stops it once none does.
    void observe(bool holdable_now, Instant now) {
        if (!holdable_now) {
            since_ = kNever;
        } else if (since_ == kNever) {
            since_ = now;
        }
    }
    // Whether data that may wait still does at `now`.
    [[nodiscard]] bool holds(bool holdable_now, Instant now) const {
        return enabled() && holdable_now && now < deadline_from(now);
    }
    // When the waiting data goes, or kNever if none waits.
    [[nodiscard]] Instant deadline(bool holdable_now, Instant now) const {
        return holds(holdable_now, now) ? deadline_from(now) : kNever;
    }

private:
    // Not yet observed waiting: its wait starts now.
    [[nodiscard]] Instant deadline_from(Instant now) const { return (since_ == kNever ? now : since_) + max_hold_; }

    Duration max_hold_{0};
    Instant since_ = kNever;
};

}  // namespace ndm::transport
