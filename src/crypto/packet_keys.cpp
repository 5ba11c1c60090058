#include "crypto/packet_keys.hpp"

#include <stdexcept>
#include <string>

#include "crypto/hkdf.hpp"

namespace ndm::crypto {

namespace {

// RFC 9001 §5.2: the QUIC version 1 Initial salt.
constexpr std::array<std::uint8_t, 20> kInitialSaltV1 = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                                         0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};

void check_secret(CipherSuite suite, const Secret& secret) {
    if (secret.size != hash_size(suite)) {
        throw std::invalid_argument("traffic secret of " + std::to_string(secret.size) + " bytes for " +
                                    std::string(to_string(suite)));
    }
}

}  // namespace

std::size_t key_size(CipherSuite suite) { return suite == CipherSuite::aes128_gcm_sha256 ? 16 : 32; }

PacketKeys derive_packet_keys(CipherSuite suite, const Secret& secret) {
    check_secret(suite, secret);
    PacketKeys keys;
    keys.suite = suite;
    const std::size_t n = key_size(suite);
    hkdf_expand_label(suite, secret.span(), "quic key", {}, {keys.key.data(), n});
    hkdf_expand_label(suite, secret.span(), "quic iv", {}, keys.iv);
    hkdf_expand_label(suite, secret.span(), "quic hp", {}, {keys.hp.data(), n});
    return keys;
}

InitialSecrets initial_secrets(std::span<const std::uint8_t> dcid) {
    if (dcid.size() > kMaxConnectionIdSize) throw std::invalid_argument("connection ID longer than 20 bytes");
    constexpr CipherSuite suite = CipherSuite::aes128_gcm_sha256;
    const Secret initial = hkdf_extract(suite, kInitialSaltV1, dcid);
    return {expand_secret(suite, initial, "client in"), expand_secret(suite, initial, "server in")};
}

Secret next_secret(CipherSuite suite, const Secret& secret) {
    check_secret(suite, secret);
    return expand_secret(suite, secret, "quic ku");
}

PacketKeys updated_keys(const PacketKeys& current, const Secret& next) {
    PacketKeys keys = derive_packet_keys(current.suite, next);
    keys.hp = current.hp;
    return keys;
}

}  // namespace ndm::crypto
