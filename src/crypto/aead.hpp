// The AEAD of one packet protection key (RFC 9001 §5.3): AES-128-GCM,
// AES-256-GCM or ChaCha20-Poly1305, with the QUIC nonce (the IV XOR the
// packet number) and a 16-byte tag, computed by a backend (backend.hpp:
// GnuTLS or OpenSSL libcrypto; by default the one backend_choice.hpp measured
// fastest for the suite). The backend's context is made once per key;
// sealing and opening work in place and allocate nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "crypto/backend.hpp"
#include "crypto/packet_keys.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

class Aead {
public:
    // With the backend backend_for(suite) names.
    Aead(CipherSuite suite, std::span<const std::uint8_t> key, std::span<const std::uint8_t, kAeadIvSize> iv);
    explicit Aead(const PacketKeys& keys) : Aead(keys.suite, keys.key_span(), keys.iv) {}
    // With a given backend (tests, the calibration).
    Aead(Backend backend, CipherSuite suite, std::span<const std::uint8_t> key,
         std::span<const std::uint8_t, kAeadIvSize> iv);
    Aead(Backend backend, const PacketKeys& keys) : Aead(backend, keys.suite, keys.key_span(), keys.iv) {}
    ~Aead();
    Aead(Aead&& other) noexcept;
    Aead& operator=(Aead&& other) noexcept;
    Aead(const Aead&) = delete;
    Aead& operator=(const Aead&) = delete;

    [[nodiscard]] CipherSuite suite() const { return suite_; }
    [[nodiscard]] Backend backend() const { return backend_; }

    // RFC 9001 §5.3: nonce = iv XOR the packet number, left-padded to 12 bytes.
    [[nodiscard]] Nonce nonce(std::uint64_t pn) const;

    // Encrypts payload[0, size - 16) in place and writes the tag into its
    // last 16 bytes; `header` is the associated data. Throws
    // std::invalid_argument if payload is shorter than the tag, CryptoError if
    // the backend fails.
    void seal(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<std::uint8_t> payload);

    // Decrypts and authenticates payload (ciphertext | tag) in place: true and
    // the plaintext in payload[0, size - 16), or false for any failure (short
    // input, wrong key, tampering). The payload bytes are undefined after false.
    [[nodiscard]] bool open(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<std::uint8_t> payload);
    // The same from `in` (ciphertext | tag) into `out`, at least in.size() -
    // 16 bytes: the received bytes stay as they were (no copy of them first).
    // in and out may be the same bytes, not otherwise overlap.
    [[nodiscard]] bool open(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<const std::uint8_t> in,
                            std::span<std::uint8_t> out);

    // The same with a whole 12-byte nonce instead of iv XOR pn (address
    // tokens carry a random one).
    void seal_with_nonce(const Nonce& nonce, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload);
    [[nodiscard]] bool open_with_nonce(const Nonce& nonce, std::span<const std::uint8_t> aad,
                                       std::span<std::uint8_t> payload);
    [[nodiscard]] bool open_with_nonce(const Nonce& nonce, std::span<const std::uint8_t> aad,
                                       std::span<const std::uint8_t> in, std::span<std::uint8_t> out);

private:
    CipherSuite suite_;
    Backend backend_;
    Nonce iv_{};
    std::unique_ptr<AeadCipher> cipher_;
};

}  // namespace ndm::crypto
