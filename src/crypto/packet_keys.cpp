#include "crypto/packet_keys.hpp"

#include <stdexcept>
#include <string>

#include "crypto/hkdf.hpp"

namespace ndm::crypto {

namespace {

// The Initial salts: RFC 9001 §5.2 (version 1), RFC 9369 §3.3.1 (version 2).
constexpr std::array<std::uint8_t, 20> kInitialSaltV1 = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                                         0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
constexpr std::array<std::uint8_t, 20> kInitialSaltV2 = {0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
                                                         0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9};

void check_secret(CipherSuite suite, const Secret& secret) {
    if (secret.size != hash_size(suite)) {
        throw std::invalid_argument("traffic secret of " + std::to_string(secret.size) + " bytes for " +
                                    std::string(to_string(suite)));
    }
}

}  // namespace

std::size_t key_size(CipherSuite suite) { return suite == CipherSuite::aes128_gcm_sha256 ? 16 : 32; }

PacketKeys derive_packet_keys(CipherSuite suite, const Secret& secret, QuicVersion version) {
    check_secret(suite, secret);
    PacketKeys keys;
    keys.suite = suite;
    const std::size_t n = key_size(suite);
    const VersionLabels label = labels(version);
    hkdf_expand_label(suite, secret.span(), label.key, {}, {keys.key.data(), n});
    hkdf_expand_label(suite, secret.span(), label.iv, {}, keys.iv);
    hkdf_expand_label(suite, secret.span(), label.hp, {}, {keys.hp.data(), n});
    return keys;
}

InitialSecrets initial_secrets(std::span<const std::uint8_t> dcid, QuicVersion version) {
    if (dcid.size() > kMaxConnectionIdSize) throw std::invalid_argument("connection ID longer than 20 bytes");
    constexpr CipherSuite suite = CipherSuite::aes128_gcm_sha256;
    const Secret initial = hkdf_extract(suite, version == QuicVersion::v2 ? kInitialSaltV2 : kInitialSaltV1, dcid);
    return {expand_secret(suite, initial, "client in"), expand_secret(suite, initial, "server in")};
}

Secret next_secret(CipherSuite suite, const Secret& secret, QuicVersion version) {
    check_secret(suite, secret);
    return expand_secret(suite, secret, labels(version).ku);
}

PacketKeys updated_keys(const PacketKeys& current, const Secret& next, QuicVersion version) {
    PacketKeys keys = derive_packet_keys(current.suite, next, version);
    keys.hp = current.hp;
    return keys;
}

}  // namespace ndm::crypto
