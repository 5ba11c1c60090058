// The packet protection backends (src/crypto/backend, backend_choice): what
// one backend seals the other opens, for every suite and both directions, and
// both compute the same header protection masks; a tampered packet fails in
// both; the choice by measurement, by NDM_AEAD_BACKEND and by the tests'
// override. RFC 9001 Appendix A runs on every backend in test_crypto_packet,
// test_crypto_retry, test_crypto_tokens and test_crypto_key_update.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto/backend_choice.hpp"
#include "crypto/hkdf.hpp"
#include "crypto/packet_protection.hpp"
#include "crypto_test_util.hpp"

using ndm::crypto::QuicVersion;

using ndm::crypto::Backend;
using ndm::crypto::CipherSuite;
using ndm::crypto::DirectionKeys;
using ndm::crypto::kAeadTagSize;
using ndm::crypto::kBackends;
using ndm::test::hex;

namespace {

constexpr CipherSuite kSuites[] = {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384,
                                   CipherSuite::chacha20_poly1305_sha256};

ndm::crypto::PacketKeys keys_for(CipherSuite suite, std::uint8_t seed) {
    ndm::crypto::Secret secret;
    secret.size = static_cast<std::uint8_t>(ndm::crypto::hash_size(suite));
    for (std::size_t i = 0; i < secret.size; ++i) secret.bytes[i] = static_cast<std::uint8_t>(seed + 5 * i);
    return ndm::crypto::derive_packet_keys(suite, secret, QuicVersion::v1);
}

// A short header packet of `size` bytes (first byte 0x41: 2-byte pn, 8-byte
// DCID) with a patterned payload and room for the tag.
std::vector<std::uint8_t> short_packet(std::size_t size, std::uint64_t pn) {
    std::vector<std::uint8_t> p(size);
    for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::uint8_t>(i * 13 + pn);
    p[0] = 0x41;
    p[9] = static_cast<std::uint8_t>(pn >> 8);
    p[10] = static_cast<std::uint8_t>(pn);
    return p;
}

struct Env {
    explicit Env(const char* value) {
        if (const char* old = std::getenv(ndm::crypto::kBackendEnvironment)) saved = old;
        ::setenv(ndm::crypto::kBackendEnvironment, value, 1);
    }
    ~Env() {
        if (saved) ::setenv(ndm::crypto::kBackendEnvironment, saved->c_str(), 1);
        else ::unsetenv(ndm::crypto::kBackendEnvironment);
    }
    Env(const Env&) = delete;
    Env& operator=(const Env&) = delete;
    std::optional<std::string> saved;
};

}  // namespace

TEST_CASE("crypto backends: what one backend protects the other opens, for every suite and size") {
    for (const CipherSuite suite : kSuites) {
        const auto keys = keys_for(suite, static_cast<std::uint8_t>(suite) + 1);
        for (const Backend from : kBackends) {
            for (const Backend to : kBackends) {
                CAPTURE(std::string(ndm::crypto::to_string(suite)));
                CAPTURE(std::string(ndm::crypto::to_string(from)));
                CAPTURE(std::string(ndm::crypto::to_string(to)));
                DirectionKeys tx(from, keys);
                DirectionKeys rx(to, keys);
                REQUIRE(tx.aead.backend() == from);
                REQUIRE(rx.hp.backend() == to);
                // 31: the smallest with a full sample after an 11-byte header; 1452:
                // the default datagram; 1500 and 65527 beyond it.
                for (const std::size_t size : {31UL, 100UL, 1452UL, 1500UL, 65527UL}) {
                    CAPTURE(size);
                    const std::uint64_t pn = 0x12345678 + size;
                    const auto plain = short_packet(size, pn);
                    auto packet = plain;
                    REQUIRE(ndm::crypto::protect(packet, 9, 2, pn, tx.aead, tx.hp));
                    CHECK(packet != plain);
                    auto tampered = packet;
                    tampered[size / 2] ^= 0x04;
                    const auto header = ndm::crypto::remove_header_protection(packet, 9, rx.hp);
                    REQUIRE(header);
                    CHECK(header->first_byte == 0x41);
                    CHECK(header->truncated_pn == (pn & 0xffff));
                    const auto opened = ndm::crypto::open_payload(packet, 11, pn, rx.aead);
                    REQUIRE(opened);
                    CHECK(std::vector<std::uint8_t>(opened->begin(), opened->end()) ==
                          std::vector<std::uint8_t>(plain.begin() + 11, plain.end() - kAeadTagSize));
                    REQUIRE(ndm::crypto::remove_header_protection(tampered, 9, rx.hp));
                    CHECK_FALSE(ndm::crypto::open_payload(tampered, 11, pn, rx.aead));
                }
            }
        }
    }
}

TEST_CASE("crypto backends: the header protection masks agree on every sample byte") {
    for (const CipherSuite suite : kSuites) {
        CAPTURE(std::string(ndm::crypto::to_string(suite)));
        const auto keys = keys_for(suite, 99);
        const ndm::crypto::HeaderProtection gnutls(Backend::gnutls, keys);
        const ndm::crypto::HeaderProtection openssl(Backend::openssl, keys);
        std::array<std::uint8_t, ndm::crypto::kHpSampleSize> sample{};
        for (int i = 0; i < 256; ++i) {
            // Each step changes the ChaCha20 counter bytes and the nonce bytes alike.
            sample[static_cast<std::size_t>(i) % sample.size()] ^= static_cast<std::uint8_t>(i * 37 + 1);
            REQUIRE(hex(gnutls.mask(sample)) == hex(openssl.mask(sample)));
        }
    }
}

TEST_CASE("crypto backends: the AEAD with the whole nonce (address tokens) and an empty payload agree") {
    for (const CipherSuite suite : kSuites) {
        CAPTURE(std::string(ndm::crypto::to_string(suite)));
        const auto keys = keys_for(suite, 7);
        ndm::crypto::Aead gnutls(Backend::gnutls, keys);
        ndm::crypto::Aead openssl(Backend::openssl, keys);
        ndm::crypto::Nonce nonce{};
        nonce.fill(0x42);
        const std::vector<std::uint8_t> aad = {1, 2, 3};
        for (const std::size_t size : {0UL, 1UL, 17UL, 1200UL}) {
            std::vector<std::uint8_t> a(size + kAeadTagSize, 0x33);
            std::vector<std::uint8_t> b = a;
            gnutls.seal_with_nonce(nonce, aad, a);
            openssl.seal_with_nonce(nonce, aad, b);
            CHECK(hex(a) == hex(b));  // the same ciphertext and tag byte for byte
            CHECK(openssl.open_with_nonce(nonce, aad, a));
            CHECK(gnutls.open_with_nonce(nonce, {}, b) == false);  // other associated data
        }
        // Too short for a tag: refused by both, nothing read.
        std::vector<std::uint8_t> shorter(kAeadTagSize - 1);
        CHECK_FALSE(gnutls.open_with_nonce(nonce, aad, shorter));
        CHECK_FALSE(openssl.open_with_nonce(nonce, aad, shorter));
        CHECK_THROWS_AS(openssl.seal_with_nonce(nonce, aad, shorter), std::invalid_argument);
    }
}

TEST_CASE("crypto backends: the measurement times every backend and picks the fastest") {
    for (const CipherSuite suite : kSuites) {
        CAPTURE(std::string(ndm::crypto::to_string(suite)));
        const auto choice = ndm::crypto::measure_backends(suite, 2);
        CHECK(choice.why == ndm::crypto::BackendChoice::Why::measured);
        for (const double ns : choice.ns_per_packet) {
            CHECK(std::isfinite(ns));
            CHECK(ns > 0);
        }
        const auto chosen = choice.ns_per_packet[static_cast<std::size_t>(choice.backend)];
        for (const double ns : choice.ns_per_packet) CHECK(chosen <= ns);
        const std::string text = ndm::crypto::describe(choice);
        CHECK(text.find("measured gnutls ") != std::string::npos);
        CHECK(text.find(", openssl ") != std::string::npos);
        CHECK(text.find(" us per 1452-byte packet)") != std::string::npos);
    }
}

TEST_CASE("crypto backends: NDM_AEAD_BACKEND names a backend, auto or nothing measures, anything else is refused") {
    {
        const Env env("openssl");
        CHECK(ndm::crypto::backend_from_environment() == Backend::openssl);
    }
    {
        const Env env("gnutls");
        CHECK(ndm::crypto::backend_from_environment() == Backend::gnutls);
    }
    for (const char* measured : {"auto", ""}) {
        const Env env(measured);
        CHECK_FALSE(ndm::crypto::backend_from_environment().has_value());
    }
    const Env env("OpenSSL3");
    CHECK_THROWS_WITH_AS(ndm::crypto::backend_from_environment(),
                         "NDM_AEAD_BACKEND=OpenSSL3: expected gnutls, openssl or auto", std::invalid_argument);
}

TEST_CASE("crypto backends: keys take the override while it lasts, then the process's choice") {
    for (const CipherSuite suite : kSuites) {
        const auto keys = keys_for(suite, 3);
        const Backend chosen = ndm::crypto::backend_for(suite).backend;
        CHECK(ndm::crypto::backend_for(suite).backend == chosen);  // kept
        for (const Backend forced : kBackends) {
            const ndm::test::BackendScope scope(forced);
            CHECK(ndm::crypto::backend_for(suite).why == ndm::crypto::BackendChoice::Why::override);
            const DirectionKeys k(keys);
            CHECK(k.aead.backend() == forced);
            CHECK(k.hp.backend() == forced);
        }
        const DirectionKeys after(keys);
        CHECK(after.aead.backend() == chosen);
        CHECK(after.hp.backend() == chosen);
    }
}
