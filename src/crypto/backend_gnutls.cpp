// The GnuTLS backend of packet protection (backend.hpp): the AEAD through
// gnutls_aead_cipher_* (GnuTLS's own AES-GCM code, nettle's ChaCha20-Poly1305)
// and header protection with nettle's AES and ChaCha20. The GnuTLS handle is
// made once per key; the nettle key schedule is expanded once per key.
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nettle/aes.h>
#include <nettle/chacha.h>

#include <algorithm>
#include <memory>
#include <string>

#include "crypto/backend.hpp"
#include "crypto/error.hpp"

namespace ndm::crypto {

namespace {

gnutls_cipher_algorithm_t cipher_of(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: return GNUTLS_CIPHER_AES_128_GCM;
    case CipherSuite::aes256_gcm_sha384: return GNUTLS_CIPHER_AES_256_GCM;
    case CipherSuite::chacha20_poly1305_sha256: return GNUTLS_CIPHER_CHACHA20_POLY1305;
    }
    return GNUTLS_CIPHER_UNKNOWN;
}

class GnutlsAead final : public AeadCipher {
public:
    GnutlsAead(CipherSuite suite, std::span<const std::uint8_t> key) {
        const gnutls_datum_t datum{const_cast<unsigned char*>(key.data()), static_cast<unsigned>(key.size())};
        if (const int rc = gnutls_aead_cipher_init(&handle_, cipher_of(suite), &datum); rc < 0) {
            throw CryptoError(std::string("gnutls_aead_cipher_init: ") + gnutls_strerror(rc));
        }
    }
    ~GnutlsAead() override { gnutls_aead_cipher_deinit(handle_); }
    GnutlsAead(const GnutlsAead&) = delete;
    GnutlsAead& operator=(const GnutlsAead&) = delete;

    bool seal(const Nonce& n, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) override {
        std::size_t out_size = payload.size();
        const int rc = gnutls_aead_cipher_encrypt(handle_, n.data(), n.size(), aad.data(), aad.size(), kAeadTagSize,
                                                  payload.data(), payload.size() - kAeadTagSize, payload.data(),
                                                  &out_size);
        return rc >= 0 && out_size == payload.size();
    }

    bool open(const Nonce& n, std::span<const std::uint8_t> aad, std::span<const std::uint8_t> in,
              std::span<std::uint8_t> out) override {
        std::size_t out_size = out.size();
        const int rc = gnutls_aead_cipher_decrypt(handle_, n.data(), n.size(), aad.data(), aad.size(), kAeadTagSize,
                                                  in.data(), in.size(), out.data(), &out_size);
        return rc >= 0 && out_size == in.size() - kAeadTagSize;
    }

private:
    gnutls_aead_cipher_hd_t handle_ = nullptr;
};

class NettleHp final : public HpCipher {
public:
    NettleHp(CipherSuite suite, std::span<const std::uint8_t> key) : suite_(suite) {
        switch (suite) {
        case CipherSuite::aes128_gcm_sha256: aes128_set_encrypt_key(&ctx_.aes128, key.data()); break;
        case CipherSuite::aes256_gcm_sha384: aes256_set_encrypt_key(&ctx_.aes256, key.data()); break;
        case CipherSuite::chacha20_poly1305_sha256: chacha_set_key(&ctx_.chacha, key.data()); break;
        }
    }
    ~NettleHp() override { gnutls_memset(&ctx_, 0, sizeof ctx_); }
    NettleHp(const NettleHp&) = delete;
    NettleHp& operator=(const NettleHp&) = delete;

    [[nodiscard]] HpMask mask(std::span<const std::uint8_t, kHpSampleSize> sample) const override {
        HpMask out{};
        if (suite_ == CipherSuite::chacha20_poly1305_sha256) {
            chacha_ctx c = ctx_.chacha;                 // the nonce and counter are per packet
            chacha_set_nonce96(&c, sample.data() + 4);  // resets the counter: set it after
            chacha_set_counter32(&c, sample.data());
            constexpr HpMask zeros{};
            chacha_crypt32(&c, zeros.size(), out.data(), zeros.data());
            gnutls_memset(&c, 0, sizeof c);
            return out;
        }
        std::array<std::uint8_t, kHpSampleSize> block{};
        if (suite_ == CipherSuite::aes128_gcm_sha256) {
            aes128_encrypt(&ctx_.aes128, block.size(), block.data(), sample.data());
        } else {
            aes256_encrypt(&ctx_.aes256, block.size(), block.data(), sample.data());
        }
        std::copy_n(block.begin(), kHpMaskSize, out.begin());
        return out;
    }

private:
    CipherSuite suite_;
    union {
        aes128_ctx aes128;
        aes256_ctx aes256;
        chacha_ctx chacha;
    } ctx_{};
};

std::unique_ptr<AeadCipher> make_aead(CipherSuite suite, std::span<const std::uint8_t> key) {
    return std::make_unique<GnutlsAead>(suite, key);
}

std::unique_ptr<HpCipher> make_hp(CipherSuite suite, std::span<const std::uint8_t> key) {
    return std::make_unique<NettleHp>(suite, key);
}

std::string_view version() {
    static const std::string v = std::string("GnuTLS ") + gnutls_check_version(nullptr);
    return v;
}

}  // namespace

const BackendOps kGnutlsBackend{Backend::gnutls, &make_aead, &make_hp, &version};

}  // namespace ndm::crypto
