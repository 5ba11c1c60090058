#include "crypto/stateless_reset.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nettle/memops.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "crypto/error.hpp"
#include "crypto/packet_keys.hpp"

namespace ndm::crypto {

namespace {
// RFC 9000 §10.3: 1 byte of header, 4 unpredictable bytes at least, the token.
constexpr std::size_t kMinStatelessReset = 5 + kStatelessResetTokenSize;
}  // namespace

StatelessResetKey::StatelessResetKey(std::span<const std::uint8_t, kSize> key) {
    std::copy(key.begin(), key.end(), key_.begin());
}

StatelessResetKey::StatelessResetKey(RandomSource& random) { random.fill(key_); }

StatelessResetKey::~StatelessResetKey() { gnutls_memset(key_.data(), 0, key_.size()); }

StatelessResetToken StatelessResetKey::token_for(std::span<const std::uint8_t> cid) const {
    if (cid.size() > kMaxConnectionIdSize) throw std::invalid_argument("connection ID longer than 20 bytes");
    std::array<std::uint8_t, 32> mac{};
    if (const int rc = gnutls_hmac_fast(GNUTLS_MAC_SHA256, key_.data(), key_.size(), cid.data(), cid.size(), mac.data());
        rc < 0) {
        throw CryptoError(std::string("gnutls_hmac_fast: ") + gnutls_strerror(rc));
    }
    StatelessResetToken token{};
    std::copy_n(mac.begin(), token.size(), token.begin());
    return token;
}

bool tokens_equal(const StatelessResetToken& a, const StatelessResetToken& b) {
    return memeql_sec(a.data(), b.data(), a.size()) != 0;
}

bool is_stateless_reset(std::span<const std::uint8_t> datagram, const StatelessResetToken& token) {
    if (datagram.size() < kMinStatelessReset || (datagram[0] & 0x80) != 0) return false;
    return memeql_sec(datagram.data() + datagram.size() - token.size(), token.data(), token.size()) != 0;
}

}  // namespace ndm::crypto
