#include "crypto/aead.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "crypto/error.hpp"

namespace ndm::crypto {

namespace {

gnutls_cipher_algorithm_t cipher_of(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: return GNUTLS_CIPHER_AES_128_GCM;
    case CipherSuite::aes256_gcm_sha384: return GNUTLS_CIPHER_AES_256_GCM;
    case CipherSuite::chacha20_poly1305_sha256: return GNUTLS_CIPHER_CHACHA20_POLY1305;
    }
    throw std::invalid_argument("unknown cipher suite");
}

}  // namespace

Aead::Aead(CipherSuite suite, std::span<const std::uint8_t> key, std::span<const std::uint8_t, kAeadIvSize> iv)
    : suite_(suite) {
    if (key.size() != key_size(suite)) {
        throw std::invalid_argument("AEAD key of " + std::to_string(key.size()) + " bytes for " +
                                    std::string(to_string(suite)));
    }
    std::copy(iv.begin(), iv.end(), iv_.begin());
    const gnutls_datum_t key_datum{const_cast<unsigned char*>(key.data()), static_cast<unsigned>(key.size())};
    if (const int rc = gnutls_aead_cipher_init(&handle_, cipher_of(suite), &key_datum); rc < 0) {
        handle_ = nullptr;
        throw CryptoError(std::string("gnutls_aead_cipher_init: ") + gnutls_strerror(rc));
    }
}

Aead::~Aead() {
    if (handle_ != nullptr) gnutls_aead_cipher_deinit(handle_);
    gnutls_memset(iv_.data(), 0, iv_.size());
}

Aead::Aead(Aead&& other) noexcept
    : suite_(other.suite_), iv_(other.iv_), handle_(std::exchange(other.handle_, nullptr)) {}

Aead& Aead::operator=(Aead&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) gnutls_aead_cipher_deinit(handle_);
        suite_ = other.suite_;
        iv_ = other.iv_;
        handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
}

std::array<std::uint8_t, kAeadIvSize> Aead::nonce(std::uint64_t pn) const {
    std::array<std::uint8_t, kAeadIvSize> n = iv_;
    for (std::size_t i = 0; i < 8; ++i) n[kAeadIvSize - 1 - i] ^= static_cast<std::uint8_t>(pn >> (8 * i));
    return n;
}

void Aead::seal(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<std::uint8_t> payload) {
    seal_with_nonce(nonce(pn), header, payload);
}

bool Aead::open(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<std::uint8_t> payload) {
    return open_with_nonce(nonce(pn), header, payload, payload);
}

bool Aead::open(std::uint64_t pn, std::span<const std::uint8_t> header, std::span<const std::uint8_t> in,
                std::span<std::uint8_t> out) {
    return open_with_nonce(nonce(pn), header, in, out);
}

void Aead::seal_with_nonce(const Nonce& n, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) {
    if (payload.size() < kAeadTagSize) throw std::invalid_argument("AEAD seal: no room for the tag");
    if (handle_ == nullptr) throw std::logic_error("AEAD seal on a moved-from context");
    std::size_t out_size = payload.size();
    const int rc = gnutls_aead_cipher_encrypt(handle_, n.data(), n.size(), aad.data(), aad.size(), kAeadTagSize,
                                              payload.data(), payload.size() - kAeadTagSize, payload.data(), &out_size);
    if (rc < 0 || out_size != payload.size()) {
        throw CryptoError(std::string("gnutls_aead_cipher_encrypt: ") + gnutls_strerror(rc));
    }
}

bool Aead::open_with_nonce(const Nonce& n, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) {
    return open_with_nonce(n, aad, payload, payload);
}

bool Aead::open_with_nonce(const Nonce& n, std::span<const std::uint8_t> aad, std::span<const std::uint8_t> in,
                           std::span<std::uint8_t> out) {
    if (in.size() < kAeadTagSize || out.size() < in.size() - kAeadTagSize || handle_ == nullptr) return false;
    std::size_t out_size = out.size();
    const int rc = gnutls_aead_cipher_decrypt(handle_, n.data(), n.size(), aad.data(), aad.size(), kAeadTagSize,
                                              in.data(), in.size(), out.data(), &out_size);
    return rc >= 0 && out_size == in.size() - kAeadTagSize;
}

}  // namespace ndm::crypto
