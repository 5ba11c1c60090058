#include "crypto/random.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <string>

#include "crypto/error.hpp"

namespace ndm::crypto {

void CryptoRandom::fill(std::span<std::uint8_t> out) {
    if (out.empty()) return;
    if (const int rc = gnutls_rnd(GNUTLS_RND_RANDOM, out.data(), out.size()); rc < 0) {
        throw CryptoError(std::string("gnutls_rnd: ") + gnutls_strerror(rc));
    }
}

void SeededRandom::fill(std::span<std::uint8_t> out) {
    std::size_t i = 0;
    while (i < out.size()) {
        std::uint64_t word = rng_.next();
        for (int b = 0; b < 8 && i < out.size(); ++b, word >>= 8) out[i++] = static_cast<std::uint8_t>(word);
    }
}

}  // namespace ndm::crypto
