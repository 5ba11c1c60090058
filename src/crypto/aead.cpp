#include "crypto/aead.hpp"

#include <gnutls/gnutls.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "crypto/backend_choice.hpp"
#include "crypto/error.hpp"

namespace ndm::crypto {

Aead::Aead(CipherSuite suite, std::span<const std::uint8_t> key, std::span<const std::uint8_t, kAeadIvSize> iv)
    : Aead(backend_for(suite).backend, suite, key, iv) {}

Aead::Aead(Backend backend, CipherSuite suite, std::span<const std::uint8_t> key,
           std::span<const std::uint8_t, kAeadIvSize> iv)
    : suite_(suite), backend_(backend) {
    if (key.size() != key_size(suite)) {
        throw std::invalid_argument("AEAD key of " + std::to_string(key.size()) + " bytes for " +
                                    std::string(to_string(suite)));
    }
    std::copy(iv.begin(), iv.end(), iv_.begin());
    cipher_ = backend_ops(backend).make_aead(suite, key);
}

Aead::~Aead() { gnutls_memset(iv_.data(), 0, iv_.size()); }

Aead::Aead(Aead&& other) noexcept
    : suite_(other.suite_), backend_(other.backend_), iv_(other.iv_), cipher_(std::move(other.cipher_)) {}

Aead& Aead::operator=(Aead&& other) noexcept {
    if (this != &other) {
        suite_ = other.suite_;
        backend_ = other.backend_;
        iv_ = other.iv_;
        cipher_ = std::move(other.cipher_);
    }
    return *this;
}

Nonce Aead::nonce(std::uint64_t pn) const {
    Nonce n = iv_;
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
    if (!cipher_) throw std::logic_error("AEAD seal on a moved-from context");
    if (!cipher_->seal(n, aad, payload))
        throw CryptoError("AEAD seal failed (" + std::string(to_string(backend_)) + ", " +
                          std::string(to_string(suite_)) + ")");
}

bool Aead::open_with_nonce(const Nonce& n, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) {
    return open_with_nonce(n, aad, payload, payload);
}

bool Aead::open_with_nonce(const Nonce& n, std::span<const std::uint8_t> aad, std::span<const std::uint8_t> in,
                           std::span<std::uint8_t> out) {
    if (in.size() < kAeadTagSize || out.size() < in.size() - kAeadTagSize || !cipher_) return false;
    return cipher_->open(n, aad, in, out);
}

}  // namespace ndm::crypto
