// Key derivation for QUIC packet protection (src/crypto/hkdf, packet_keys):
// RFC 9001 Appendix A.1 and A.5 byte for byte, and key-update ("quic ku")
// and SHA-384 vectors computed independently with OpenSSL.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "crypto/hkdf.hpp"
#include "crypto/packet_keys.hpp"
#include "crypto_test_util.hpp"

using ndm::crypto::QuicVersion;

using ndm::crypto::CipherSuite;
using ndm::crypto::Secret;
using ndm::test::hex;
using ndm::test::secret_of;
using ndm::test::unhex;

namespace {
const std::vector<std::uint8_t>& kDcid = ndm::test::rfc9001_dcid();
}  // namespace

TEST_CASE("crypto keys: HKDF-Extract of the v1 salt over the DCID (RFC 9001 A.1)") {
    const auto salt = unhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a");
    const Secret initial = ndm::crypto::hkdf_extract(CipherSuite::aes128_gcm_sha256, salt, kDcid);
    CHECK(hex(initial.span()) == "7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44");
}

TEST_CASE("crypto keys: client and server Initial secrets, key, iv and hp (RFC 9001 A.1)") {
    const auto secrets = ndm::crypto::initial_secrets(kDcid, QuicVersion::v1);
    CHECK(hex(secrets.client.span()) == "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea");
    CHECK(hex(secrets.server.span()) == "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b");

    const auto client = ndm::crypto::derive_packet_keys(CipherSuite::aes128_gcm_sha256, secrets.client, QuicVersion::v1);
    CHECK(hex(client.key_span()) == "1f369613dd76d5467730efcbe3b1a22d");
    CHECK(hex(client.iv) == "fa044b2f42a3fd3b46fb255c");
    CHECK(hex(client.hp_span()) == "9f50449e04a0e810283a1e9933adedd2");

    const auto server = ndm::crypto::derive_packet_keys(CipherSuite::aes128_gcm_sha256, secrets.server, QuicVersion::v1);
    CHECK(hex(server.key_span()) == "cf3a5331653c364c88f0f379b6067e37");
    CHECK(hex(server.iv) == "0ac1493ca1905853b0bba03e");
    CHECK(hex(server.hp_span()) == "c206b8d9b9f0f37644430b490eeaa314");
}

TEST_CASE("crypto keys: ChaCha20-Poly1305 key, iv, hp and ku from the A.5 secret (RFC 9001 A.5)") {
    constexpr auto suite = CipherSuite::chacha20_poly1305_sha256;
    const Secret secret = secret_of(unhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"));
    const auto keys = ndm::crypto::derive_packet_keys(suite, secret, QuicVersion::v1);
    CHECK(hex(keys.key_span()) == "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8");
    CHECK(hex(keys.iv) == "e0459b3474bdd0e44a41c144");
    CHECK(hex(keys.hp_span()) == "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4");
    CHECK(hex(ndm::crypto::next_secret(suite, secret, QuicVersion::v1).span()) ==
          "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9");
}

// Computed independently with OpenSSL 3 (HkdfLabel of "tls13 quic ku", 32
// bytes, empty context, as the info):
//   openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt mode:EXPAND_ONLY
//     -kdfopt hexkey:c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea
//     -kdfopt hexinfo:00200d746c7331332071756963206b7500 HKDF
// (one command line)
// and from its output the key and IV with hexinfo 00100e746c7331332071756963206b657900
// (-keylen 16) and 000c0d746c733133207175696320697600 (-keylen 12).
TEST_CASE("crypto keys: key update of the client Initial secret matches openssl kdf (RFC 9001 6.1)") {
    constexpr auto suite = CipherSuite::aes128_gcm_sha256;
    const auto secrets = ndm::crypto::initial_secrets(kDcid, QuicVersion::v1);
    const Secret next = ndm::crypto::next_secret(suite, secrets.client, QuicVersion::v1);
    CHECK(hex(next.span()) == "4428ffa195ad665b9ebf9456945b99e8ff848512cab93d0426436409047d666c");

    const auto current = ndm::crypto::derive_packet_keys(suite, secrets.client, QuicVersion::v1);
    const auto updated = ndm::crypto::updated_keys(current, next, QuicVersion::v1);
    CHECK(hex(updated.key_span()) == "e85fece7a6f1b06576c46503cabcfa0d");
    CHECK(hex(updated.iv) == "994107a30fb5ed593e8976f2");
    CHECK(hex(updated.hp_span()) == hex(current.hp_span()));  // §6.1: hp is not updated
}

// SHA-384 (TLS_AES_256_GCM_SHA384), secret 00 01 .. 2f, with OpenSSL 3:
//   openssl kdf -keylen 48 -kdfopt digest:SHA384 -kdfopt mode:EXPAND_ONLY
//     -kdfopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f
//     -kdfopt hexinfo:00300d746c7331332071756963206b7500 HKDF
// (one command line)
// and -keylen 32 hexinfo 00200e746c7331332071756963206b657900 (quic key),
// -keylen 12 000c0d746c733133207175696320697600 (quic iv), -keylen 32
// 00200d746c733133207175696320687000 (quic hp).
TEST_CASE("crypto keys: AES-256-GCM/SHA-384 keys and key update match openssl kdf") {
    constexpr auto suite = CipherSuite::aes256_gcm_sha384;
    std::vector<std::uint8_t> bytes(48);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i);
    const Secret secret = secret_of(bytes);
    const auto keys = ndm::crypto::derive_packet_keys(suite, secret, QuicVersion::v1);
    CHECK(hex(keys.key_span()) == "95c517eea81b6469ff8f27a065fd04c1a27b3023591b93e273a9df5f921d1f68");
    CHECK(hex(keys.iv) == "a8d8316bf5bb0bbfa74cbf17");
    CHECK(hex(keys.hp_span()) == "307135de335efef95873468a03d3dfa1e38050df7cc6ab7f22fd7aced73b66e5");
    CHECK(hex(ndm::crypto::next_secret(suite, secret, QuicVersion::v1).span()) ==
          "d21f524277390ba96b86484d9c687f850f1e4d1f997033bba06051129179a762a94067d065f3f715e83d65a7bf8c79b9");
}

TEST_CASE("crypto keys: a secret of the wrong size or an oversized connection ID is refused") {
    const Secret short_secret = secret_of(std::vector<std::uint8_t>(32, 1));
    CHECK_THROWS_AS(ndm::crypto::derive_packet_keys(CipherSuite::aes256_gcm_sha384, short_secret, QuicVersion::v1),
                    std::invalid_argument);
    CHECK_THROWS_AS(ndm::crypto::next_secret(CipherSuite::aes256_gcm_sha384, short_secret, QuicVersion::v1), std::invalid_argument);
    CHECK_THROWS_AS(ndm::crypto::initial_secrets(std::vector<std::uint8_t>(21, 0), QuicVersion::v1), std::invalid_argument);
    CHECK_NOTHROW(ndm::crypto::initial_secrets(std::vector<std::uint8_t>(20, 0), QuicVersion::v1));
    CHECK_NOTHROW(ndm::crypto::initial_secrets({}, QuicVersion::v1));
    std::vector<std::uint8_t> out(16);
    CHECK_THROWS_AS(ndm::crypto::hkdf_expand_label(CipherSuite::aes128_gcm_sha256, short_secret.span(),
                                                   std::string(250, 'x'), {}, out),
                    std::invalid_argument);
}
