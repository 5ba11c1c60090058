// The Retry Integrity Tag (RFC 9001 §5.8): AES-128-GCM with the version's
// fixed key and nonce (RFC 9369 §3.3.3 for version 2) over the Retry pseudo-packet (ODCID length, ODCID, the Retry
// packet without its tag), empty plaintext. It proves the Retry came from a
// host that saw the client's Initial (not an off-path one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/aead.hpp"
#include "crypto/quic_version.hpp"

namespace ndm::crypto {

using RetryTag = std::array<std::uint8_t, kAeadTagSize>;

// retry_without_tag: the Retry packet up to (excluding) its tag. odcid: the
// Destination Connection ID of the client's first Initial, at most 20 bytes
// (std::invalid_argument).
RetryTag retry_integrity_tag(QuicVersion version, std::span<const std::uint8_t> odcid,
                             std::span<const std::uint8_t> retry_without_tag);

// retry_packet: the whole Retry packet, tag last. False if it is shorter
// than a tag or the tag does not match (constant-time comparison).
[[nodiscard]] bool verify_retry_integrity(QuicVersion version, std::span<const std::uint8_t> odcid,
                                          std::span<const std::uint8_t> retry_packet);

}  // namespace ndm::crypto
