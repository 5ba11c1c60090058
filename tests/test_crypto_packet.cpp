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

using ndm::crypto::CipherSuite;
using ndm::crypto::DirectionKeys;
using ndm::crypto::kAeadTagSize;
using ndm::crypto::Secret;
using ndm::test::hex;
using ndm::test::secret_of;
using ndm::test::unhex;

namespace {

const std::vector<std::uint8_t>& kDcid = ndm::test::rfc9001_dcid();

// RFC 9001 A.2: the CRYPTO frame of the client's Initial, padded to 1162 bytes.
std::vector<std::uint8_t> client_initial_payload() {
    auto p = unhex(R"(
   060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
   04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
   616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
   04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
   baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
   0d0010000e0403050306030203080408 050806002d00020101001c0002400100
   3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
   75300901100f088394c8f03e51570806 048000ffff)");
    p.resize(1162, 0x00);  // PADDING frames
    return p;
}

const char* const kClientInitialHeader = "c300000001088394c8f03e5157080000449e00000002";

const char* const kClientInitialProtected = R"(
   c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
   d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
   1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
   8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
   30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
   457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
   4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
   4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
   485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
   059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
   7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
   9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
   be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
   68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
   c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
   f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
   291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
   25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
   14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
   ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
   e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
   c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
   203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
   cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
   fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
   a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
   90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
   162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
   40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
   6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
   8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
   be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
   54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
   760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
   f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
   056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
   7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
   e221af44860018ab0856972e194cd934)";

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
    auto client = ndm::crypto::initial_keys(kDcid, false);
    auto packet = assemble(unhex(kClientInitialHeader), client_initial_payload());
    REQUIRE(packet.size() == 1200);
    REQUIRE(ndm::crypto::protect(packet, kClientPnOffset, 4, 2, client.write.aead, client.write.hp));
    CHECK(hex(packet) == hex(unhex(kClientInitialProtected)));
    // The intermediate values A.2 shows: the sample and the mask.
    CHECK(hex(std::span(packet).subspan(22, 16)) == "d1b1c98dd7689fb8ec11d242b123dc9b");
    const std::vector<std::uint8_t> sample = unhex("d1b1c98dd7689fb8ec11d242b123dc9b");
    CHECK(hex(client.write.hp.mask(std::span<const std::uint8_t, 16>(sample.data(), 16))) == "437b9aec36");
}

TEST_CASE("crypto packet: the server removes protection from the client Initial (RFC 9001 A.2)") {
    auto server = ndm::crypto::initial_keys(kDcid, true);
    auto packet = unhex(kClientInitialProtected);
    const auto header = ndm::crypto::remove_header_protection(packet, kClientPnOffset, server.read.hp);
    REQUIRE(header);
    CHECK(header->first_byte == 0xc3);
    CHECK(header->pn_length == 4);
    CHECK(header->truncated_pn == 2);
    CHECK(hex(std::span(packet).first(22)) == kClientInitialHeader);
    const auto plain = ndm::crypto::open_payload(packet, 22, 2, server.read.aead);
    REQUIRE(plain);
    CHECK(hex(*plain) == hex(client_initial_payload()));
}

TEST_CASE("crypto packet: the server Initial both ways (RFC 9001 A.3)") {
    const auto payload = unhex(R"(
   02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
   88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
   0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
   020304)");
    const auto expected = unhex(R"(
   cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
   5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
   dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
   022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
   2158407dd074ee)");
    // First byte, version, DCID length 0, SCID length and SCID (9), token
    // length, 2-byte Length: the packet number is at 18, 2 bytes.
    auto server = ndm::crypto::initial_keys(kDcid, true);
    auto packet = assemble(unhex("c1000000010008f067a5502a4262b50040750001"), payload);
    REQUIRE(ndm::crypto::protect(packet, 18, 2, 1, server.write.aead, server.write.hp));
    CHECK(hex(packet) == hex(expected));

    auto client = ndm::crypto::initial_keys(kDcid, false);
    const auto plain = unprotect(expected, 18, client.read);
    REQUIRE(plain);
    CHECK(hex(*plain) == hex(payload));
}

TEST_CASE("crypto packet: the ChaCha20-Poly1305 short header packet both ways (RFC 9001 A.5)") {
    const Secret secret = secret_of(unhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"));
    DirectionKeys keys(ndm::crypto::derive_packet_keys(CipherSuite::chacha20_poly1305_sha256, secret));
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

TEST_CASE("crypto packet: flipping any bit of any byte of a protected packet makes it fail") {
    auto server = ndm::crypto::initial_keys(kDcid, true);
    const auto good = unhex(kClientInitialProtected);
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
    auto client = ndm::crypto::initial_keys(kDcid, false);
    CHECK_FALSE(unprotect(good, kClientPnOffset, client.read));
}

TEST_CASE("crypto packet: every truncation is refused without reading past the buffer") {
    auto server = ndm::crypto::initial_keys(kDcid, true);
    const auto good = unhex(kClientInitialProtected);
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

TEST_CASE("crypto packet: protect refuses packets without a full sample or with a wrong pn length") {
    auto client = ndm::crypto::initial_keys(kDcid, false);
    // A.5's packet with one byte less: no room for the sample.
    auto small = assemble(unhex("4200bff4"), {});
    const auto before = small;
    CHECK_FALSE(ndm::crypto::protect(small, 1, 3, 654360564, client.write.aead, client.write.hp));
    CHECK(small == before);
    auto packet = assemble(unhex(kClientInitialHeader), client_initial_payload());
    CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 2, 2, client.write.aead, client.write.hp));  // bits say 4
    CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 0, 2, client.write.aead, client.write.hp));
    CHECK_FALSE(ndm::crypto::protect(packet, kClientPnOffset, 5, 2, client.write.aead, client.write.hp));
    CHECK_FALSE(ndm::crypto::protect(packet, packet.size(), 4, 2, client.write.aead, client.write.hp));
    CHECK(hex(packet) == hex(assemble(unhex(kClientInitialHeader), client_initial_payload())));
}

TEST_CASE("crypto packet: AES-256-GCM and ChaCha20 round trips of full-size short header packets") {
    for (const auto suite : {CipherSuite::aes256_gcm_sha384, CipherSuite::chacha20_poly1305_sha256,
                             CipherSuite::aes128_gcm_sha256}) {
        CAPTURE(std::string(ndm::crypto::to_string(suite)));
        Secret secret;
        secret.size = static_cast<std::uint8_t>(ndm::crypto::hash_size(suite));
        for (std::size_t i = 0; i < secret.size; ++i) secret.bytes[i] = static_cast<std::uint8_t>(3 * i + 1);
        const auto keys = ndm::crypto::derive_packet_keys(suite, secret);
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

TEST_CASE("crypto packet: a moved-from AEAD refuses to open and the moved-to one works") {
    auto server = ndm::crypto::initial_keys(kDcid, true);
    ndm::crypto::Aead moved = std::move(server.read.aead);
    auto packet = unhex(kClientInitialProtected);
    REQUIRE(ndm::crypto::remove_header_protection(packet, kClientPnOffset, server.read.hp));
    auto copy = packet;
    CHECK_FALSE(ndm::crypto::open_payload(copy, 22, 2, server.read.aead));  // NOLINT(bugprone-use-after-move)
    CHECK(ndm::crypto::open_payload(packet, 22, 2, moved));
}
