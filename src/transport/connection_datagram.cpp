// Connection's unreliable datagrams (RFC 9221; connection_impl.hpp): the
// public calls, the size a DATAGRAM may have, and the receipt of one, checked
// against what this side advertised (§3). The queues, their caps and the
// application's events are DatagramQueue's (datagram_queue.hpp); the frames
// go out in connection_send.cpp, their fate comes back through
// connection_recovery.cpp.
#include <fmt/format.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

std::string_view datagram_status_name(DatagramStatus s) {
    switch (s) {
        case DatagramStatus::queued: return "queued";
        case DatagramStatus::too_big: return "too big";
        case DatagramStatus::queue_full: return "queue full";
        case DatagramStatus::not_negotiated: return "not negotiated";
        case DatagramStatus::closed: return "closed";
    }
    return "unknown";
}

// The peer's max_datagram_frame_size bounds the frame (RFC 9221 §3), and
// one 1-RTT packet must hold it (§5: a DATAGRAM is never split), whatever
// connection ID the peer later asks for (the longest, 20 bytes) and with a
// 4-byte packet number.
std::size_t Connection::Impl::max_datagram_payload() const {
    if (state != ConnectionState::established || !have_peer_params || peer_params.max_datagram_frame_size == 0)
        return 0;
    wire::quic::ShortHeader longest;
    longest.dcid.length = static_cast<std::uint8_t>(wire::kMaxConnectionIdLength);
    longest.pn_length = 4;
    const std::size_t packet_room = mds - wire::quic::packet_overhead(longest);
    const std::uint64_t frame_limit = std::min<std::uint64_t>(peer_params.max_datagram_frame_size, packet_room);
    return datagram_payload_limit(static_cast<std::size_t>(frame_limit));
}

// RFC 9221 §3: a DATAGRAM frame to a side that did not advertise
// max_datagram_frame_size, or longer than it, is a PROTOCOL_VIOLATION.
bool Connection::Impl::on_datagram_frame(const wire::DatagramFrame& f, Instant now) {
    const std::uint64_t limit = local_params.max_datagram_frame_size;
    if (limit == 0) {
        close_with_error(CloseCode::protocol_violation,
                         "DATAGRAM frame, but max_datagram_frame_size was not advertised (RFC 9221 §3)", now);
        return false;
    }
    const std::size_t size = wire::datagram_frame_size(f);
    if (size > limit) {
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("DATAGRAM frame of {} bytes exceeds the advertised max_datagram_frame_size of "
                                     "{} (RFC 9221 §3)",
                                     size, limit),
                         now);
        return false;
    }
    // RFC 9221 §5: delivered at once, in arrival order, no reordering buffer.
    datagrams.on_received(f.data);
    return true;
}

DatagramSendResult Connection::send_datagram(std::span<const std::uint8_t> payload) {
    Impl& c = *impl_;
    if (c.state == ConnectionState::closing || c.state == ConnectionState::draining ||
        c.state == ConnectionState::closed)
        return {DatagramStatus::closed, 0};
    const std::size_t max = c.max_datagram_payload();
    if (max == 0) return {DatagramStatus::not_negotiated, 0};
    if (payload.size() > max) return {DatagramStatus::too_big, 0};
    return c.datagrams.push(payload);
}

std::size_t Connection::max_datagram_payload() const { return impl_->max_datagram_payload(); }

std::optional<std::vector<std::uint8_t>> Connection::recv_datagram() { return impl_->datagrams.pop_received(); }

std::size_t Connection::datagrams_readable() const { return impl_->datagrams.readable(); }

}  // namespace ndm
