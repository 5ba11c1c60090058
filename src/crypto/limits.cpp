#include "crypto/limits.hpp"

#include <algorithm>

namespace ndm::crypto {

AeadLimits aead_limits(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256:
    case CipherSuite::aes256_gcm_sha384: return {std::uint64_t{1} << 23, std::uint64_t{1} << 52};
    case CipherSuite::chacha20_poly1305_sha256: return {std::uint64_t{1} << 62, std::uint64_t{1} << 36};
    }
    return {};
}

AeadUsage::AeadUsage(CipherSuite suite)
    : AeadUsage(aead_limits(suite), aead_limits(suite).confidentiality / 4 * 3) {}

AeadUsage::AeadUsage(AeadLimits limits, std::uint64_t update_at)
    : limits_(limits), update_at_(std::min(update_at, limits.confidentiality)) {}

}  // namespace ndm::crypto
