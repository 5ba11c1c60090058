// Frames (RFC 9000 §19): the QUIC v1 frame set. Decoded frames point into
// the datagram they came from (no copies of data, tokens or connection IDs).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "ndm/time.hpp"
#include "wire/varint.hpp"
#include "wire/wire_error.hpp"

namespace ndm::wire {

namespace frame_type {
inline constexpr std::uint64_t padding = 0x00;
inline constexpr std::uint64_t ping = 0x01;
inline constexpr std::uint64_t ack = 0x02;
inline constexpr std::uint64_t ack_ecn = 0x03;
inline constexpr std::uint64_t reset_stream = 0x04;
inline constexpr std::uint64_t stop_sending = 0x05;
inline constexpr std::uint64_t crypto = 0x06;
inline constexpr std::uint64_t new_token = 0x07;
inline constexpr std::uint64_t stream = 0x08;  // 0x08..0x0f: OFF=0x04, LEN=0x02, FIN=0x01
inline constexpr std::uint64_t max_data = 0x10;
inline constexpr std::uint64_t max_stream_data = 0x11;
inline constexpr std::uint64_t max_streams = 0x12;      // bidirectional
inline constexpr std::uint64_t max_streams_uni = 0x13;
inline constexpr std::uint64_t data_blocked = 0x14;
inline constexpr std::uint64_t stream_data_blocked = 0x15;
inline constexpr std::uint64_t streams_blocked = 0x16;  // bidirectional
inline constexpr std::uint64_t streams_blocked_uni = 0x17;
inline constexpr std::uint64_t new_connection_id = 0x18;
inline constexpr std::uint64_t retire_connection_id = 0x19;
inline constexpr std::uint64_t path_challenge = 0x1a;
inline constexpr std::uint64_t path_response = 0x1b;
inline constexpr std::uint64_t connection_close = 0x1c;      // transport error
inline constexpr std::uint64_t connection_close_app = 0x1d;  // application close
inline constexpr std::uint64_t handshake_done = 0x1e;
// draft-ietf-quic-ack-frequency-14 §4, §5 (provisional codepoints), sent and
// accepted only when the receiver advertised min_ack_delay.
inline constexpr std::uint64_t immediate_ack = 0x1f;
inline constexpr std::uint64_t ack_frequency = 0xaf;
// RFC 9221 §4: unreliable DATAGRAM frames, sent and accepted only when the
// receiver advertised max_datagram_frame_size. 0x30 runs to the end of the
// packet, 0x31 carries a length (the one the encoder writes).
inline constexpr std::uint64_t datagram = 0x30;
inline constexpr std::uint64_t datagram_len = 0x31;
}  // namespace frame_type

// Most ranges one ACK frame carries; older ranges are dropped (RFC 9000 §13.2.4).
inline constexpr std::size_t kMaxAckRanges = 32;
// Longest CONNECTION_CLOSE reason we send or accept.
inline constexpr std::size_t kMaxReasonLength = 1024;
// RFC 9000 §18.2: ack_delay_exponent is 3 when absent and at most 20. ACK
// frames in Initial and Handshake packets use the default (the receiver may
// not have the sender's transport parameters yet; RFC 9000 §19.3).
inline constexpr unsigned kDefaultAckDelayExponent = 3;
inline constexpr unsigned kMaxAckDelayExponent = 20;
// RFC 9000 §18.2: max_ack_delay is below 2^14 ms; so is an ACK_FREQUENCY
// frame's Requested Max Ack Delay (draft-ietf-quic-ack-frequency-14 §4), in µs.
inline constexpr std::uint64_t kAckDelayLimitUs = (std::uint64_t{1} << 14) * 1000;
// RFC 9000 §19.11, §19.14: a stream count cannot exceed 2^60.
inline constexpr std::uint64_t kMaxStreamCount = std::uint64_t{1} << 60;
// RFC 9000 §19.15: NEW_CONNECTION_ID carries 1..20 bytes and a 16-byte token.
inline constexpr std::size_t kMaxConnectionIdLength = 20;
inline constexpr std::size_t kStatelessResetTokenSize = 16;
inline constexpr std::size_t kPathDataSize = 8;  // RFC 9000 §19.17, §19.18

struct PaddingFrame { std::size_t length = 1; };
struct PingFrame {};
struct AckRange {
    std::uint64_t smallest;
    std::uint64_t largest;
    bool operator==(const AckRange&) const = default;
};
// RFC 9000 §19.3.2: the ECN counts of type 0x03.
struct EcnCounts {
    std::uint64_t ect0 = 0, ect1 = 0, ce = 0;
    bool operator==(const EcnCounts&) const = default;
};
struct AckFrame {
    // Ranges in descending order, disjoint and non-adjacent; ranges.front().largest
    // is the largest acknowledged packet number. Never empty once decoded.
    std::vector<AckRange> ranges;
    // On the wire in units of 2^ack_delay_exponent microseconds (RFC 9000
    // §19.3): encoding truncates to that resolution, decoding saturates.
    Duration ack_delay{0};
    std::optional<EcnCounts> ecn;  // present: type 0x03
    [[nodiscard]] std::uint64_t largest() const { return ranges.front().largest; }
};
struct ResetStreamFrame {
    std::uint64_t stream_id = 0;
    std::uint64_t error_code = 0;  // application protocol error code
    std::uint64_t final_size = 0;
};
struct StopSendingFrame {
    std::uint64_t stream_id = 0;
    std::uint64_t error_code = 0;
};
struct CryptoFrame {
    std::uint64_t offset = 0;
    std::span<const std::uint8_t> data;
};
struct NewTokenFrame { std::span<const std::uint8_t> token; };  // never empty (§19.7)
struct StreamFrame {
    std::uint64_t stream_id = 0;
    std::uint64_t offset = 0;
    std::span<const std::uint8_t> data;
    bool fin = false;
};
struct MaxDataFrame { std::uint64_t maximum = 0; };
struct MaxStreamDataFrame { std::uint64_t stream_id = 0; std::uint64_t maximum = 0; };
struct MaxStreamsFrame {
    std::uint64_t maximum = 0;  // at most 2^60
    bool bidi = true;           // 0x12; false: 0x13, unidirectional
};
struct DataBlockedFrame { std::uint64_t limit = 0; };
struct StreamDataBlockedFrame { std::uint64_t stream_id = 0; std::uint64_t limit = 0; };
struct StreamsBlockedFrame {
    std::uint64_t limit = 0;  // at most 2^60
    bool bidi = true;         // 0x16; false: 0x17, unidirectional
};
struct NewConnectionIdFrame {
    std::uint64_t sequence = 0;
    std::uint64_t retire_prior_to = 0;      // <= sequence
    std::span<const std::uint8_t> cid;      // 1..20 bytes
    std::span<const std::uint8_t> reset_token;  // exactly 16 bytes
};
struct RetireConnectionIdFrame { std::uint64_t sequence = 0; };
struct PathChallengeFrame { std::array<std::uint8_t, kPathDataSize> data{}; };
struct PathResponseFrame { std::array<std::uint8_t, kPathDataSize> data{}; };
struct ConnectionCloseFrame {
    std::uint64_t error_code = 0;
    std::uint64_t frame_type = 0;  // transport close only
    std::string_view reason;
    bool application = false;
};
struct HandshakeDoneFrame {};
// draft-ietf-quic-ack-frequency-14 §4: how often the data sender wants ACKs.
struct AckFrequencyFrame {
    std::uint64_t sequence = 0;
    std::uint64_t ack_eliciting_threshold = 1;  // ack-eliciting packets the receiver may leave unacknowledged
    std::uint64_t requested_max_ack_delay_us = 25'000;  // < 2^14 ms (RFC 9000 §18.2)
    std::uint64_t reordering_threshold = 1;  // 0: reordering elicits no immediate ACK; 1: RFC 9000's rule
};
struct ImmediateAckFrame {};  // §5: please acknowledge now
// RFC 9221 §4: application data, delivered once or not at all (never
// retransmitted, §5). has_length: type 0x31 (decoded 0x30 frames run to the
// packet's end and have none).
struct DatagramFrame {
    std::span<const std::uint8_t> data;
    bool has_length = true;
};

// The first twelve alternatives keep their historical order (trace::Frame::Type
// mirrors the order of all of them).
using Frame = std::variant<PaddingFrame, PingFrame, AckFrame, CryptoFrame, StreamFrame, MaxDataFrame,
                           MaxStreamDataFrame, MaxStreamsFrame, DataBlockedFrame, StreamDataBlockedFrame,
                           ConnectionCloseFrame, HandshakeDoneFrame, ResetStreamFrame, StopSendingFrame,
                           NewTokenFrame, StreamsBlockedFrame, NewConnectionIdFrame, RetireConnectionIdFrame,
                           PathChallengeFrame, PathResponseFrame, AckFrequencyFrame, ImmediateAckFrame,
                           DatagramFrame>;

// Whether a frame makes its packet ack-eliciting (RFC 9002 §2: all but ACK,
// PADDING and CONNECTION_CLOSE).
bool is_ack_eliciting(const Frame& f);

// The frame type a frame is encoded with (for STREAM: with OFF and LEN set,
// as the encoder writes it).
std::uint64_t type_of(const Frame& f);
// The RFC 9000 §19 name of a frame type ("MAX_STREAMS", "ACK"); "unknown"
// for types outside the v1 set.
std::string_view frame_name(std::uint64_t type);
inline std::string_view frame_name(const Frame& f) { return frame_name(type_of(f)); }

// The packet types of RFC 9000 §12.4 Table 3 ("Pkts": I, 0, H, 1).
enum class PacketKind : std::uint8_t { initial, zero_rtt, handshake, one_rtt };
// Whether a frame of this type may appear in a packet of this kind (RFC 9000
// §12.4 Table 3; CONNECTION_CLOSE 0x1d only in 0-RTT and 1-RTT). A receiver
// treats a violation as a PROTOCOL_VIOLATION connection error.
bool frame_allowed(std::uint64_t type, PacketKind kind);
inline bool frame_allowed(const Frame& f, PacketKind kind) { return frame_allowed(type_of(f), kind); }

// Decodes one frame at the reader's position. Consecutive PADDING bytes are
// folded into one PaddingFrame. ack_delay_exponent is the one the frame's
// sender advertised (kDefaultAckDelayExponent before its transport parameters
// are known, and in Initial and Handshake packets); values above 20 are
// taken as 20. Returns false and fills err (with the RFC 9000 §20.1 code,
// FRAME_ENCODING_ERROR) on malformed input.
bool decode_frame(Reader& r, Frame& out, Error& err, unsigned ack_delay_exponent = kDefaultAckDelayExponent);

// Encodes a frame; returns false (and writes nothing) when it does not fit or
// holds values a peer would reject. STREAM frames are always written with
// explicit offset and length. ack_delay_exponent: the one this endpoint
// advertised (as for decoding).
bool encode_frame(Writer& w, const Frame& f, unsigned ack_delay_exponent = kDefaultAckDelayExponent);

// Bytes an encoded STREAM frame header takes (type, id, offset, length) for
// a payload of data_len bytes.
std::size_t stream_frame_overhead(std::uint64_t stream_id, std::uint64_t offset,
                                  std::size_t data_len);
// Encoded size of any frame.
std::size_t encoded_size(const Frame& f, unsigned ack_delay_exponent = kDefaultAckDelayExponent);
// Bytes a DATAGRAM frame with a length field (0x31) takes for a payload of
// data_len bytes: what RFC 9221 §3's max_datagram_frame_size bounds.
std::size_t datagram_frame_size(std::size_t data_len);
// The size a decoded DATAGRAM frame had on the wire (without the length
// field for type 0x30).
std::size_t datagram_frame_size(const DatagramFrame& f);

// The ACK Delay field for a delay (truncated to the exponent's resolution),
// and the delay a field value stands for (saturating at the largest multiple
// of 2^exponent microseconds a Duration holds). RFC 9000 §19.3.
std::uint64_t encode_ack_delay(Duration delay, unsigned ack_delay_exponent);
Duration decode_ack_delay(std::uint64_t field, unsigned ack_delay_exponent);

}  // namespace ndm::wire
