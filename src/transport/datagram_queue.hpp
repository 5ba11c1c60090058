// Unreliable datagrams (RFC 9221) on one connection: the bounded queue of
// payloads the application gave and the congestion window has not yet let
// go, the frames that carry them (each sent once, recorded only so that its
// acknowledgement or loss can be told, §5.2), and the bounded queue of
// received payloads the application has not read, which drops its oldest
// when full (as quinn's datagram receive buffer). The connection checks
// negotiation and sizes (connection_datagram.cpp); this class keeps the
// queues, their caps and their counts, and pushes the application's events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "ndm/connection.hpp"
#include "transport/frame_sink.hpp"

namespace ndm::transport {

// Bookkeeping charged per queued datagram on top of its payload, so that a
// flood of empty datagrams is bounded by the caps too.
inline constexpr std::size_t kDatagramOverhead = 64;

// The largest payload whose DATAGRAM frame (type 0x31, length, payload)
// takes at most frame_limit bytes; 0 when not even an empty one fits.
std::size_t datagram_payload_limit(std::size_t frame_limit);

struct DatagramCounters {
    std::uint64_t sent = 0, acked = 0, lost = 0, received = 0, dropped = 0, refused = 0;
};

class DatagramQueue {
public:
    // Caps in bytes (payload + kDatagramOverhead each). Events go to `events`.
    DatagramQueue(std::size_t send_buffer, std::size_t receive_buffer, std::deque<Event>& events);

    // ---- sending
    // Queues a payload the caller has checked against the negotiated size:
    // queued with its id, or queue_full (counted as refused).
    DatagramSendResult push(std::span<const std::uint8_t> payload);
    [[nodiscard]] bool has_pending() const { return !send_.empty(); }
    // Bytes of the payloads waiting to be sent.
    [[nodiscard]] std::uint64_t pending_bytes() const { return send_payload_bytes_; }
    // Writes queued datagrams, oldest first, while each one's frame fits the
    // packet; one that does not waits for the next packet (max_payload
    // leaves it room in an empty one). Each is recorded as sent::Datagram.
    void write_frames(FrameSink& sink);
    // From the loss recovery records: the datagram's fate, told once.
    void on_acked(std::uint64_t id);
    void on_lost(std::uint64_t id);

    // ---- receiving
    // A received payload (its size already checked): queued, the oldest
    // dropped first while the cap would be passed.
    void on_received(std::span<const std::uint8_t> payload);
    std::optional<std::vector<std::uint8_t>> pop_received();
    [[nodiscard]] std::size_t readable() const { return recv_.size(); }

    [[nodiscard]] const DatagramCounters& counters() const { return counters_; }

private:
    struct Outgoing {
        std::uint64_t id;
        std::vector<std::uint8_t> payload;
    };
    void note_dropped(std::uint64_t n);  // counts, and tells once until the next read

    std::size_t send_cap_, recv_cap_;
    std::deque<Event>& events_;
    std::deque<Outgoing> send_;
    std::size_t send_charged_ = 0;
    std::uint64_t send_payload_bytes_ = 0;
    std::uint64_t next_id_ = 0;
    std::deque<std::vector<std::uint8_t>> recv_;
    std::size_t recv_charged_ = 0;
    bool drop_told_ = false;  // a DatagramsDropped is out since the last read
    DatagramCounters counters_;
};

}  // namespace ndm::transport
