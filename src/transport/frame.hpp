// Frames (RFC 9000 §19, a subset plus the CRYPTO seam for the handshake).
// Decoded frames point into the datagram they came from (no copies).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "ndm/time.hpp"
#include "transport/varint.hpp"
#include "transport/wire_error.hpp"

namespace ndm::wire {

namespace frame_type {
inline constexpr std::uint64_t padding = 0x00;
inline constexpr std::uint64_t ping = 0x01;
inline constexpr std::uint64_t ack = 0x02;
inline constexpr std::uint64_t crypto = 0x06;
inline constexpr std::uint64_t stream = 0x08;  // 0x08..0x0f: OFF=0x04, LEN=0x02, FIN=0x01
inline constexpr std::uint64_t max_data = 0x10;
inline constexpr std::uint64_t max_stream_data = 0x11;
inline constexpr std::uint64_t max_streams = 0x12;  // bidirectional
inline constexpr std::uint64_t data_blocked = 0x14;
inline constexpr std::uint64_t stream_data_blocked = 0x15;
inline constexpr std::uint64_t connection_close = 0x1c;      // transport error
inline constexpr std::uint64_t connection_close_app = 0x1d;  // application close
inline constexpr std::uint64_t handshake_done = 0x1e;
}  // namespace frame_type

// Most ranges one ACK frame carries; older ranges are dropped (RFC 9000 §13.2.4).
inline constexpr std::size_t kMaxAckRanges = 32;
// Longest CONNECTION_CLOSE reason we send or accept.
inline constexpr std::size_t kMaxReasonLength = 1024;

struct PaddingFrame { std::size_t length = 1; };
struct PingFrame {};
struct AckRange {
    std::uint64_t smallest;
    std::uint64_t largest;
    bool operator==(const AckRange&) const = default;
};
struct AckFrame {
    // Ranges in descending order, disjoint and non-adjacent; ranges.front().largest
    // is the largest acknowledged packet number. Never empty once decoded.
    std::vector<AckRange> ranges;
    Duration ack_delay{0};  // encoded in microseconds
    [[nodiscard]] std::uint64_t largest() const { return ranges.front().largest; }
};
struct CryptoFrame {
    std::uint64_t offset = 0;
    std::span<const std::uint8_t> data;
};
struct StreamFrame {
    std::uint64_t stream_id = 0;
    std::uint64_t offset = 0;
    std::span<const std::uint8_t> data;
    bool fin = false;
};
struct MaxDataFrame { std::uint64_t maximum = 0; };
struct MaxStreamDataFrame { std::uint64_t stream_id = 0; std::uint64_t maximum = 0; };
struct MaxStreamsFrame { std::uint64_t maximum = 0; };
struct DataBlockedFrame { std::uint64_t limit = 0; };
struct StreamDataBlockedFrame { std::uint64_t stream_id = 0; std::uint64_t limit = 0; };
struct ConnectionCloseFrame {
    std::uint64_t error_code = 0;
    std::uint64_t frame_type = 0;  // transport close only
    std::string_view reason;
    bool application = false;
};
struct HandshakeDoneFrame {};

using Frame = std::variant<PaddingFrame, PingFrame, AckFrame, CryptoFrame, StreamFrame,
                           MaxDataFrame, MaxStreamDataFrame, MaxStreamsFrame, DataBlockedFrame,
                           StreamDataBlockedFrame, ConnectionCloseFrame, HandshakeDoneFrame>;

// Whether a frame makes its packet ack-eliciting (RFC 9002 §2: all but ACK,
// PADDING and CONNECTION_CLOSE).
bool is_ack_eliciting(const Frame& f);

// Decodes one frame at the reader's position. Consecutive PADDING bytes are
// folded into one PaddingFrame. Returns false and fills err on malformed input.
bool decode_frame(Reader& r, Frame& out, Error& err);

// Encodes a frame; returns false (and writes nothing) when it does not fit.
// STREAM frames are always written with explicit offset and length.
bool encode_frame(Writer& w, const Frame& f);

// Bytes an encoded STREAM frame header takes (type, id, offset, length) for
// a payload of data_len bytes.
std::size_t stream_frame_overhead(std::uint64_t stream_id, std::uint64_t offset,
                                  std::size_t data_len);
// Encoded size of any frame.
std::size_t encoded_size(const Frame& f);

}  // namespace ndm::wire
