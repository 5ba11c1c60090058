// The OpenSSL backend of packet protection (backend.hpp), on OpenSSL 3's EVP
// interface: one EVP_CIPHER_CTX per key, keyed once; each packet sets only
// its nonce (EVP_CipherInit_ex with no cipher and no key), so nothing is
// fetched or allocated per packet. The AEAD is EVP_aes_128_gcm,
// EVP_aes_256_gcm or EVP_chacha20_poly1305 (RFC 9001 §5.3); header
// protection is AES-ECB (§5.4.3) or EVP_chacha20, whose 16-byte IV is the
// 32-bit little-endian block counter followed by the 96-bit nonce, exactly
// the sample's layout in §5.4.4. The same context seals and opens: the
// direction is set with each nonce (GCM and ChaCha20-Poly1305 use one key
// schedule for both). ChaCha20-Poly1305 is here because nettle 3.8 has no
// multi-block ChaCha20 (bench/RESULTS.md, "Packet protection").
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <string>

#include "crypto/backend.hpp"
#include "crypto/error.hpp"

namespace ndm::crypto {

namespace {

[[noreturn]] void fail(const char* what) {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    throw CryptoError(std::string(what) + ": " + text.data());
}

struct CtxFree {
    void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

// A context keyed for `cipher`, encrypting; no IV yet.
CtxPtr keyed(const EVP_CIPHER* cipher, std::span<const std::uint8_t> key, const char* what) {
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    if (!ctx) fail(what);
    if (EVP_CipherInit_ex(ctx.get(), cipher, nullptr, key.data(), nullptr, 1) != 1) fail(what);
    return ctx;
}

const EVP_CIPHER* aead_cipher(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: return EVP_aes_128_gcm();
    case CipherSuite::aes256_gcm_sha384: return EVP_aes_256_gcm();
    case CipherSuite::chacha20_poly1305_sha256: return EVP_chacha20_poly1305();
    }
    return nullptr;
}

bool fits_int(std::size_t n) { return n <= static_cast<std::size_t>(INT_MAX); }

class OpensslAead final : public AeadCipher {
public:
    OpensslAead(CipherSuite suite, std::span<const std::uint8_t> key)
        : ctx_(keyed(aead_cipher(suite), key, "EVP_CipherInit_ex (AEAD)")) {
        // 12 bytes is every QUIC AEAD's nonce (RFC 9001 §5.3) and both
        // ciphers' default; said once so that no default is relied on.
        if (EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_AEAD_SET_IVLEN, static_cast<int>(kAeadIvSize), nullptr) != 1)
            fail("EVP_CTRL_AEAD_SET_IVLEN");
    }

    bool seal(const Nonce& n, std::span<const std::uint8_t> aad, std::span<std::uint8_t> payload) override {
        const std::size_t size = payload.size() - kAeadTagSize;
        if (!fits_int(size) || !fits_int(aad.size())) return false;
        EVP_CIPHER_CTX* c = ctx_.get();
        int len = 0;
        int fin = 0;
        if (EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, n.data(), 1) != 1 ||
            (!aad.empty() && EVP_CipherUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) ||
            EVP_CipherUpdate(c, payload.data(), &len, payload.data(), static_cast<int>(size)) != 1 ||
            EVP_CipherFinal_ex(c, payload.data() + len, &fin) != 1 ||
            static_cast<std::size_t>(len) + static_cast<std::size_t>(fin) != size ||
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kAeadTagSize), payload.data() + size) != 1) {
            ERR_clear_error();
            return false;
        }
        return true;
    }

    bool open(const Nonce& n, std::span<const std::uint8_t> aad, std::span<const std::uint8_t> in,
              std::span<std::uint8_t> out) override {
        const std::size_t size = in.size() - kAeadTagSize;
        if (!fits_int(size) || !fits_int(aad.size())) return false;
        std::array<std::uint8_t, kAeadTagSize> tag{};  // EVP_CTRL_AEAD_SET_TAG takes a mutable pointer
        std::copy_n(in.data() + size, kAeadTagSize, tag.begin());
        EVP_CIPHER_CTX* c = ctx_.get();
        int len = 0;
        int fin = 0;
        const bool ok =
            EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, n.data(), 0) == 1 &&
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kAeadTagSize), tag.data()) == 1 &&
            (aad.empty() || EVP_CipherUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) == 1) &&
            EVP_CipherUpdate(c, out.data(), &len, in.data(), static_cast<int>(size)) == 1 &&
            EVP_CipherFinal_ex(c, out.data() + len, &fin) == 1 &&
            static_cast<std::size_t>(len) + static_cast<std::size_t>(fin) == size;
        if (!ok) ERR_clear_error();  // a failed tag check leaves nothing on the queue; anything else might
        return ok;
    }

private:
    CtxPtr ctx_;
};

class OpensslHp final : public HpCipher {
public:
    OpensslHp(CipherSuite suite, std::span<const std::uint8_t> key)
        : chacha_(suite == CipherSuite::chacha20_poly1305_sha256),
          ctx_(keyed(chacha_ ? EVP_chacha20()
                             : (suite == CipherSuite::aes128_gcm_sha256 ? EVP_aes_128_ecb() : EVP_aes_256_ecb()),
                     key, "EVP_CipherInit_ex (header protection)")) {
        if (!chacha_ && EVP_CIPHER_CTX_set_padding(ctx_.get(), 0) != 1) fail("EVP_CIPHER_CTX_set_padding");
    }

    [[nodiscard]] HpMask mask(std::span<const std::uint8_t, kHpSampleSize> sample) const override {
        EVP_CIPHER_CTX* c = ctx_.get();
        std::array<std::uint8_t, kHpSampleSize> block{};
        int len = 0;
        bool ok = false;
        if (chacha_) {
            constexpr HpMask zeros{};
            ok = EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, sample.data(), 1) == 1 &&
                 EVP_CipherUpdate(c, block.data(), &len, zeros.data(), static_cast<int>(zeros.size())) == 1 &&
                 len == static_cast<int>(kHpMaskSize);
        } else {
            // ECB keeps no state between blocks: one block per call, no re-init.
            ok = EVP_CipherUpdate(c, block.data(), &len, sample.data(), static_cast<int>(sample.size())) == 1 &&
                 len == static_cast<int>(kHpSampleSize);
        }
        if (!ok) fail("header protection mask");
        HpMask out{};
        std::copy_n(block.begin(), kHpMaskSize, out.begin());
        OPENSSL_cleanse(block.data(), block.size());
        return out;
    }

private:
    bool chacha_;
    CtxPtr ctx_;
};

std::unique_ptr<AeadCipher> make_aead(CipherSuite suite, std::span<const std::uint8_t> key) {
    return std::make_unique<OpensslAead>(suite, key);
}

std::unique_ptr<HpCipher> make_hp(CipherSuite suite, std::span<const std::uint8_t> key) {
    return std::make_unique<OpensslHp>(suite, key);
}

std::string_view version() { return OpenSSL_version(OPENSSL_VERSION); }

}  // namespace

const BackendOps kOpensslBackend{Backend::openssl, &make_aead, &make_hp, &version};

}  // namespace ndm::crypto
