// Packet protection end to end (src/crypto/packet_protection, aead,
// header_protection): RFC 9001 Appendix A.2, A.3 and A.5 protected and
// unprotected byte for byte; every tampered byte fails; every truncation is
// refused without reading past the buffer (run under --sanitize too).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "crypto/hkdf.hpp"
#include "crypto/packet_protection.hpp"
#include "crypto_test_util.hpp"

using ndm::crypto::QuicVersion;

using ndm::crypto::CipherSuite;
using ndm::crypto::DirectionKeys;
using ndm::crypto::kAeadTagSize;
using ndm::crypto::Secret;
using ndm::test::hex;
using ndm::test::secret_of;
using ndm::test::unhex;

namespace {

const std::vector<std::uint8_t>& kDcid = ndm::test::rfc9001_dcid();

// A.2: the Initial header's packet number starts after first byte (1),
// version (4), DCID length and DCID (9), SCID length (1), token length (1)
// and the 2-byte Length.
constexpr std::size_t kClientPnOffset = 18;

// packet = header | payload | room for the tag.
std::vector<std::uint8_t> assemble(const std::vector<std::uint8_t>& header, const std::vector<std::uint8_t>& payload) {
    std::vector<std::uint8_t> packet = header;
    packet.insert(packet.end(), payload.begin(), payload.end());
    packet.resize(packet.size() + kAeadTagSize);
    return packet;
}

// Receive side as the connection runs it, with the full packet number equal
// to the truncated one (these packets are the first of their space).
std::optional<std::vector<std::uint8_t>> unprotect(std::vector<std::uint8_t> packet, std::size_t pn_offset,
                                                   DirectionKeys& keys) {
    const auto header = ndm::crypto::remove_header_protection(packet, pn_offset, keys.hp);
    if (!header) return std::nullopt;
    const auto plain = ndm::crypto::open_payload(packet, header->header_length(pn_offset), header->truncated_pn,
                                                 keys.aead);
    if (!plain) return std::nullopt;
    return std::vector<std::uint8_t>(plain->begin(), plain->end());
}

}  // namespace

TEST_CASE("crypto packet: the client Initial is protected byte for byte (RFC 9001 A.2)") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto client = ndm::crypto::initial_keys(kDcid, false, QuicVersion::v1);
        auto packet = assemble(unhex(ndm::test::kRfc9001ClientInitialHeader), ndm::test::rfc9001_client_initial_payload());
        REQUIRE(packet.size() == 1200);
        REQUIRE(ndm::crypto::protect(packet, kClientPnOffset, 4, 2, client.write.aead, client.write.hp));
        CHECK(hex(packet) == hex(unhex(ndm::test::kRfc9001ClientInitialProtected)));
        // The intermediate values A.2 shows: the sample and the mask.
        CHECK(hex(std::span(packet).subspan(22, 16)) == "d1b1c98dd7689fb8ec11d242b123dc9b");
        const std::vector<std::uint8_t> sample = unhex("d1b1c98dd7689fb8ec11d242b123dc9b");
        CHECK(hex(client.write.hp.mask(std::span<const std::uint8_t, 16>(sample.data(), 16))) == "437b9aec36");
    }
}

TEST_CASE("crypto packet: the server removes protection from the client Initial (RFC 9001 A.2)") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto server = ndm::crypto::initial_keys(kDcid, true, QuicVersion::v1);
        auto packet = unhex(ndm::test::kRfc9001ClientInitialProtected);
        const auto header = ndm::crypto::remove_header_protection(packet, kClientPnOffset, server.read.hp);
        REQUIRE(header);
        CHECK(header->first_byte == 0xc3);
        CHECK(header->pn_length == 4);
        CHECK(header->truncated_pn == 2);
        CHECK(hex(std::span(packet).first(22)) == ndm::test::kRfc9001ClientInitialHeader);
        const auto plain = ndm::crypto::open_payload(packet, 22, 2, server.read.aead);
        REQUIRE(plain);
        CHECK(hex(*plain) == hex(ndm::test::rfc9001_client_initial_payload()));
    }
}

TEST_CASE("crypto packet: the server Initial both ways (RFC 9001 A.3)") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        const auto payload = ndm::test::rfc9001_server_initial_payload();
        const auto expected = unhex(ndm::test::kRfc9001ServerInitialProtected);
        // First byte, version, DCID length 0, SCID length and SCID (9), token
        // length, 2-byte Length: the packet number is at 18, 2 bytes.
        auto server = ndm::crypto::initial_keys(kDcid, true, QuicVersion::v1);
        auto packet = assemble(unhex(ndm::test::kRfc9001ServerInitialHeader), payload);
        REQUIRE(ndm::crypto::protect(packet, 18, 2, 1, server.write.aead, server.write.hp));
        CHECK(hex(packet) == hex(expected));

        auto client = ndm::crypto::initial_keys(kDcid, false, QuicVersion::v1);
        const auto plain = unprotect(expected, 18, client.read);
        REQUIRE(plain);
        CHECK(hex(*plain) == hex(payload));
    }
}

TEST_CASE("crypto packet: the ChaCha20-Poly1305 short header packet both ways (RFC 9001 A.5)") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        const Secret secret = secret_of(unhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"));
        DirectionKeys keys(ndm::crypto::derive_packet_keys(CipherSuite::chacha20_poly1305_sha256, secret, QuicVersion::v1));
        CHECK(hex(keys.aead.nonce(654360564)) == "e0459b3474bdd0e46d417eb0");
        const std::vector<std::uint8_t> sample = unhex("5e5cd55c41f69080575d7999c25a5bfb");
        CHECK(hex(keys.hp.mask(std::span<const std::uint8_t, 16>(sample.data(), 16))) == "aefefe7d03");

        auto packet = assemble(unhex("4200bff4"), {0x01});
        REQUIRE(packet.size() == 21);  // the smallest packet that has a sample
        REQUIRE(ndm::crypto::protect(packet, 1, 3, 654360564, keys.aead, keys.hp));
        CHECK(hex(packet) == "4cfe4189655e5cd55c41f69080575d7999c25a5bfb");

        auto received = packet;
        const auto header = ndm::crypto::remove_header_protection(received, 1, keys.hp);
        REQUIRE(header);
        CHECK(header->first_byte == 0x42);
        CHECK(header->pn_length == 3);
        CHECK(header->truncated_pn == 49140);  // 654360564 mod 2^24
        const auto plain = ndm::crypto::open_payload(received, 4, 654360564, keys.aead);
        REQUIRE(plain);
        CHECK(hex(*plain) == "01");
    }
}

TEST_CASE("crypto packet: flipping any bit of any byte of a protected packet makes it fail") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto server = ndm::crypto::initial_keys(kDcid, true, QuicVersion::v1);
        const auto good = unhex(ndm::test::kRfc9001ClientInitialProtected);
        REQUIRE(unprotect(good, kClientPnOffset, server.read));
        int accepted = 0;
        for (std::size_t i = 0; i < good.size(); ++i) {
            for (const std::uint8_t bit : {std::uint8_t{0x01}, std::uint8_t{0x80}}) {
                auto bad = good;
                bad[i] ^= bit;
                if (unprotect(bad, kClientPnOffset, server.read)) ++accepted;
            }
        }
        CHECK(accepted == 0);
        // The keys still work after all those failures.
        CHECK(unprotect(good, kClientPnOffset, server.read));
        // And the other direction's keys (the wrong ones) fail it too.
        auto client = ndm::crypto::initial_keys(kDcid, false, QuicVersion::v1);
        CHECK_FALSE(unprotect(good, kClientPnOffset, client.read));
    }
}

TEST_CASE("crypto packet: every truncation is refused without reading past the buffer") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto server = ndm::crypto::initial_keys(kDcid, true, QuicVersion::v1);
        const auto good = unhex(ndm::test::kRfc9001ClientInitialProtected);
        for (std::size_t n = 0; n < good.size(); ++n) {
            // An exact-size heap copy: ASan reports any read beyond it.
            auto cut = std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
            const auto header = ndm::crypto::remove_header_protection(cut, kClientPnOffset, server.read.hp);
            CHECK(header.has_value() == (n >= kClientPnOffset + 20));
            if (header) CHECK_FALSE(ndm::crypto::open_payload(cut, header->header_length(kClientPnOffset), 2, server.read.aead));
            CHECK_FALSE(ndm::crypto::open_payload(cut, n, 2, server.read.aead));
            CHECK_FALSE(ndm::crypto::open_payload(cut, n + 1, 2, server.read.aead));
        }
        // A packet number offset at or past the end, or zero, is refused.
        auto packet = good;
        CHECK_FALSE(ndm::crypto::remove_header_protection(packet, 0, server.read.hp));
        CHECK_FALSE(ndm::crypto::remove_header_protection(packet, packet.size(), server.read.hp));
        CHECK_FALSE(ndm::crypto::remove_header_protection(packet, packet.size() + 100, server.read.hp));
        CHECK(packet == good);
    }
}

TEST_CASE("crypto packet: protect refuses packets without a full sample or with a wrong pn length") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto client = ndm::crypto::initial_keys(kDcid, false, QuicVersion::v1);
        // A.5's packet with one byte less: no room for the sample.
        auto small = assemble(unhex("4200bff4"), {});
        const auto before = small;
        CHECK_FALSE(ndm::crypto::protect(small, 1, 3, 654360564, client.write.aead, client.write.hp));
        CHECK(small == before);
        auto packet = assemble(unhex(ndm::test::kRfc9001ClientInitialHeader), ndm::test::rfc9001_client_initial_payload());
        CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 2, 2, client.write.aead, client.write.hp));  // bits say 4
        CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 0, 2, client.write.aead, client.write.hp));
        CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 5, 2, client.write.aead, client.write.hp));
        CHECK_FALSE(ndm::crypto::protect(packet, packet.size(), 4, 2, client.write.aead, client.write.hp));
        CHECK(hex(packet) == hex(assemble(unhex(ndm::test::kRfc9001ClientInitialHeader), ndm::test::rfc9001_client_initial_payload())));
    }
}

TEST_CASE("crypto packet: AES-256-GCM and ChaCha20 round trips of full-size short header packets") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        for (const auto suite : {CipherSuite::aes256_gcm_sha384, CipherSuite::chacha20_poly1305_sha256,
                                 CipherSuite::aes128_gcm_sha256}) {
            CAPTURE(std::string(ndm::crypto::to_string(suite)));
            Secret secret;
            secret.size = static_cast<std::uint8_t>(ndm::crypto::hash_size(suite));
            for (std::size_t i = 0; i < secret.size; ++i) secret.bytes[i] = static_cast<std::uint8_t>(3 * i + 1);
            const auto keys = ndm::crypto::derive_packet_keys(suite, secret, QuicVersion::v1);
            DirectionKeys sender(keys);
            DirectionKeys receiver(keys);
            // Short header: first byte 0x41 (2-byte pn), 8-byte DCID, pn 0x1234.
            std::vector<std::uint8_t> header = {0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, 0x34};
            std::vector<std::uint8_t> payload(1452 - header.size() - kAeadTagSize);
            for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 7);
            auto packet = assemble(header, payload);
            REQUIRE(ndm::crypto::protect(packet, 9, 2, 0x71234, sender.aead, sender.hp));
            CHECK(std::vector<std::uint8_t>(packet.begin() + 11, packet.end() - 16) != payload);
            const auto h = ndm::crypto::remove_header_protection(packet, 9, receiver.hp);
            REQUIRE(h);
            CHECK(h->first_byte == 0x41);
            CHECK(h->truncated_pn == 0x1234);
            const auto plain = ndm::crypto::open_payload(packet, 11, 0x71234, receiver.aead);
            REQUIRE(plain);
            CHECK(std::vector<std::uint8_t>(plain->begin(), plain->end()) == payload);
        }
    }
}

TEST_CASE("crypto packet: a moved-from AEAD refuses to open and the moved-to one works") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto server = ndm::crypto::initial_keys(kDcid, true, QuicVersion::v1);
        ndm::crypto::Aead moved = std::move(server.read.aead);
        auto packet = unhex(ndm::test::kRfc9001ClientInitialProtected);
        REQUIRE(ndm::crypto::remove_header_protection(packet, kClientPnOffset, server.read.hp));
        auto copy = packet;
        CHECK_FALSE(ndm::crypto::open_payload(copy, 22, 2, server.read.aead));  // NOLINT(bugprone-use-after-move)
        CHECK(ndm::crypto::open_payload(packet, 22, 2, moved));
    }
}
