// Header protection (RFC 9001 §5.4): the 5-byte mask computed from a 16-byte
// sample of the ciphertext, with AES-ECB for the AES suites (§5.4.3) or
// ChaCha20 for ChaCha20-Poly1305 (§5.4.4), by a backend (backend.hpp: nettle
// or OpenSSL libcrypto; by default the one backend_choice.hpp measured fastest
// for the suite). The key schedule is expanded once per key; mask() allocates
// nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "crypto/backend.hpp"
#include "crypto/packet_keys.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

class HeaderProtection {
public:
    // key: 16 bytes for AES-128, 32 for AES-256 and ChaCha20 (std::invalid_argument).
    HeaderProtection(CipherSuite suite, std::span<const std::uint8_t> key);
    explicit HeaderProtection(const PacketKeys& keys) : HeaderProtection(keys.suite, keys.hp_span()) {}
    // With a given backend (tests, the calibration).
    HeaderProtection(Backend backend, CipherSuite suite, std::span<const std::uint8_t> key);
    HeaderProtection(Backend backend, const PacketKeys& keys) : HeaderProtection(backend, keys.suite, keys.hp_span()) {}
    HeaderProtection(HeaderProtection&&) noexcept = default;
    HeaderProtection& operator=(HeaderProtection&&) noexcept = default;
    ~HeaderProtection();

    [[nodiscard]] CipherSuite suite() const { return suite_; }
    [[nodiscard]] Backend backend() const { return backend_; }

    // §5.4.3: AES-ECB(hp, sample)[0..5]; §5.4.4: ChaCha20(hp, counter =
    // sample[0..4] little-endian, nonce = sample[4..16], {0,0,0,0,0}).
    // Throws std::logic_error on a moved-from object.
    [[nodiscard]] HpMask mask(std::span<const std::uint8_t, kHpSampleSize> sample) const;

private:
    CipherSuite suite_;
    Backend backend_;
    std::unique_ptr<HpCipher> cipher_;
};

// RFC 9001 §5.4.1: the first byte's low bits (4 of a long header, 5 of a
// short one, told apart by its 0x80 bit) and pn_length packet number bytes
// XOR the mask. Applying twice removes it; remove_header_protection() in
// packet_protection.hpp reads the packet number length in between.
inline std::uint8_t first_byte_mask_bits(std::uint8_t first_byte) { return (first_byte & 0x80) != 0 ? 0x0f : 0x1f; }

}  // namespace ndm::crypto
