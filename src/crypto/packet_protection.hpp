// QUIC packet protection (RFC 9001 §5.3, §5.4) as the connection calls it,
// on one packet in its own buffer (a coalesced datagram is split first, by
// the long header's Length):
//   send:    protect(header with its packet number field | plaintext | 16
//            bytes of room): AEAD seal, then header protection.
//   receive: remove_header_protection() gives the first byte, the packet
//            number length and the truncated packet number; the caller expands
//            it (RFC 9000 §A.3, transport::decode_packet_number) and calls
//            open_payload() with the full packet number.
// Every length is checked against the buffer: a packet too short for the
// header protection sample (§5.4.2) is refused without reading past it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/aead.hpp"
#include "crypto/header_protection.hpp"
#include "crypto/packet_keys.hpp"

namespace ndm::crypto {

inline constexpr std::size_t kMaxPacketNumberLength = 4;

// One direction's keys at one level, ready for packets.
struct DirectionKeys {
    explicit DirectionKeys(const PacketKeys& keys) : aead(keys), hp(keys) {}
    DirectionKeys(Backend backend, const PacketKeys& keys) : aead(backend, keys), hp(backend, keys) {}
    Aead aead;
    HeaderProtection hp;
};

// Read and write keys of one encryption level (Initial, 0-RTT, Handshake;
// 1-RTT with key update is OneRttKeys in key_phase.hpp).
struct LevelKeys {
    LevelKeys(const PacketKeys& read_keys, const PacketKeys& write_keys) : read(read_keys), write(write_keys) {}
    DirectionKeys read;
    DirectionKeys write;
};

// Initial keys of either endpoint from the client's first DCID (RFC 9001 §5.2)
// for a QUIC version: a client writes with the client secret and reads with
// the server's.
LevelKeys initial_keys(std::span<const std::uint8_t> client_dcid, bool is_server, QuicVersion version);

// The bytes a packet needs from the packet number field on: 4 for the sample
// offset plus the 16-byte sample (§5.4.2). A sender pads to reach it.
inline constexpr std::size_t kMinBytesAfterPnOffset = kMaxPacketNumberLength + kHpSampleSize;

// packet = header (first byte with the packet number length in its low two
// bits, pn field at pn_offset) | plaintext | kAeadTagSize bytes of room.
// pn is the full packet number (the nonce); pn_length 1..4 bytes are already
// encoded. False, packet unchanged, if the lengths do not fit: pn_length
// outside 1..4 or disagreeing with the first byte, or packet.size() <
// pn_offset + kMinBytesAfterPnOffset or < header + tag.
[[nodiscard]] bool protect(std::span<std::uint8_t> packet, std::size_t pn_offset, std::size_t pn_length,
                           std::uint64_t pn, Aead& aead, const HeaderProtection& hp);

struct UnprotectedHeader {
    std::uint8_t first_byte = 0;     // unmasked
    std::size_t pn_length = 0;       // 1..4
    std::uint64_t truncated_pn = 0;  // the pn_length bytes, big-endian
    [[nodiscard]] std::size_t header_length(std::size_t pn_offset) const { return pn_offset + pn_length; }
};

// Removes header protection in place (first byte and packet number bytes).
// nullopt, packet unchanged, if packet.size() < pn_offset +
// kMinBytesAfterPnOffset: the caller drops the packet.
[[nodiscard]] std::optional<UnprotectedHeader> remove_header_protection(std::span<std::uint8_t> packet,
                                                                        std::size_t pn_offset,
                                                                        const HeaderProtection& hp);

// Opens the payload after header_length bytes of (unprotected) header, in
// place: the plaintext, inside packet, or nullopt if it is shorter than a tag
// or fails authentication.
[[nodiscard]] std::optional<std::span<std::uint8_t>> open_payload(std::span<std::uint8_t> packet,
                                                                  std::size_t header_length, std::uint64_t pn,
                                                                  Aead& aead);
// The same from the packet as received, `in`, into `out` (as large), whose
// first header_length bytes are its unprotected header: the plaintext, inside
// out. in and out may be the same bytes (in place).
[[nodiscard]] std::optional<std::span<std::uint8_t>> open_payload(std::span<const std::uint8_t> in,
                                                                  std::span<std::uint8_t> out,
                                                                  std::size_t header_length, std::uint64_t pn,
                                                                  Aead& aead);

}  // namespace ndm::crypto
