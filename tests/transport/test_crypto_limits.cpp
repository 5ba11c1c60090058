// AEAD usage limits (src/crypto/limits, RFC 9001 §6.6): the limits per suite
// and the counter's triggers at the exact counts.
#include <doctest/doctest.h>

#include <cstdint>

#include "crypto/limits.hpp"

using ndm::crypto::AeadLimits;
using ndm::crypto::AeadUsage;
using ndm::crypto::CipherSuite;

TEST_CASE("crypto limits: confidentiality and integrity limits per AEAD (RFC 9001 6.6)") {
    for (const auto suite : {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384}) {
        CHECK(ndm::crypto::aead_limits(suite).confidentiality == (std::uint64_t{1} << 23));
        CHECK(ndm::crypto::aead_limits(suite).integrity == (std::uint64_t{1} << 52));
    }
    CHECK(ndm::crypto::aead_limits(CipherSuite::chacha20_poly1305_sha256).confidentiality == (std::uint64_t{1} << 62));
    CHECK(ndm::crypto::aead_limits(CipherSuite::chacha20_poly1305_sha256).integrity == (std::uint64_t{1} << 36));
    CHECK(ndm::crypto::kAeadLimitReached == 0x0f);
    CHECK(ndm::crypto::kKeyUpdateError == 0x0e);
}

TEST_CASE("crypto limits: AES-GCM asks for a key update at 3/4 of 2^23 packets and stops at 2^23") {
    AeadUsage usage(CipherSuite::aes128_gcm_sha256);
    constexpr std::uint64_t limit = std::uint64_t{1} << 23;
    REQUIRE(usage.update_at() == limit / 4 * 3);
    for (std::uint64_t i = 0; i + 1 < limit / 4 * 3; ++i) usage.on_sealed();
    CHECK_FALSE(usage.should_update());
    usage.on_sealed();
    CHECK(usage.should_update());
    CHECK_FALSE(usage.confidentiality_exhausted());
    while (usage.sealed() + 1 < limit) usage.on_sealed();
    CHECK_FALSE(usage.confidentiality_exhausted());
    usage.on_sealed();
    CHECK(usage.confidentiality_exhausted());  // the 2^23-th packet was the last one allowed
    usage.on_key_updated();
    CHECK(usage.sealed() == 0);
    CHECK_FALSE(usage.should_update());
}

TEST_CASE("crypto limits: the integrity limit counts failures across key updates") {
    AeadUsage usage(AeadLimits{100, 3}, 50);
    for (int i = 0; i < 3; ++i) usage.on_open_failed();
    CHECK_FALSE(usage.integrity_exceeded());
    usage.on_key_updated();  // failures are per connection, not per key
    usage.on_open_failed();
    CHECK(usage.integrity_exceeded());
    CHECK(usage.failed() == 4);
    CHECK(AeadUsage(AeadLimits{10, 1}, 99).update_at() == 10);  // clamped to the limit
}
