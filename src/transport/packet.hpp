// Packet headers in the spirit of QUIC (RFC 9000 §17) and the integrity
// check every packet carries. One packet per datagram.
//
// Long header (handshake):  1TTT00PP | version u32 | dcid_len u8 | dcid | scid_len u8 | scid | pn
// Short header (data):      01000 0PP | dcid (kShortCidLength bytes) | pn
// Every packet ends in a 4-byte CRC32C tag over all preceding bytes: a
// corrupted datagram is detected and dropped, never delivered. The tag is the
// seam where packet protection (AEAD) goes when encryption arrives.
// A version negotiation packet is a long header with version 0 followed by
// the supported versions (u32 each) and the tag.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/varint.hpp"
#include "transport/wire_error.hpp"

namespace ndm::wire {

inline constexpr std::size_t kMaxCidLength = 20;
inline constexpr std::size_t kShortCidLength = 8;  // the CIDs we issue
inline constexpr std::size_t kIntegrityTagSize = 4;

struct ConnectionId {
    std::uint8_t length = 0;
    std::array<std::uint8_t, kMaxCidLength> bytes{};

    static ConnectionId from(std::span<const std::uint8_t> b);  // b.size() <= 20
    [[nodiscard]] std::span<const std::uint8_t> span() const { return {bytes.data(), length}; }
    bool operator==(const ConnectionId& o) const;
};

enum class PacketType : std::uint8_t { initial = 0, handshake = 2, one_rtt = 4, version_negotiation = 5 };

struct PacketHeader {
    PacketType type = PacketType::one_rtt;
    std::uint32_t version = 0;        // long header only
    ConnectionId dcid;
    ConnectionId scid;                // long header only
    std::uint64_t packet_number = 0;  // full packet number (decoded or to encode)
    std::size_t pn_length = 4;        // 1..4 bytes on the wire
};

// Smallest packet-number length that lets the peer recover pn given the
// largest packet number it acknowledged (RFC 9000 §A.2).
std::size_t packet_number_length(std::uint64_t pn, std::uint64_t largest_acked, bool has_acked);
// Full packet number from its truncated form (RFC 9000 §A.3).
std::uint64_t decode_packet_number(std::uint64_t largest_received, bool has_received,
                                   std::uint64_t truncated, std::size_t pn_length);

// Writes the header; returns false when it does not fit.
bool write_header(Writer& w, const PacketHeader& h);

// The tag's dependence on the packet number bits the header does not carry
// (docs/wire-format.md §5); 0 when they are all zero.
std::uint32_t untransmitted_pn_mix(const PacketHeader& h);
// Computes the tag over packet[0 .. size-4), binds the full packet number of
// the header `h` it was written with, and stores it in the last 4 bytes.
void seal(std::span<std::uint8_t> packet, const PacketHeader& h);
// The same with an explicit mix; 0 (the default) for packets without a packet
// number (version negotiation) or whose number fits its encoded length.
void seal(std::span<std::uint8_t> packet, std::uint32_t pn_mix = 0);

struct ParsedPacket {
    PacketHeader header;
    std::span<const std::uint8_t> payload;         // frames (tag excluded)
    std::vector<std::uint32_t> supported_versions;  // version negotiation only
};

// The packet type a datagram's first byte announces, before anything is
// checked: the caller picks the packet number space whose largest received
// number parse_packet expands against. Short header (or empty): one_rtt; a
// long header's type bits as they stand (parse_packet rejects the unknown).
PacketType peek_packet_type(std::span<const std::uint8_t> datagram);

// Checks the tag, then parses the header. largest_received (when
// has_received) expands the truncated packet number. A long header with an
// unknown version parses (err kind unknown_version is NOT raised here: the
// caller decides); the payload is then left unparsed.
bool parse_packet(std::span<const std::uint8_t> datagram, std::uint64_t largest_received,
                  bool has_received, ParsedPacket& out, Error& err);

// Builds a version negotiation packet answering a client's long header.
std::size_t write_version_negotiation(std::span<std::uint8_t> out, const ConnectionId& dcid,
                                      const ConnectionId& scid,
                                      std::span<const std::uint32_t> versions);

}  // namespace ndm::wire
