// QUIC version 1 and 2 packet headers (RFC 9000 §17, RFC 9369 §3.1-3.2) and coalesced packets
// (§12.2): the unprotected part of every packet at the start of a datagram,
// the writers that lay a header out for src/crypto's protect(), Retry
// (§17.2.5, RFC 9001 §5.8) and Version Negotiation (§17.2.1, RFC 8999 §6).
// Parsing returns views and offsets into the caller's datagram, never copies,
// and checks every peer length against the buffer first.
//
// Receive path, per packet:  DatagramPackets::next() → crypto::
// remove_header_protection(packet, pn_offset) → decode_packet_number() →
// crypto::open_payload(). Send path: write_long_header()/write_short_header()
// → frames (at least min_payload_length(pn_length) bytes) → 16 bytes of tag
// room → finish_long_header() (patches Length) → crypto::protect().
// packet_codec.hpp runs both paths for one packet (PacketBuilder, open_packet).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/packet_protection.hpp"  // kAeadTagSize, kMinBytesAfterPnOffset
#include "crypto/quic_version.hpp"
#include "wire/packet.hpp"  // ConnectionId, packet_number_length, decode_packet_number
#include "wire/varint.hpp"

namespace ndm::wire::quic {

inline constexpr std::uint32_t kVersion1 = crypto::kVersion1Number;  // RFC 9000
inline constexpr std::uint32_t kVersion2 = crypto::kVersion2Number;  // RFC 9369
// The versions ndm speaks, as a Version Negotiation packet and a server's
// Available Versions (RFC 9368 §3) list them.
inline constexpr std::uint32_t kSupportedVersions[] = {kVersion1, kVersion2};
inline constexpr std::size_t kMaxInvariantCidLength = 255;  // RFC 8999 §5.1: unknown versions
// The AEAD tag size (every v1 AEAD, RFC 9001 §5.3 and the Retry tag, §5.8)
// and the bytes from the packet number offset that the header protection
// sample needs (§5.4.2) are src/crypto's: crypto::kAeadTagSize,
// crypto::kMinBytesAfterPnOffset.

// First-byte bits (RFC 9000 §17.2, §17.3.1). The reserved bits and the key
// phase lie under header protection (RFC 9001 §5.4.1).
inline constexpr std::uint8_t kLongForm = 0x80;
inline constexpr std::uint8_t kFixedBit = 0x40;
inline constexpr std::uint8_t kSpinBit = 0x20;        // short header
inline constexpr std::uint8_t kKeyPhaseBit = 0x04;    // short header
inline constexpr std::uint8_t kLongReservedBits = 0x0c;
inline constexpr std::uint8_t kShortReservedBits = 0x18;

enum class PacketKind : std::uint8_t {
    initial,              // long header of a version ndm speaks: v1 type 0, v2 type 1
    zero_rtt,             // v1 type 1, v2 type 2
    handshake,            // v1 type 2, v2 type 3
    retry,                // v1 type 3, v2 type 0
    one_rtt,              // short header
    version_negotiation,  // long header, version 0
    unknown_version,      // long header, any other version: answer with VN (§6.1)
};

enum class HeaderError : std::uint8_t {
    none,
    truncated,             // a field runs past the end of the datagram
    fixed_bit_zero,        // §17.2/§17.3: v1 packets with the fixed bit 0 are discarded
    cid_too_long,          // §17.2: a v1 CID longer than 20 bytes
    length_past_datagram,  // the Length field runs past the datagram (§12.2)
    length_too_short,      // Length below the packet number + sample (RFC 9001 §5.4.2)
    bad_version_list,      // VN: empty or not a whole number of versions
    chose_listed_version,  // VN lists the version the client chose (RFC 9000 §6.2)
    bad_retry,             // Retry: empty token (§17.2.5.2) or a version ndm does not speak
    retry_integrity,       // Retry integrity tag mismatch (RFC 9001 §5.8)
};

// A readable name of the error, for logs and drop reasons.
const char* describe(HeaderError e);

// One packet inside a datagram. Every span views the datagram; offsets
// count from the packet's start (`packet`), which is `offset` bytes into the
// datagram. The first byte's low bits and the packet number are still under
// header protection for Initial, 0-RTT, Handshake and 1-RTT.
struct PacketView {
    PacketKind kind = PacketKind::one_rtt;
    std::size_t offset = 0;              // packet start in the datagram
    std::span<const std::uint8_t> packet;  // the whole packet: up to Length, or to the datagram's end
    std::uint8_t first_byte = 0;
    std::uint32_t version = 0;           // long headers only
    std::span<const std::uint8_t> dcid;
    std::span<const std::uint8_t> scid;  // long headers only
    std::span<const std::uint8_t> token;  // Initial and Retry
    std::size_t pn_offset = 0;           // Initial, 0-RTT, Handshake, 1-RTT; 0 otherwise
    std::span<const std::uint8_t> versions;  // VN: the supported versions, 4 bytes each
    [[nodiscard]] bool has_packet_number() const { return pn_offset != 0; }
};

// Parses the packet at the start of `data` (RFC 9000 §17.2, §17.3; RFC 8999
// for other versions). short_dcid_length: the length of the CIDs this
// endpoint issued, which a short header does not carry. A Retry, VN, unknown
// version or 1-RTT packet runs to the end of `data`.
[[nodiscard]] HeaderError parse_packet_header(std::span<const std::uint8_t> data, std::size_t short_dcid_length,
                                              PacketView& out);

// The coalesced packets of one datagram (§12.2), in order. A packet whose
// DCID differs from the first one's is skipped and counted; a packet that
// fails to parse ends the iteration (error() says why) and leaves the
// packets before it valid.
class DatagramPackets {
public:
    DatagramPackets(std::span<const std::uint8_t> datagram, std::size_t short_dcid_length)
        : datagram_(datagram), short_dcid_length_(short_dcid_length) {}
    // The next packet, or false at the end of the datagram or on an error
    // (out is then unspecified).
    [[nodiscard]] bool next(PacketView& out);
    [[nodiscard]] HeaderError error() const { return error_; }
    [[nodiscard]] std::size_t dropped_other_dcid() const { return dropped_; }

private:
    std::span<const std::uint8_t> datagram_;
    std::size_t short_dcid_length_;
    std::size_t pos_ = 0;
    std::span<const std::uint8_t> first_dcid_;
    bool have_first_ = false;
    HeaderError error_ = HeaderError::none;
    std::size_t dropped_ = 0;
};

// Plaintext payload bytes a packet needs after a pn_length-byte packet number
// so that pn + payload + AEAD tag covers the header protection sample
// (RFC 9001 §5.4.2): 4 - pn_length. A sender pads (PADDING frames) to reach it.
constexpr std::size_t min_payload_length(std::size_t pn_length) {
    return pn_length >= crypto::kMaxPacketNumberLength ? 0 : crypto::kMaxPacketNumberLength - pn_length;
}

enum class LongType : std::uint8_t { initial = 0, zero_rtt = 1, handshake = 2 };

// The long header's two type bits (0x30 of the first byte) of a packet kind
// (initial .. retry) in a version (RFC 9000 §17.2, RFC 9369 §3.2), and back.
[[nodiscard]] constexpr std::uint8_t long_type_bits(crypto::QuicVersion v, PacketKind kind) {
    const auto type = static_cast<std::uint8_t>(kind);  // initial..retry are 0..3
    return static_cast<std::uint8_t>(v == crypto::QuicVersion::v2 ? (type + 1) & 0x03 : type);
}
[[nodiscard]] constexpr PacketKind long_packet_kind(crypto::QuicVersion v, std::uint8_t first_byte) {
    const auto bits = static_cast<std::uint8_t>((first_byte >> 4) & 0x03);
    return static_cast<PacketKind>(v == crypto::QuicVersion::v2 ? (bits + 3) & 0x03 : bits);
}

struct LongHeader {
    LongType type = LongType::initial;
    std::uint32_t version = kVersion1;
    ConnectionId dcid;
    ConnectionId scid;
    std::span<const std::uint8_t> token;  // Initial only (else must be empty)
    std::uint64_t packet_number = 0;      // full; pn_length low bytes are written
    std::size_t pn_length = 4;            // 1..4, e.g. from packet_number_length()
    std::size_t length_bytes = 2;         // Length field size: 2 (≤ 16383) or 4
};

struct ShortHeader {
    ConnectionId dcid;
    std::uint64_t packet_number = 0;
    std::size_t pn_length = 4;
    bool spin = false;       // §17.4
    bool key_phase = false;  // RFC 9001 §6
};

// Where the written header's fields are, relative to the packet's start.
struct HeaderLayout {
    std::size_t length_offset = 0;  // long headers: the Length field (0 for short)
    std::size_t length_bytes = 0;
    std::size_t pn_offset = 0;
    std::size_t pn_length = 0;
    std::size_t payload_offset = 0;  // pn_offset + pn_length
};

// Write the header at the Writer's position, which is the packet's start
// (the layout's offsets count from there). False, nothing usable written,
// when it does not fit or a field is out of range (pn_length outside 1..4,
// length_bytes not 2 or 4, a token on a non-Initial).
[[nodiscard]] bool write_long_header(Writer& w, const LongHeader& h, HeaderLayout& layout);
[[nodiscard]] bool write_short_header(Writer& w, const ShortHeader& h, HeaderLayout& layout);

// Patches the Length of a long header whose packet (header, payload, AEAD
// tag room) is packet[0, packet.size()). False if the value does not fit
// the field, or the payload is shorter than min_payload_length().
[[nodiscard]] bool finish_long_header(std::span<std::uint8_t> packet, const HeaderLayout& layout);

// Retry (§17.2.5) of a version: header, token, integrity tag over the
// pseudo-packet with the client's original DCID (RFC 9001 §5.8, RFC 9369
// §3.3.3). unused_bits fill the first byte's low 4 bits. Returns the size
// written, 0 if it does not fit or the token is empty.
std::size_t write_retry(std::span<std::uint8_t> out, crypto::QuicVersion version, const ConnectionId& dcid,
                        const ConnectionId& scid,
                        std::span<const std::uint8_t> token, std::span<const std::uint8_t> odcid,
                        std::uint8_t unused_bits);

// A parsed Retry (kind retry, of a version ndm speaks) whose token is
// non-empty and whose tag verifies against the client's original DCID: none,
// or why not.
[[nodiscard]] HeaderError verify_retry(const PacketView& retry, std::span<const std::uint8_t> odcid);

// Version Negotiation (§17.2.1, RFC 8999 §6) answering a client packet
// whose DCID/SCID were client_dcid/client_scid (up to 255 bytes each): the
// CIDs swapped, version 0, the first byte 0xc0 | the low 6 bits of
// random_bits (§17.2.1: the fixed bit set for demultiplexing). Returns the size written, 0 if it does not fit or versions is
// empty.
std::size_t write_version_negotiation(std::span<std::uint8_t> out, std::span<const std::uint8_t> client_dcid,
                                      std::span<const std::uint8_t> client_scid,
                                      std::span<const std::uint32_t> versions, std::uint8_t random_bits);

// Checks a parsed VN packet on the client: a non-empty list of whole
// versions that does not contain chosen_version (RFC 9000 §6.2).
[[nodiscard]] HeaderError check_version_negotiation(const PacketView& vn, std::uint32_t chosen_version);
// The i-th version of a parsed VN packet (i < vn.versions.size() / 4).
std::uint32_t listed_version(const PacketView& vn, std::size_t i);

}  // namespace ndm::wire::quic
