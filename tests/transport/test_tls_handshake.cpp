// The TLS 1.3 handshake for QUIC (src/tls/tls_session.cpp, RFC 9001 §4) run
// between two in-memory sessions: secrets, suites, ALPN, transport
// parameters, and the failures the connection will turn into CRYPTO_ERROR.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "tls/alert.hpp"
#include "util/rng.hpp"
#include "tls_test_util.hpp"

using ndm::crypto::CipherSuite;
using ndm::crypto::EncryptionLevel;
using ndm::test::client_config;
using ndm::test::describe;
using ndm::test::pump;
using ndm::test::server_config;
using ndm::tls::Direction;
using ndm::tls::SecretEvent;
using ndm::tls::TlsSession;

namespace {

using SecretKey = std::tuple<EncryptionLevel, Direction>;

std::map<SecretKey, SecretEvent> by_level(const std::vector<SecretEvent>& events) {
    std::map<SecretKey, SecretEvent> m;
    for (const auto& e : events) m.emplace(SecretKey{e.level, e.direction}, e);
    return m;
}

std::vector<std::uint8_t> bytes(const ndm::crypto::Secret& s) { return {s.span().begin(), s.span().end()}; }

Direction other(Direction d) { return d == Direction::read ? Direction::write : Direction::read; }

}  // namespace

TEST_CASE("tls: client and server complete the handshake and agree on every secret") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    pump(client, server);
    INFO("client: ", describe(client), ", server: ", describe(server));
    REQUIRE_FALSE(client.error());
    REQUIRE_FALSE(server.error());
    CHECK(client.handshake_complete());
    CHECK(server.handshake_complete());
    const auto c = client.take_secrets();
    const auto s = by_level(server.take_secrets());
    REQUIRE(c.size() == 4);  // handshake and 1-RTT, each read and write
    CHECK(c[0].level == EncryptionLevel::handshake);
    for (const auto& e : c) {
        const auto it = s.find({e.level, other(e.direction)});
        REQUIRE(it != s.end());
        CHECK(bytes(e.secret) == bytes(it->second.secret));
        CHECK(e.suite == it->second.suite);
        CHECK(e.secret.size == 32);
    }
    CHECK(client.suite() == server.suite());
}

TEST_CASE("tls: each forced cipher suite is negotiated with secrets of its hash size") {
    for (const auto& [suite, size] : {std::pair{CipherSuite::aes128_gcm_sha256, 32}, std::pair{CipherSuite::aes256_gcm_sha384, 48},
                                     std::pair{CipherSuite::chacha20_poly1305_sha256, 32}}) {
        CAPTURE(ndm::crypto::to_string(suite));
        auto cc = client_config();
        cc.cipher_suites = {suite};
        TlsSession client(cc);
        TlsSession server(server_config());
        pump(client, server);
        INFO("client: ", describe(client), ", server: ", describe(server));
        REQUIRE(client.handshake_complete());
        REQUIRE(server.handshake_complete());
        CHECK(client.suite() == suite);
        CHECK(server.suite() == suite);
        const auto secrets = server.take_secrets();
        REQUIRE(secrets.size() == 4);
        for (const auto& e : secrets) {
            CHECK(e.suite == suite);
            CHECK(e.secret.size == size);
        }
    }
}

TEST_CASE("tls: a server that allows one suite only refuses a client that offers another") {
    auto cc = client_config();
    cc.cipher_suites = {CipherSuite::chacha20_poly1305_sha256};
    auto sc = server_config();
    sc.cipher_suites = {CipherSuite::aes256_gcm_sha384};
    TlsSession client(cc);
    TlsSession server(sc);
    pump(client, server);
    REQUIRE(server.error());
    CHECK(server.error()->code == ndm::tls::crypto_error(ndm::tls::Alert::handshake_failure));
    CHECK(server.error()->alert_name == "handshake_failure");
    CHECK_FALSE(client.handshake_complete());
}

TEST_CASE("tls: ALPN h3 and ndm are negotiated in the client's order") {
    for (const std::string protocol : {"h3", "ndm"}) {
        auto cc = client_config();
        cc.alpn = {protocol, "other"};
        TlsSession client(cc);
        TlsSession server(server_config());
        pump(client, server);
        INFO("client: ", describe(client), ", server: ", describe(server));
        REQUIRE(client.handshake_complete());
        CHECK(client.alpn() == protocol);
        CHECK(server.alpn() == protocol);
    }
}

TEST_CASE("tls: each side receives the other's transport parameters byte-exact") {
    auto cc = client_config();
    auto sc = server_config();
    for (int i = 0; i < 300; ++i) cc.transport_parameters.push_back(static_cast<std::uint8_t>(i * 7));
    TlsSession client(cc);
    TlsSession server(sc);
    CHECK_FALSE(server.peer_transport_parameters());
    pump(client, server);
    REQUIRE(client.handshake_complete());
    REQUIRE(server.peer_transport_parameters());
    REQUIRE(client.peer_transport_parameters());
    CHECK(*server.peer_transport_parameters() == cc.transport_parameters);
    CHECK(*client.peer_transport_parameters() == sc.transport_parameters);
}

TEST_CASE("tls: no common ALPN protocol is CRYPTO_ERROR 0x178 on the server and a clear error on the client") {
    auto cc = client_config();
    cc.alpn = {"hq-interop", "smtp"};
    TlsSession client(cc);
    TlsSession server(server_config());
    pump(client, server);
    REQUIRE(server.error());
    CHECK(server.error()->code == 0x178);
    CHECK(server.error()->alert_name == "no_application_protocol");
    CHECK(server.error()->message == "no common ALPN protocol (accepted h3, ndm)");
    CHECK_FALSE(server.has_output());
    // The client learns it from the server's CONNECTION_CLOSE.
    REQUIRE_FALSE(client.error());
    client.on_peer_error(server.error()->code);
    REQUIRE(client.error());
    CHECK(client.error()->from_peer);
    CHECK(client.error()->code == 0x178);
    CHECK(client.error()->message == "server accepts none of the ALPN protocols offered (hq-interop, smtp)");
}

TEST_CASE("tls: a configuration without ALPN, transport parameters or credentials is refused") {
    auto no_alpn = client_config();
    no_alpn.alpn.clear();
    CHECK_THROWS_AS(TlsSession{no_alpn}, ndm::tls::TlsSetupError);
    auto no_params = server_config();
    no_params.transport_parameters.clear();
    CHECK_THROWS_AS(TlsSession{no_params}, ndm::tls::TlsSetupError);
    auto no_cert = server_config();
    no_cert.server_credentials.reset();
    CHECK_THROWS_AS(TlsSession{no_cert}, ndm::tls::TlsSetupError);
    auto no_verify = client_config();
    no_verify.client_credentials.reset();
    CHECK_THROWS_AS(TlsSession{no_verify}, ndm::tls::TlsSetupError);
    auto small = client_config();
    small.max_crypto_buffer = 4095;
    CHECK_THROWS_AS(TlsSession{small}, ndm::tls::TlsSetupError);
}

namespace {

// Removes extension `type` from a handshake message whose extensions block
// (uint16 length, then the extensions) starts at `at`, fixing both lengths.
std::vector<std::uint8_t> strip_extension(std::vector<std::uint8_t> msg, std::uint16_t type, std::size_t at) {
    const std::size_t end = at + 2 + (std::size_t{msg[at]} << 8 | msg[at + 1]);
    REQUIRE(end == msg.size());
    for (std::size_t p = at + 2; p + 4 <= end;) {
        const std::size_t len = 4 + (std::size_t{msg[p + 2]} << 8 | msg[p + 3]);
        if ((msg[p] << 8 | msg[p + 1]) == type) {
            msg.erase(msg.begin() + static_cast<std::ptrdiff_t>(p), msg.begin() + static_cast<std::ptrdiff_t>(p + len));
            const std::size_t ext = end - len - at - 2, body = msg.size() - 4;
            msg[at] = static_cast<std::uint8_t>(ext >> 8);
            msg[at + 1] = static_cast<std::uint8_t>(ext);
            msg[1] = static_cast<std::uint8_t>(body >> 16);
            msg[2] = static_cast<std::uint8_t>(body >> 8);
            msg[3] = static_cast<std::uint8_t>(body);
            return msg;
        }
        p += len;
    }
    FAIL("extension not found");
    return msg;
}

// RFC 8446 §4.1.2: the extensions of a ClientHello follow the legacy
// version, random, session id, cipher suites and compression methods.
std::size_t client_hello_extensions(const std::vector<std::uint8_t>& ch) {
    std::size_t p = 4 + 2 + 32;
    p += 1 + ch.at(p);
    p += 2 + (std::size_t{ch.at(p)} << 8 | ch.at(p + 1));
    p += 1 + ch.at(p);
    return p;
}

std::size_t message_size(const std::vector<std::uint8_t>& m, std::size_t at = 0) {
    return 4 + (std::size_t{m[at + 1]} << 16 | std::size_t{m[at + 2]} << 8 | m[at + 3]);
}

constexpr std::uint16_t kTransportParameters = 0x39;

}  // namespace

TEST_CASE("tls: a ClientHello without quic_transport_parameters is refused with missing_extension") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    client.start();
    const auto ch = client.take_output(EncryptionLevel::initial);
    REQUIRE(ch.at(0) == 1);
    server.provide(EncryptionLevel::initial, strip_extension(ch, kTransportParameters, client_hello_extensions(ch)));
    REQUIRE(server.error());
    CHECK(server.error()->code == 0x16d);
    CHECK(server.error()->alert_name == "missing_extension");
    CHECK(server.error()->message == "client sent no quic_transport_parameters extension");
    CHECK_FALSE(server.has_output());
}

TEST_CASE("tls: EncryptedExtensions without quic_transport_parameters is refused with missing_extension") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    client.start();
    server.provide(EncryptionLevel::initial, client.take_output(EncryptionLevel::initial));
    client.provide(EncryptionLevel::initial, server.take_output(EncryptionLevel::initial));
    auto flight = server.take_output(EncryptionLevel::handshake);
    REQUIRE(flight.at(0) == 8);  // EncryptedExtensions first (RFC 8446 §4.3.1)
    const std::size_t ee_size = message_size(flight);
    auto ee = strip_extension({flight.begin(), flight.begin() + static_cast<std::ptrdiff_t>(ee_size)},
                              kTransportParameters, 4);
    ee.insert(ee.end(), flight.begin() + static_cast<std::ptrdiff_t>(ee_size), flight.end());
    client.provide(EncryptionLevel::handshake, ee);
    REQUIRE(client.error());
    CHECK(client.error()->code == 0x16d);
    CHECK(client.error()->message == "server sent no quic_transport_parameters extension");
    CHECK_FALSE(client.handshake_complete());
    CHECK(client.take_output(EncryptionLevel::handshake).empty());  // no Finished went out
}

TEST_CASE("tls: the handshake completes when CRYPTO bytes arrive one at a time") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    client.start();
    auto trickle = [](TlsSession& to, EncryptionLevel level, const std::vector<std::uint8_t>& bytes) {
        for (const auto b : bytes) to.provide(level, std::span(&b, 1));
    };
    trickle(server, EncryptionLevel::initial, client.take_output(EncryptionLevel::initial));
    trickle(client, EncryptionLevel::initial, server.take_output(EncryptionLevel::initial));
    trickle(client, EncryptionLevel::handshake, server.take_output(EncryptionLevel::handshake));
    trickle(server, EncryptionLevel::handshake, client.take_output(EncryptionLevel::handshake));
    INFO("client: ", describe(client), ", server: ", describe(server));
    CHECK(client.handshake_complete());
    CHECK(server.handshake_complete());
}

TEST_CASE("tls: a session moved in the middle of the handshake carries on") {
    TlsSession client(client_config());
    TlsSession first(server_config());
    client.start();
    first.provide(EncryptionLevel::initial, client.take_output(EncryptionLevel::initial));
    TlsSession server(std::move(first));
    pump(client, server);
    CHECK(client.handshake_complete());
    CHECK(server.handshake_complete());
}

TEST_CASE("tls: CRYPTO data at the wrong level is PROTOCOL_VIOLATION and later data is ignored") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    client.start();
    const auto ch = client.take_output(EncryptionLevel::initial);
    server.provide(EncryptionLevel::handshake, ch);
    REQUIRE(server.error());
    CHECK(server.error()->code == ndm::tls::kProtocolViolation);
    CHECK(server.error()->message == "CRYPTO data at the handshake level while reading initial");
    server.provide(EncryptionLevel::initial, ch);  // after the failure: nothing happens
    CHECK_FALSE(server.has_output());
    CHECK(server.error()->code == ndm::tls::kProtocolViolation);

    TlsSession zero_rtt(server_config());
    zero_rtt.provide(EncryptionLevel::zero_rtt, ch);  // RFC 9000 §12.4: no CRYPTO in 0-RTT
    REQUIRE(zero_rtt.error());
    CHECK(zero_rtt.error()->code == ndm::tls::kProtocolViolation);

    TlsSession unstarted(client_config());
    unstarted.provide(EncryptionLevel::initial, ch);
    REQUIRE(unstarted.error());
    CHECK(unstarted.error()->code == ndm::tls::kInternalError);
}

TEST_CASE("tls: Initial data that runs on past the ServerHello is unexpected_message") {
    TlsSession client(client_config());
    TlsSession server(server_config());
    client.start();
    server.provide(EncryptionLevel::initial, client.take_output(EncryptionLevel::initial));
    auto sh = server.take_output(EncryptionLevel::initial);
    const auto hs = server.take_output(EncryptionLevel::handshake);
    sh.insert(sh.end(), hs.begin(), hs.end());  // Handshake messages in the Initial stream
    client.provide(EncryptionLevel::initial, sh);
    REQUIRE(client.error());
    CHECK(client.error()->code == 0x10a);
    CHECK(client.error()->alert_name == "unexpected_message");
}

TEST_CASE("tls: a KeyUpdate or EndOfEarlyData message is unexpected_message") {
    for (const std::uint8_t type : {std::uint8_t{24}, std::uint8_t{5}}) {
        CAPTURE(int(type));
        TlsSession client(client_config());
        TlsSession server(server_config());
        pump(client, server);
        REQUIRE(client.handshake_complete());
        const std::vector<std::uint8_t> msg{type, 0, 0, 1, 0};
        client.provide(EncryptionLevel::one_rtt, msg);
        REQUIRE(client.error());
        CHECK(client.error()->code == 0x10a);
    }
}

TEST_CASE("tls: a handshake message larger than the CRYPTO buffer is CRYPTO_BUFFER_EXCEEDED") {
    auto sc = server_config();
    sc.max_crypto_buffer = ndm::tls::kMinCryptoBuffer;
    TlsSession server(sc);
    // RFC 9000 §7.5: 4096 bytes of one incomplete message are accepted...
    std::vector<std::uint8_t> big{1, 0x00, 0x0f, 0xfc};  // a 4096-byte ClientHello, header included
    big.resize(4095, 0);
    server.provide(EncryptionLevel::initial, big);
    CHECK_FALSE(server.error());
    // ...one that declares more is refused at once, before its body arrives.
    TlsSession other(sc);
    other.provide(EncryptionLevel::initial, std::vector<std::uint8_t>{1, 0x00, 0x0f, 0xfd});
    REQUIRE(other.error());
    CHECK(other.error()->code == ndm::tls::kCryptoBufferExceeded);
    CHECK(other.error()->message == "a 4097-byte handshake message exceeds the 4096-byte CRYPTO buffer");
    TlsSession huge(server_config());
    huge.provide(EncryptionLevel::initial, std::vector<std::uint8_t>{1, 0xff, 0xff, 0xff});
    REQUIRE(huge.error());
    CHECK(huge.error()->code == 0x0d);
}

TEST_CASE("tls: garbage and mutated CRYPTO bytes end in an error, never a crash") {
    ndm::util::Xoshiro256 rng(15);
    TlsSession source(client_config());
    source.start();
    const auto ch = source.take_output(EncryptionLevel::initial);
    int errors = 0;
    for (int i = 0; i < 300; ++i) {
        TlsSession server(server_config());
        std::vector<std::uint8_t> input;
        if (i % 2 == 0) {  // random bytes, sometimes behind a plausible header
            input.resize(1 + rng.next() % 600);
            for (auto& b : input) b = static_cast<std::uint8_t>(rng.next());
            if (i % 4 == 0 && input.size() > 4) {
                const std::size_t body = input.size() - 4;
                input[0] = 1;
                input[1] = 0;
                input[2] = static_cast<std::uint8_t>(body >> 8);
                input[3] = static_cast<std::uint8_t>(body);
            }
        } else {  // the real ClientHello with a few bytes changed
            input = ch;
            for (int k = 0; k < 1 + i % 4; ++k) input[4 + rng.next() % (input.size() - 4)] ^= static_cast<std::uint8_t>(1 + rng.next() % 255);
        }
        server.provide(EncryptionLevel::initial, input);
        server.provide(EncryptionLevel::initial, input);
        if (server.error()) {
            ++errors;
            CHECK_FALSE(server.error()->message.empty());
            CHECK(server.error()->message.find('\n') == std::string::npos);
        }
    }
    CHECK(errors > 200);
    // The client side too: a garbage "ServerHello".
    TlsSession client(client_config());
    client.start();
    (void)client.take_output(EncryptionLevel::initial);
    client.provide(EncryptionLevel::initial, std::vector<std::uint8_t>{2, 0, 0, 3, 1, 2, 3});
    REQUIRE(client.error());
    CHECK(ndm::tls::is_crypto_error(client.error()->code));
}

TEST_CASE("tls: fixed-sizes mode gives identical handshake message sizes across runs") {
    // A fresh certificate each run, as each simulated server makes its own.
    auto run = [](bool fixed) {
        const auto creds = ndm::tls::ServerCredentials::self_signed({"ndm-sim"}, ndm::test::tls_now());
        auto cc = client_config(ndm::tls::ClientCredentials::insecure(), "ndm-sim");
        cc.fixed_sizes = fixed;
        auto sc = server_config(creds);
        sc.fixed_sizes = fixed;
        TlsSession client(cc);
        TlsSession server(sc);
        auto flights = pump(client, server);
        REQUIRE(client.handshake_complete());
        std::vector<std::size_t> sizes;
        for (const auto& f : flights) sizes.push_back(f.size);
        return sizes;
    };
    const auto first = run(true);
    REQUIRE(first.size() == 4);  // ClientHello; ServerHello; EE..Finished; Finished
    for (int r = 0; r < 6; ++r) CHECK(run(true) == first);
    // One X25519 key share (RFC 8446 §4.2.8) instead of GnuTLS's default two,
    // and the ServerHello answers with it.
    const auto normal = run(false);
    CHECK(first[0] < normal[0]);
    CHECK(first[1] <= normal[1]);
}
