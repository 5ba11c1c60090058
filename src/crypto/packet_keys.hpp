// Packet protection keys from a traffic secret (RFC 9001 §5.1), the Initial
// secrets every v1 endpoint can compute from the client's first Destination
// Connection ID (§5.2), and the key-update secret chain (§6.1).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/suite.hpp"
#include "crypto/quic_version.hpp"

namespace ndm::crypto {

inline constexpr std::size_t kAeadIvSize = 12;    // RFC 9001 §5.3: N_MIN of every QUIC AEAD
inline constexpr std::size_t kMaxAeadKeySize = 32;
inline constexpr std::size_t kMaxConnectionIdSize = 20;  // RFC 9000 §17.2

// The AEAD key length (16 for AES-128-GCM, 32 otherwise); the header
// protection key has the same length (RFC 9001 §5.4.3, §5.4.4).
std::size_t key_size(CipherSuite suite);

// One direction's keys at one encryption level (and key phase).
struct PacketKeys {
    CipherSuite suite = CipherSuite::aes128_gcm_sha256;
    std::array<std::uint8_t, kMaxAeadKeySize> key{};
    std::array<std::uint8_t, kAeadIvSize> iv{};
    std::array<std::uint8_t, kMaxAeadKeySize> hp{};
    [[nodiscard]] std::span<const std::uint8_t> key_span() const { return {key.data(), key_size(suite)}; }
    [[nodiscard]] std::span<const std::uint8_t> hp_span() const { return {hp.data(), key_size(suite)}; }
};

// RFC 9001 §5.1: "quic key", "quic iv" and "quic hp" from the secret
// ("quicv2 key", ... for version 2, RFC 9369 §3.3.2). The secret must be as
// long as the suite's hash (std::invalid_argument).
PacketKeys derive_packet_keys(CipherSuite suite, const Secret& secret, QuicVersion version);

// RFC 9001 §5.2: initial_secret = HKDF-Extract(the version's salt (RFC 9369
// §3.3.1 for version 2), client's DCID), then "client in" and "server in";
// Initial packets use AES-128-GCM/SHA-256.
struct InitialSecrets {
    Secret client;
    Secret server;
};
// dcid up to 20 bytes (RFC 9000 §7.2 lets a client choose 8..20; a server
// deriving from a peer's DCID must have range-checked it: std::invalid_argument).
InitialSecrets initial_secrets(std::span<const std::uint8_t> dcid, QuicVersion version);

// RFC 9001 §6.1: the secret of the next key phase ("quic ku"; "quicv2 ku").
Secret next_secret(CipherSuite suite, const Secret& secret, QuicVersion version);

// The keys of the next key phase: a new key and IV from next_secret(), the
// header protection key kept (RFC 9001 §6.1: "The header protection key is
// not updated").
PacketKeys updated_keys(const PacketKeys& current, const Secret& next, QuicVersion version);

}  // namespace ndm::crypto
