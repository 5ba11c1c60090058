#include "crypto/header_protection.hpp"

#include <gnutls/gnutls.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ndm::crypto {

HeaderProtection::HeaderProtection(CipherSuite suite, std::span<const std::uint8_t> key) : suite_(suite) {
    if (key.size() != key_size(suite)) {
        throw std::invalid_argument("header protection key of " + std::to_string(key.size()) + " bytes for " +
                                    std::string(to_string(suite)));
    }
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: aes128_set_encrypt_key(&ctx_.aes128, key.data()); break;
    case CipherSuite::aes256_gcm_sha384: aes256_set_encrypt_key(&ctx_.aes256, key.data()); break;
    case CipherSuite::chacha20_poly1305_sha256: chacha_set_key(&ctx_.chacha, key.data()); break;
    }
}

HeaderProtection::~HeaderProtection() { gnutls_memset(&ctx_, 0, sizeof ctx_); }

HpMask HeaderProtection::mask(std::span<const std::uint8_t, kHpSampleSize> sample) const {
    HpMask out{};
    switch (suite_) {
    case CipherSuite::aes128_gcm_sha256:
    case CipherSuite::aes256_gcm_sha384: {
        std::array<std::uint8_t, kHpSampleSize> block{};
        if (suite_ == CipherSuite::aes128_gcm_sha256) {
            aes128_encrypt(&ctx_.aes128, block.size(), block.data(), sample.data());
        } else {
            aes256_encrypt(&ctx_.aes256, block.size(), block.data(), sample.data());
        }
        std::copy_n(block.begin(), kHpMaskSize, out.begin());
        break;
    }
    case CipherSuite::chacha20_poly1305_sha256: {
        chacha_ctx c = ctx_.chacha;  // the nonce and counter are per packet
        chacha_set_nonce96(&c, sample.data() + 4);  // resets the counter: set it after
        chacha_set_counter32(&c, sample.data());
        constexpr std::array<std::uint8_t, kHpMaskSize> zeros{};
        chacha_crypt32(&c, zeros.size(), out.data(), zeros.data());
        gnutls_memset(&c, 0, sizeof c);
        break;
    }
    }
    return out;
}

}  // namespace ndm::crypto
