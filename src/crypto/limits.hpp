// AEAD usage limits (RFC 9001 §6.6) and the per-connection counter that says
// when to initiate a key update (before the confidentiality limit of the
// current write key) and when forged packets have used up the integrity limit
// (close with AEAD_LIMIT_REACHED).
#pragma once

#include <cstdint>

#include "crypto/suite.hpp"

namespace ndm::crypto {

// RFC 9000 §20.1 transport error codes for packet protection.
inline constexpr std::uint64_t kKeyUpdateError = 0x0e;     // KEY_UPDATE_ERROR
inline constexpr std::uint64_t kAeadLimitReached = 0x0f;   // AEAD_LIMIT_REACHED

struct AeadLimits {
    std::uint64_t confidentiality = 0;  // packets sealed with one key
    std::uint64_t integrity = 0;        // packets failing authentication, across all keys
};

// RFC 9001 §6.6: AES-GCM 2^23 / 2^52 (packets of any size up to 2^16 bytes);
// ChaCha20-Poly1305 2^62 (beyond any packet number) / 2^36.
AeadLimits aead_limits(CipherSuite suite);

class AeadUsage {
public:
    // Key updates are asked for at 3/4 of the confidentiality limit: the
    // remaining quarter (2^21 AES-GCM packets, ~3 GB) covers the round trip a
    // previous update needs to be acknowledged (§6.1) before the next one.
    explicit AeadUsage(CipherSuite suite);
    // Explicit limits and update point (tests, or a stricter policy);
    // update_at is clamped to confidentiality.
    AeadUsage(AeadLimits limits, std::uint64_t update_at);

    void on_sealed() { ++sealed_; }
    void on_open_failed() { ++failed_; }
    void on_key_updated() { sealed_ = 0; }  // a new write key starts from zero

    [[nodiscard]] bool should_update() const { return sealed_ >= update_at_; }
    // The write key may protect no more packets (§6.6: "MUST NOT exceed").
    [[nodiscard]] bool confidentiality_exhausted() const { return sealed_ >= limits_.confidentiality; }
    // §6.6: more failures than the limit: close with AEAD_LIMIT_REACHED.
    [[nodiscard]] bool integrity_exceeded() const { return failed_ > limits_.integrity; }

    [[nodiscard]] std::uint64_t sealed() const { return sealed_; }
    [[nodiscard]] std::uint64_t failed() const { return failed_; }
    [[nodiscard]] const AeadLimits& limits() const { return limits_; }
    [[nodiscard]] std::uint64_t update_at() const { return update_at_; }

private:
    AeadLimits limits_;
    std::uint64_t update_at_;
    std::uint64_t sealed_ = 0;
    std::uint64_t failed_ = 0;
};

}  // namespace ndm::crypto
