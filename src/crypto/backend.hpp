// The seam between QUIC packet protection and the libraries that compute it
// (docs/packet-protection.md, "Backends"): the AEAD (RFC 9001 §5.3) and the
// header protection mask (§5.4.3, §5.4.4) of one key, behind two small
// interfaces that each backend implements, and a function table per backend
// that makes them. Aead and HeaderProtection (aead.hpp, header_protection.hpp)
// hold one of each; which backend a suite gets is backend_choice.hpp's job.
// A further backend is one more table here and one more .cpp beside
// backend_gnutls.cpp and backend_openssl.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "crypto/packet_keys.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

inline constexpr std::size_t kAeadTagSize = 16;    // RFC 9001 §5.3: all QUIC v1 AEADs
inline constexpr std::size_t kHpSampleSize = 16;   // RFC 9001 §5.4.2
inline constexpr std::size_t kHpMaskSize = 5;
using HpMask = std::array<std::uint8_t, kHpMaskSize>;
using Nonce = std::array<std::uint8_t, kAeadIvSize>;

// gnutls: GnuTLS's AEAD (gnutls_aead_cipher_*) and nettle's AES and ChaCha20;
// openssl: OpenSSL 3 libcrypto's EVP ciphers.
enum class Backend : std::uint8_t { gnutls = 0, openssl = 1 };
inline constexpr std::array<Backend, 2> kBackends = {Backend::gnutls, Backend::openssl};

std::string_view to_string(Backend backend);  // "gnutls", "openssl"
std::optional<Backend> parse_backend(std::string_view name);
// The library and version that runs, as it reports itself: "GnuTLS 3.7.9",
// "OpenSSL 3.0.19 27 Jan 2026".
std::string_view library_version(Backend backend);

// The AEAD of one key. The caller has checked the sizes: payload holds at
// least the tag, out at least in.size() - kAeadTagSize bytes. Nothing here
// allocates.
class AeadCipher {
public:
    virtual ~AeadCipher() = default;
    // Encrypts payload[0, size - 16) in place and writes the tag into its last
    // 16 bytes; false if the library fails.
    virtual bool seal(const Nonce& nonce, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) = 0;
    // Decrypts and authenticates in (ciphertext | tag) into out; in and out
    // are the same bytes or do not overlap. False for any failure.
    virtual bool open(const Nonce& nonce, std::span<const std::uint8_t> aad, std::span<const std::uint8_t> in,
                      std::span<std::uint8_t> out) = 0;
};

// The header protection mask of one key (RFC 9001 §5.4.3 AES-ECB, §5.4.4
// ChaCha20 with the sample as counter and nonce).
class HpCipher {
public:
    virtual ~HpCipher() = default;
    [[nodiscard]] virtual HpMask mask(std::span<const std::uint8_t, kHpSampleSize> sample) const = 0;
};

// What a backend offers: makers of the two primitives for a suite and a key
// of key_size(suite) bytes (checked by the caller). They throw CryptoError
// if the library fails.
struct BackendOps {
    Backend backend;
    std::unique_ptr<AeadCipher> (*make_aead)(CipherSuite suite, std::span<const std::uint8_t> key);
    std::unique_ptr<HpCipher> (*make_hp)(CipherSuite suite, std::span<const std::uint8_t> key);
    std::string_view (*version)();
};

const BackendOps& backend_ops(Backend backend);

// Each backend's table (backend_gnutls.cpp, backend_openssl.cpp).
extern const BackendOps kGnutlsBackend;
extern const BackendOps kOpensslBackend;

}  // namespace ndm::crypto
