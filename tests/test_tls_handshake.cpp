// The TLS 1.3 handshake for QUIC (src/tls/tls_session.cpp, RFC 9001 §4) run
// between two in-memory sessions: secrets, suites, ALPN, transport
// parameters, and the failures the connection will turn into CRYPTO_ERROR.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "tls/alert.hpp"
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
