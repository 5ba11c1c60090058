#include "crypto/retry.hpp"

#include <nettle/memops.h>

#include <stdexcept>
#include <vector>

#include "crypto/packet_keys.hpp"

namespace ndm::crypto {

namespace {

// RFC 9001 §5.8 (version 1) and RFC 9369 §3.3.3 (version 2).
constexpr std::array<std::uint8_t, 16> kRetryKeyV1 = {0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a,
                                                      0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e};
constexpr std::array<std::uint8_t, kAeadIvSize> kRetryNonceV1 = {0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63,
                                                                 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb};
constexpr std::array<std::uint8_t, 16> kRetryKeyV2 = {0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2,
                                                      0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92};
constexpr std::array<std::uint8_t, kAeadIvSize> kRetryNonceV2 = {0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c,
                                                                 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a};

}  // namespace

RetryTag retry_integrity_tag(QuicVersion version, std::span<const std::uint8_t> odcid,
                             std::span<const std::uint8_t> retry_without_tag) {
    if (odcid.size() > kMaxConnectionIdSize) throw std::invalid_argument("original DCID longer than 20 bytes");
    // Retry packets are rare (one per client Initial at most): a vector is fine here.
    std::vector<std::uint8_t> pseudo;
    pseudo.reserve(1 + odcid.size() + retry_without_tag.size());
    pseudo.push_back(static_cast<std::uint8_t>(odcid.size()));
    pseudo.insert(pseudo.end(), odcid.begin(), odcid.end());
    pseudo.insert(pseudo.end(), retry_without_tag.begin(), retry_without_tag.end());
    const bool v2 = version == QuicVersion::v2;
    Aead aead(CipherSuite::aes128_gcm_sha256, v2 ? kRetryKeyV2 : kRetryKeyV1, v2 ? kRetryNonceV2 : kRetryNonceV1);
    RetryTag tag{};
    aead.seal(0, pseudo, tag);  // pn 0: the nonce is the fixed one
    return tag;
}

bool verify_retry_integrity(QuicVersion version, std::span<const std::uint8_t> odcid,
                            std::span<const std::uint8_t> retry_packet) {
    if (retry_packet.size() < kAeadTagSize || odcid.size() > kMaxConnectionIdSize) return false;
    const std::size_t body = retry_packet.size() - kAeadTagSize;
    const RetryTag expected = retry_integrity_tag(version, odcid, retry_packet.first(body));
    return memeql_sec(expected.data(), retry_packet.data() + body, kAeadTagSize) != 0;
}

}  // namespace ndm::crypto
