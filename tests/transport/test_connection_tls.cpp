// The connection's TLS 1.3 handshake (RFC 9001 §4): CRYPTO data per packet
// number space, the certificate and ALPN checks ending the handshake with
// CRYPTO_ERROR and the alert's name on both sides, the key log, and the
// handshake surviving lost CRYPTO data.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "connection_pair.hpp"
#include "crypto/backend_choice.hpp"
#include "quic_test_util.hpp"
#include "tls/alert.hpp"
#include "tls_test_util.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using ndm::test::ConnectionPair;

namespace {


// Runs the handshake to its end (established or closed on both sides).
void settle(ConnectionPair& p) {
    p.start();
    p.run_until([&] {
        const bool client_done = p.client->is_established() || p.client->is_closed();
        return client_done && p.server && (p.server->is_established() || p.server->is_closed());
    });
}

// Whether the datagram holds a packet of this kind (long headers are readable
// without keys; a 1-RTT packet is the last of a datagram).
bool holds(const std::vector<std::uint8_t>& d, wire::quic::PacketKind kind) {
    wire::quic::DatagramPackets packets(d, wire::kShortCidLength);
    for (wire::quic::PacketView v; packets.next(v);)
        if (v.kind == kind) return true;
    return false;
}

}  // namespace

TEST_CASE("tls: no common ALPN ends the handshake with no_application_protocol on both sides") {
    ConnectionPair p;
    p.client_cfg.tls.alpn = {"ndm"};
    p.server_cfg.tls.alpn = {"h3"};
    settle(p);
    REQUIRE(p.server);
    CHECK_FALSE(p.client->is_established());
    CHECK(p.server->close_info().code == tls::crypto_error(tls::Alert::no_application_protocol));
    CHECK_FALSE(p.server->close_info().by_peer);
    CHECK_MESSAGE(p.server->close_info().reason.find("no_application_protocol") != std::string::npos,
                  p.server->close_info().reason);
    CHECK(p.client->close_info().code == tls::crypto_error(tls::Alert::no_application_protocol));
    CHECK(p.client->close_info().by_peer);
    CHECK_FALSE(p.client->close_info().reason.empty());
    CHECK(close_code_name(p.client->close_info().code) == "CRYPTO_ERROR");
}

TEST_CASE("tls: a certificate the client does not trust ends the handshake with the alert and why") {
    SUBCASE("self-signed, verified against the system store") {
        ConnectionPair p;
        p.client_cfg.tls.trust = tls::ClientCredentials::system();
        p.client_cfg.tls.server_name = "ndm-simulator";
        settle(p);
        CHECK(p.client->close_info().code == tls::crypto_error(tls::Alert::unknown_ca));
        CHECK_FALSE(p.client->close_info().by_peer);
        CHECK_MESSAGE(p.client->close_info().reason.find("TLS alert unknown_ca: certificate not trusted") !=
                          std::string::npos,
                      p.client->close_info().reason);
        REQUIRE(p.server);
        CHECK(p.server->close_info().code == tls::crypto_error(tls::Alert::unknown_ca));
        CHECK(p.server->close_info().by_peer);
        CHECK_FALSE(p.server->is_established());
    }
    SUBCASE("a pin of another certificate") {
        ConnectionPair p;
        p.client_cfg.tls.trust = tls::ClientCredentials::pinned(test::localhost_credentials().fingerprint());
        settle(p);
        CHECK(p.client->close_info().code == tls::crypto_error(tls::Alert::bad_certificate));
        CHECK_MESSAGE(p.client->close_info().reason.find("pinned fingerprint mismatch") != std::string::npos,
                      p.client->close_info().reason);
    }
    SUBCASE("the right certificate, but for another name") {
        ConnectionPair p;
        const auto& creds = test::localhost_credentials();
        test::TempDir dir("conn_ca");
        p.server_cfg.tls.certificate = creds;
        p.client_cfg.tls.trust = tls::ClientCredentials::ca_file(dir.file("ca.pem", creds.certificate_pem()));
        p.client_cfg.tls.server_name = "example.org";
        settle(p);
        CHECK(p.client->close_info().code == tls::crypto_error(tls::Alert::bad_certificate));
        CHECK_MESSAGE(p.client->close_info().reason.find("certificate for localhost, 127.0.0.1, expected example.org") !=
                          std::string::npos,
                      p.client->close_info().reason);
    }
}

TEST_CASE("tls: a server without a certificate and a client without a name to verify are configuration errors") {
    ConnectionPair p;
    p.start();
    std::vector<std::uint8_t> buf(kMaxDatagramSize);
    const std::size_t n = p.client->poll_datagram(buf, p.now);
    REQUIRE(n > 0);
    ConnectionConfig bare;  // no certificate
    CHECK_THROWS_WITH_AS(Connection::accept(bare, std::span(buf).first(n), p.now),
                         doctest::Contains("a server needs a certificate"), std::invalid_argument);
    ConnectionConfig client;  // the system store, and no name to check
    CHECK_THROWS_AS(Connection::connect(client, Instant{}), std::invalid_argument);
}

TEST_CASE("tls: the key log gets the handshake and 1-RTT secrets of both sides") {
    ConnectionPair p;
    std::vector<std::string> lines;
    p.client_cfg.tls.keylog = [&](std::string_view l) { lines.emplace_back(l); };
    REQUIRE(p.handshake());
    const auto has = [&](std::string_view label) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(label, 0) == 0; });
    };
    CHECK(has("CLIENT_HANDSHAKE_TRAFFIC_SECRET "));
    CHECK(has("SERVER_HANDSHAKE_TRAFFIC_SECRET "));
    CHECK(has("CLIENT_TRAFFIC_SECRET_0 "));
    CHECK(has("SERVER_TRAFFIC_SECRET_0 "));
}

TEST_CASE("tls: lost CRYPTO data is resent and the handshake completes") {
    SUBCASE("the server's first Handshake flight") {
        ConnectionPair p;
        int dropped = 0;
        p.to_client = [&](std::vector<std::uint8_t>& d) {
            if (holds(d, wire::quic::PacketKind::handshake) && dropped < 1) return ++dropped, false;
            return true;
        };
        REQUIRE(p.handshake());
        CHECK(dropped == 1);
        CHECK(p.server->stats(p.now).packets_lost + p.server->stats(p.now).pto_count > 0);
    }
    SUBCASE("the client's Finished") {
        ConnectionPair p;
        int dropped = 0;
        p.to_server = [&](std::vector<std::uint8_t>& d) {
            if (holds(d, wire::quic::PacketKind::handshake) && dropped < 2) return ++dropped, false;
            return true;
        };
        REQUIRE(p.handshake());
        CHECK(dropped == 2);
    }
    SUBCASE("the ClientHello") {
        ConnectionPair p;
        int dropped = 0;
        p.to_server = [&](std::vector<std::uint8_t>&) { return dropped++ >= 1; };
        REQUIRE(p.handshake());
        CHECK(p.client->stats(p.now).pto_count >= 1);
    }
}

TEST_CASE("tls: a Handshake packet before this side has Handshake keys is dropped, not read") {
    // A server's Handshake packet (it has the keys once it read a
    // ClientHello) reaches a client of another connection attempt that
    // has none: it cannot be opened, let alone read.
    ConnectionPair p, q;
    p.start();
    q.start();
    std::vector<std::uint8_t> buf(kMaxDatagramSize);
    const std::size_t n = p.client->poll_datagram(buf, p.now);
    REQUIRE(n > 0);
    auto server = Connection::accept(p.server_cfg, std::span(buf).first(n), p.now);
    REQUIRE(server);
    Connection::Impl::of(*server).peer_cid = wire::ConnectionId::from(q.client->local_cid());
    wire::ConnectionCloseFrame c;
    c.error_code = 0xa;
    q.client->on_datagram(test::seal(*server, transport::PacketSpace::handshake, 0, test::encode({c})), q.now);
    CHECK(q.client->state() == ConnectionState::handshaking);
    CHECK(q.client->stats(q.now).packets_dropped == 1);
}

TEST_CASE("the handshake summary names the ALPN, the cipher suite TlsOptions allow, and the peer's parameters") {
    ConnectionPair p;
    p.client_cfg.tls.cipher_suites = {"TLS_CHACHA20_POLY1305_SHA256", "aes128-gcm"};
    p.server_cfg.tls.cipher_suites = {"AES256-GCM", "chacha20"};  // only ChaCha20 is in both
    p.client_cfg.initial_max_streams = 7;
    p.client_cfg.initial_max_streams_uni = 2;  // the server may open two
    settle(p);
    REQUIRE(p.client->is_established());
    REQUIRE(p.server->is_established());
    const HandshakeSummary c = p.client->handshake_summary(), s = p.server->handshake_summary();
    CHECK(c.alpn == "ndm");
    CHECK(s.alpn == "ndm");
    CHECK(c.cipher_suite == "TLS_CHACHA20_POLY1305_SHA256");
    CHECK(s.cipher_suite == c.cipher_suite);
    // Which library protects the packets, as the process chose it for the suite (docs/packet-protection.md).
    const auto choice = ndm::crypto::backend_for(ndm::crypto::CipherSuite::chacha20_poly1305_sha256);
    CHECK(c.packet_protection == ndm::crypto::describe(choice));
    CHECK(s.packet_protection.starts_with(std::string(ndm::crypto::to_string(choice.backend)) + " ("));
    CHECK(s.peer.initial_max_streams_bidi == 7);
    CHECK(s.peer.initial_max_streams_uni == 2);
    CHECK(s.peer.initial_max_stream_data_uni == p.client_cfg.initial_max_stream_data);
    CHECK(c.peer.initial_max_streams_uni == 0);
    CHECK(c.peer.initial_max_stream_data_uni == 0);  // not sent where no such stream is allowed
    CHECK(std::ranges::equal(c.peer.initial_source_connection_id, p.client->peer_cid()));
    CHECK(std::ranges::equal(s.peer.initial_source_connection_id, p.server->peer_cid()));
    CHECK_FALSE(c.peer.original_destination_connection_id.empty());
    CHECK(s.peer.original_destination_connection_id.empty());  // a client sends none
    // The server's unidirectional streams reach the client, which may not write to them.
    const auto uni = p.server->open_uni_stream();
    REQUIRE(uni);
    CHECK_FALSE(p.client->open_uni_stream());  // the server allows none
    static const std::uint8_t hello[] = {'h', 'i'};
    REQUIRE(p.server->write(*uni, hello, true) == 2);
    std::uint8_t buf[4];
    std::size_t got = 0;
    REQUIRE(p.run_until([&] {
        got += p.client->read(*uni, buf);
        return p.client->stream_finished(*uni);
    }));
    CHECK(got == 2);
    CHECK_THROWS_AS(p.client->write(*uni, hello), std::logic_error);
}

TEST_CASE("an unknown cipher suite name is refused when the connection is made") {
    ConnectionPair p;
    p.client_cfg.tls.cipher_suites = {"rot13"};
    CHECK_THROWS_WITH_AS(p.start(), doctest::Contains("unknown cipher suite 'rot13'"), std::invalid_argument);
}
