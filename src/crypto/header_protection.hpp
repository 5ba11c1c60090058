// Header protection (RFC 9001 §5.4): the 5-byte mask computed from a 16-byte
// sample of the ciphertext, with AES-ECB for the AES suites (§5.4.3) or
// ChaCha20 for ChaCha20-Poly1305 (§5.4.4), both from nettle. The key schedule
// is expanded once per key; mask() copies nothing but a small context.
#pragma once

#include <nettle/aes.h>
#include <nettle/chacha.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/packet_keys.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

inline constexpr std::size_t kHpSampleSize = 16;  // RFC 9001 §5.4.2
inline constexpr std::size_t kHpMaskSize = 5;
using HpMask = std::array<std::uint8_t, kHpMaskSize>;

class HeaderProtection {
public:
    // key: 16 bytes for AES-128, 32 for AES-256 and ChaCha20 (std::invalid_argument).
    HeaderProtection(CipherSuite suite, std::span<const std::uint8_t> key);
    explicit HeaderProtection(const PacketKeys& keys) : HeaderProtection(keys.suite, keys.hp_span()) {}
    ~HeaderProtection();
    HeaderProtection(const HeaderProtection&) = default;
    HeaderProtection& operator=(const HeaderProtection&) = default;

    [[nodiscard]] CipherSuite suite() const { return suite_; }

    // §5.4.3: AES-ECB(hp, sample)[0..5]; §5.4.4: ChaCha20(hp, counter =
    // sample[0..4] little-endian, nonce = sample[4..16], {0,0,0,0,0}).
    [[nodiscard]] HpMask mask(std::span<const std::uint8_t, kHpSampleSize> sample) const;

private:
    CipherSuite suite_;
    union {
        aes128_ctx aes128;
        aes256_ctx aes256;
        chacha_ctx chacha;
    } ctx_{};
};

// RFC 9001 §5.4.1: the first byte's low bits (4 of a long header, 5 of a
// short one, told apart by its 0x80 bit) and pn_length packet number bytes
// XOR the mask. Applying twice removes it; remove_header_protection() in
// packet_protection.hpp reads the packet number length in between.
inline std::uint8_t first_byte_mask_bits(std::uint8_t first_byte) { return (first_byte & 0x80) != 0 ? 0x0f : 0x1f; }

}  // namespace ndm::crypto
