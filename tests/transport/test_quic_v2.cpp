// QUIC version 2 (RFC 9369) beside version 1: Appendix A's keys and packets
// byte for byte on every AEAD backend (the same ClientHello and ServerHello
// as RFC 9001 Appendix A, under v2's salt, labels, type bits and Retry key);
// then connections: a v2 client and a server that speaks both complete the
// handshake and move data in v2 only, and the version_information transport
// parameter (RFC 9368 §4) catches a downgrade.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "connection_pair.hpp"
#include "crypto/hkdf.hpp"
#include "crypto/packet_protection.hpp"
#include "crypto/retry.hpp"
#include "crypto_test_util.hpp"
#include "wire/quic_header.hpp"
#include "wire/transport_params.hpp"

using namespace ndm;
using crypto::CipherSuite;
using crypto::QuicVersion;
using crypto::Secret;
using test::hex;
using test::unhex;

namespace {

const std::vector<std::uint8_t>& kDcid = test::rfc9001_dcid();

// packet = header | payload | room for the tag.
std::vector<std::uint8_t> assemble(const std::vector<std::uint8_t>& header, const std::vector<std::uint8_t>& payload) {
    std::vector<std::uint8_t> packet = header;
    packet.insert(packet.end(), payload.begin(), payload.end());
    packet.resize(packet.size() + crypto::kAeadTagSize);
    return packet;
}

// RFC 9369 A.3: the server's Initial, whole.
constexpr const char* kServerInitialProtected = R"(
   dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698
   baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17
   f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2
   c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8
   4bed8521e2e140)";

// RFC 9369 A.4: the Retry answering A.2's Initial, token "token".
constexpr const char* kRetry = "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6";

}  // namespace

TEST_CASE("quic v2: Initial secrets, key, iv and hp from v2's salt and labels (RFC 9369 A.1)") {
    const Secret initial = crypto::hkdf_extract(CipherSuite::aes128_gcm_sha256,
                                                unhex("0dede3def700a6db819381be6e269dcbf9bd2ed9"), kDcid);
    CHECK(hex(initial.span()) == "2062e8b3cd8d52092614b8071d0aa1fb7c2e3ac193f78b280e72d8f5751f6aba");
    const auto secrets = crypto::initial_secrets(kDcid, QuicVersion::v2);
    CHECK(hex(secrets.client.span()) == "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b");
    CHECK(hex(secrets.server.span()) == "0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1");
    const auto client = crypto::derive_packet_keys(CipherSuite::aes128_gcm_sha256, secrets.client, QuicVersion::v2);
    CHECK(hex(client.key_span()) == "8b1a0bc121284290a29e0971b5cd045d");
    CHECK(hex(client.iv) == "91f73e2351d8fa91660e909f");
    CHECK(hex(client.hp_span()) == "45b95e15235d6f45a6b19cbcb0294ba9");
    const auto server = crypto::derive_packet_keys(CipherSuite::aes128_gcm_sha256, secrets.server, QuicVersion::v2);
    CHECK(hex(server.key_span()) == "82db637861d55e1d011f19ea71d5d2a7");
    CHECK(hex(server.iv) == "dd13c276499c0249d3310652");
    CHECK(hex(server.hp_span()) == "edf6d05c83121201b436e16877593c3a");
}

TEST_CASE("quic v2: the client Initial is protected byte for byte (RFC 9369 A.2)") {
    for (const auto backend : crypto::kBackends) {
        const test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto client = crypto::initial_keys(kDcid, false, QuicVersion::v2);
        auto packet = assemble(unhex("d36b3343cf088394c8f03e5157080000449e00000002"),
                               test::rfc9001_client_initial_payload());
        REQUIRE(packet.size() == 1200);
        REQUIRE(crypto::protect(packet, 18, 4, 2, client.write.aead, client.write.hp));
        // The header, the sample and the tag: the tag covers every byte between.
        CHECK(hex(std::span(packet).first(38)) == "d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485dd04de806071");
        CHECK(hex(std::span(packet).last(16)) == "a18b2faa745b6fe189cf772a9f84cbfc");
        // A server that speaks v2 parses it as an Initial and opens it.
        wire::quic::PacketView v;
        REQUIRE(wire::quic::parse_packet_header(packet, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
        CHECK(v.kind == wire::quic::PacketKind::initial);
        CHECK(v.version == wire::quic::kVersion2);
        auto server = crypto::initial_keys(kDcid, true, QuicVersion::v2);
        const auto header = crypto::remove_header_protection(packet, 18, server.read.hp);
        REQUIRE(header);
        CHECK(header->first_byte == 0xd3);
        const auto plain = crypto::open_payload(packet, header->header_length(18), header->truncated_pn, server.read.aead);
        REQUIRE(plain);
        CHECK(hex(*plain) == hex(test::rfc9001_client_initial_payload()));
        // v1's keys cannot open it.
        auto v1 = crypto::initial_keys(kDcid, true, QuicVersion::v1);
        auto again = packet;
        const auto h1 = crypto::remove_header_protection(again, 18, v1.read.hp);
        CHECK_FALSE((h1 && crypto::open_payload(again, h1->header_length(18), h1->truncated_pn, v1.read.aead)));
    }
}

TEST_CASE("quic v2: the server Initial both ways (RFC 9369 A.3)") {
    for (const auto backend : crypto::kBackends) {
        const test::BackendScope scope(backend);
        CAPTURE(scope.name);
        auto server = crypto::initial_keys(kDcid, true, QuicVersion::v2);
        auto packet = assemble(unhex("d16b3343cf0008f067a5502a4262b50040750001"), test::rfc9001_server_initial_payload());
        REQUIRE(crypto::protect(packet, 18, 2, 1, server.write.aead, server.write.hp));
        CHECK(hex(packet) == hex(unhex(kServerInitialProtected)));
        wire::quic::PacketView v;
        REQUIRE(wire::quic::parse_packet_header(packet, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
        CHECK(v.kind == wire::quic::PacketKind::initial);  // type bits 01 (RFC 9369 §3.2)
    }
}

TEST_CASE("quic v2: the Retry is written and verified byte for byte (RFC 9369 A.4)") {
    wire::ConnectionId scid = wire::ConnectionId::from(unhex("f067a5502a4262b5"));
    std::vector<std::uint8_t> out(128);
    out.resize(wire::quic::write_retry(out, QuicVersion::v2, wire::ConnectionId{}, scid, unhex("746f6b656e"), kDcid,
                                       0x0f));
    CHECK(hex(out) == kRetry);
    wire::quic::PacketView v;
    const auto retry = unhex(kRetry);
    REQUIRE(wire::quic::parse_packet_header(retry, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
    CHECK(v.kind == wire::quic::PacketKind::retry);  // type bits 00 in v2
    CHECK(wire::quic::verify_retry(v, kDcid) == wire::quic::HeaderError::none);
    CHECK_FALSE(crypto::verify_retry_integrity(QuicVersion::v1, kDcid, retry));  // v1's key does not verify it
}

TEST_CASE("quic v2: ChaCha20-Poly1305 short header and the quicv2 ku label (RFC 9369 A.5)") {
    const Secret secret = test::secret_of(unhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"));
    const auto keys = crypto::derive_packet_keys(CipherSuite::chacha20_poly1305_sha256, secret, QuicVersion::v2);
    CHECK(hex(keys.key_span()) == "3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2");
    CHECK(hex(keys.iv) == "a6b5bc6ab7dafce30ffff5dd");
    CHECK(hex(keys.hp_span()) == "d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2");
    CHECK(hex(crypto::next_secret(CipherSuite::chacha20_poly1305_sha256, secret, QuicVersion::v2).span()) ==
          "c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88");
    for (const auto backend : crypto::kBackends) {
        const test::BackendScope scope(backend);
        CAPTURE(scope.name);
        crypto::DirectionKeys dk(keys);
        CHECK(hex(dk.aead.nonce(654360564)) == "a6b5bc6ab7dafce328ff4a29");
        auto packet = assemble(unhex("4200bff4"), {0x01});
        REQUIRE(crypto::protect(packet, 1, 3, 654360564, dk.aead, dk.hp));
        CHECK(hex(packet) == "5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba");
    }
}

TEST_CASE("quic v2: long header type bits map both ways for both versions (RFC 9369 §3.2)") {
    using wire::quic::PacketKind;
    for (const auto kind : {PacketKind::initial, PacketKind::zero_rtt, PacketKind::handshake, PacketKind::retry}) {
        for (const auto v : {QuicVersion::v1, QuicVersion::v2}) {
            const auto first = static_cast<std::uint8_t>(0xc0 | wire::quic::long_type_bits(v, kind) << 4);
            CHECK(wire::quic::long_packet_kind(v, first) == kind);
        }
    }
    CHECK(wire::quic::long_type_bits(QuicVersion::v2, PacketKind::initial) == 1);
    CHECK(wire::quic::long_type_bits(QuicVersion::v2, PacketKind::zero_rtt) == 2);
    CHECK(wire::quic::long_type_bits(QuicVersion::v2, PacketKind::handshake) == 3);
    CHECK(wire::quic::long_type_bits(QuicVersion::v2, PacketKind::retry) == 0);
}

TEST_CASE("quic v2: a v2 client and a two-version server handshake and move data in v2 only") {
    test::ConnectionPair p;
    p.client_cfg.version = kQuicVersion2;
    std::size_t long_headers = 0;
    const auto only_v2 = [&](std::vector<std::uint8_t>& d) {
        wire::quic::DatagramPackets packets(d, wire::kShortCidLength);
        for (wire::quic::PacketView v; packets.next(v);) {
            if (v.kind == wire::quic::PacketKind::one_rtt) continue;
            ++long_headers;
            CHECK(v.version == kQuicVersion2);
        }
        return true;
    };
    p.to_server = only_v2;
    p.to_client = only_v2;
    p.start();
    REQUIRE(p.handshake());
    CHECK(long_headers >= 4);  // Initials and Handshakes both ways
    CHECK(p.client->handshake_summary().version == kQuicVersion2);
    CHECK(p.server->handshake_summary().version == kQuicVersion2);
    // RFC 9368 §3: each side's Version Information names v2; the server lists both it speaks.
    CHECK(p.client->handshake_summary().peer.chosen_version == kQuicVersion2);
    CHECK(p.client->handshake_summary().peer.available_versions ==
          std::vector<std::uint32_t>{kQuicVersion1, kQuicVersion2});
    CHECK(p.server->handshake_summary().peer.available_versions == std::vector<std::uint32_t>{kQuicVersion2});

    std::vector<std::uint8_t> data(300000);
    std::mt19937 rng(9);
    for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    const auto id = *p.client->open_stream();
    std::size_t written = 0;
    std::vector<std::uint8_t> got, buf(65536);
    REQUIRE(p.run_until([&] {
        if (written < data.size()) written += p.client->write(id, std::span(data).subspan(written), true);
        while (p.server->poll_event()) {}
        while (const std::size_t n = p.server->read(id, buf)) got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return p.server->stream_finished(id);
    }));
    CHECK(got == data);
}

TEST_CASE("quic v2: the default client speaks v1 to the same server") {
    test::ConnectionPair p;
    p.start();
    REQUIRE(p.handshake());
    CHECK(p.server->handshake_summary().version == kQuicVersion1);
    CHECK(p.client->handshake_summary().peer.chosen_version == kQuicVersion1);
}

TEST_CASE("quic v2: a Chosen Version other than the version in use is VERSION_NEGOTIATION_ERROR (RFC 9368 §4)") {
    SUBCASE("the client's, at the server") {
        test::ConnectionPair p;
        p.client_cfg.version = kQuicVersion2;
        p.client_params = [](wire::TransportParams& tp) {  // a downgrade's forged first flight would name v1
            tp.version_information = wire::VersionInformation{kQuicVersion1, {kQuicVersion1}};
        };
        p.start();
        p.handshake();
        REQUIRE(p.server);
        CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::version_negotiation_error));
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::version_negotiation_error));
    }
    SUBCASE("the server's, at the client") {
        test::ConnectionPair p;
        p.server_params = [](wire::TransportParams& tp) {
            tp.version_information = wire::VersionInformation{kQuicVersion2, {kQuicVersion1, kQuicVersion2}};
        };
        p.start();
        p.handshake();
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::version_negotiation_error));
    }
}

TEST_CASE("quic v2: Version Information is parsed as RFC 9368 §4 asks") {
    using wire::Role;
    const auto decode = [](const std::vector<std::uint8_t>& value, Role sender) {
        std::vector<std::uint8_t> in = {0x11, static_cast<std::uint8_t>(value.size())};
        in.insert(in.end(), value.begin(), value.end());
        wire::TransportParams tp;
        wire::Error err;
        const bool ok = wire::decode_transport_params(in, sender, tp, err);
        return ok ? tp.version_information : std::nullopt;
    };
    const auto v1 = unhex("00000001"), v2 = unhex("6b3343cf");
    auto cat = [](std::initializer_list<std::vector<std::uint8_t>> parts) {
        std::vector<std::uint8_t> out;
        for (const auto& x : parts) out.insert(out.end(), x.begin(), x.end());
        return out;
    };
    const auto ok = decode(cat({v2, v1, v2}), Role::client);
    REQUIRE(ok);
    CHECK(ok->chosen == kQuicVersion2);
    CHECK(ok->available == std::vector<std::uint32_t>{kQuicVersion1, kQuicVersion2});
    CHECK_FALSE(decode(cat({v2, v1}), Role::client));       // a client's chosen version not among its available
    CHECK(decode(cat({v2, v1}), Role::server));             // a server's need not be (§3)
    CHECK(decode(v1, Role::server));                        // nor list any
    CHECK_FALSE(decode(unhex("000000"), Role::server));     // not whole versions
    CHECK_FALSE(decode(unhex("00000001000000"), Role::server));
    CHECK_FALSE(decode(cat({unhex("00000000")}), Role::server));  // version 0
    CHECK_FALSE(decode(cat({v1, unhex("00000000")}), Role::server));
    CHECK_FALSE(decode({}, Role::server));
}

TEST_CASE("quic v2: a client refuses a version ndm does not speak") {
    ConnectionConfig cfg;
    cfg.version = 0x709a50c4;  // v2's draft codepoint
    CHECK_THROWS_AS((void)Connection::connect(cfg, Instant{}), std::invalid_argument);
}
