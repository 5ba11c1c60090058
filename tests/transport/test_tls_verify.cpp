// Certificates for the QUIC handshake (src/tls/credentials.cpp, verify.cpp):
// loading, self-signed generation, the fingerprint format, and the client's
// verification modes with the one-line reasons and alerts they give.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tls/alert.hpp"
#include "ndm/tls.hpp"
#include "tls_test_util.hpp"

using namespace std::chrono_literals;
using ndm::test::client_config;
using ndm::test::describe;
using ndm::test::localhost_credentials;
using ndm::test::pump;
using ndm::test::server_config;
using ndm::test::TempDir;
using ndm::tls::Alert;
using ndm::tls::ClientCredentials;
using ndm::tls::crypto_error;
using ndm::tls::ServerCredentials;
using ndm::tls::TlsSession;

namespace {

// The client's verdict on the server's certificate: "" when the handshake
// completed, else the client's error message. Checks what the server learns.
std::string verdict(ndm::tls::TlsConfig cc, const ServerCredentials& creds = localhost_credentials(),
                    Alert expected = Alert::bad_certificate) {
    TlsSession client(std::move(cc));
    TlsSession server(server_config(creds));
    pump(client, server);
    if (client.handshake_complete()) {
        CHECK(server.handshake_complete());
        return "";
    }
    REQUIRE(client.error());
    CHECK(client.error()->code == crypto_error(expected));
    CHECK_FALSE(server.handshake_complete());  // it waits for the client's Finished
    server.on_peer_error(client.error()->code);
    CHECK(server.error()->message ==
          "client ended the handshake with TLS alert " + std::string(ndm::tls::alert_name(static_cast<std::uint8_t>(expected))));
    return client.error()->message;
}

}  // namespace

TEST_CASE("tls verify: a self-signed certificate without --ca, --pin or --insecure is not trusted") {
    CHECK(verdict(client_config(ClientCredentials::system()), localhost_credentials(), Alert::unknown_ca) ==
          "certificate not trusted (self-signed); pass --ca, --pin or --insecure");
}

TEST_CASE("tls verify: --insecure accepts any certificate") {
    CHECK(verdict(client_config(ClientCredentials::insecure(), "example.org")).empty());
}

TEST_CASE("tls verify: the right --pin passes, a wrong one fails naming both fingerprints") {
    const auto& fp = localhost_credentials().fingerprint();
    CHECK(verdict(client_config(ClientCredentials::pinned(fp))).empty());
    auto wrong = fp;
    wrong.bytes[31] ^= 1;
    CHECK(verdict(client_config(ClientCredentials::pinned(wrong))) ==
          "pinned fingerprint mismatch: got " + to_string(fp) + ", expected " + to_string(wrong));
    // Another server's certificate under the same pin.
    const auto other = ServerCredentials::self_signed({"localhost"}, ndm::test::tls_now());
    CHECK_FALSE(verdict(client_config(ClientCredentials::pinned(fp)), other).empty());
}

TEST_CASE("tls verify: a --ca file that holds the certificate passes, one that does not fails") {
    const TempDir dir("ca");
    const auto ca = dir.file("ca.pem", localhost_credentials().certificate_pem());
    CHECK(verdict(client_config(ClientCredentials::ca_file(ca))).empty());
    CHECK(verdict(client_config(ClientCredentials::ca_file(ca), "127.0.0.1")).empty());  // IP SAN
    const auto other = ServerCredentials::self_signed({"localhost"}, ndm::test::tls_now());
    CHECK(verdict(client_config(ClientCredentials::ca_file(ca)), other, Alert::unknown_ca) ==
          "certificate not trusted (self-signed, not in " + ca + ")");
}

TEST_CASE("tls verify: a certificate for another name fails with certificate for X, expected Y") {
    const TempDir dir("name");
    const auto ca = dir.file("ca.pem", localhost_credentials().certificate_pem());
    CHECK(verdict(client_config(ClientCredentials::ca_file(ca), "example.org")) ==
          "certificate for localhost, 127.0.0.1, expected example.org");
}

TEST_CASE("tls verify: validity is checked at the configured time") {
    const TempDir dir("time");
    const auto ca = dir.file("ca.pem", localhost_credentials().certificate_pem());
    auto late = client_config(ClientCredentials::ca_file(ca));
    late.now += std::chrono::hours(24 * 31);  // the default validity is 30 days
    CHECK(verdict(late, localhost_credentials(), Alert::certificate_expired).rfind("certificate expired (not after ", 0) == 0);
    auto early = client_config(ClientCredentials::ca_file(ca));
    early.now -= 2h;  // valid from now - 1 h
    CHECK(verdict(early, localhost_credentials(), Alert::certificate_expired).rfind("certificate not yet valid", 0) == 0);
    auto edge = client_config(ClientCredentials::ca_file(ca));
    edge.now -= 59min;
    CHECK(verdict(edge).empty());
}

TEST_CASE("tls verify: system and CA verification need a server name") {
    CHECK_THROWS_AS(TlsSession{client_config(ClientCredentials::system(), "")}, ndm::tls::TlsSetupError);
    CHECK_NOTHROW(TlsSession{client_config(ClientCredentials::pinned(localhost_credentials().fingerprint()), "")});
}

TEST_CASE("tls credentials: --cert and --key files load, and errors name the file and the problem") {
    const TempDir dir("load");
    const auto pem = ndm::tls::generate_self_signed({"example.org"}, ndm::test::tls_now());
    const auto cert = dir.file("cert.pem", pem.certificate_pem);
    const auto key = dir.file("key.pem", pem.key_pem);
    const auto loaded = ServerCredentials::load(cert, key);
    CHECK(loaded.certificate_pem() == pem.certificate_pem);
    TempDir ca_dir("load_ca");
    CHECK(verdict(client_config(ClientCredentials::ca_file(ca_dir.file("ca.pem", pem.certificate_pem)), "example.org"),
                  loaded)
              .empty());

    auto error_of = [](auto&& f) {
        try {
            f();
        } catch (const ndm::tls::CredentialError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error_of([&] { ServerCredentials::load(dir.path("missing.pem"), key); }) ==
          dir.path("missing.pem") + ": No such file or directory");
    const auto junk = dir.file("junk.pem", "not a certificate\n");
    CHECK(error_of([&] { ServerCredentials::load(junk, key); }).rfind(junk + ": no PEM certificate", 0) == 0);
    CHECK(error_of([&] { ServerCredentials::load(cert, junk); }).rfind(junk + ": not a PEM private key", 0) == 0);
    const auto other_key = dir.file("other.pem", ndm::tls::generate_self_signed({"x"}, ndm::test::tls_now()).key_pem);
    CHECK(error_of([&] { ServerCredentials::load(cert, other_key); }) ==
          other_key + ": the private key does not match the certificate in " + cert);
    CHECK(error_of([&] { ClientCredentials::ca_file(junk); }).rfind(junk + ": ", 0) == 0);
    CHECK(error_of([&] { ClientCredentials::ca_file(dir.path("none.pem")); }) ==
          dir.path("none.pem") + ": No such file or directory");
    CHECK(error_of([&] { ndm::tls::generate_self_signed({}, ndm::test::tls_now()); }) ==
          "self-signed certificate: no name given");
}

TEST_CASE("tls credentials: the fingerprint is 64 lower-case hex digits, parsed with or without colons") {
    const auto& fp = localhost_credentials().fingerprint();
    const std::string text = to_string(fp);
    REQUIRE(text.size() == 64);
    CHECK(text.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(ndm::tls::parse_fingerprint(text) == fp);
    std::string colons, upper;
    for (std::size_t i = 0; i < text.size(); i += 2) colons += (i ? ":" : "") + text.substr(i, 2);
    for (const char c : colons) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(colons.size() == 95);
    CHECK(ndm::tls::parse_fingerprint(colons) == fp);
    CHECK(ndm::tls::parse_fingerprint(upper) == fp);
    CHECK_FALSE(ndm::tls::parse_fingerprint(text.substr(1)));        // 63 digits
    CHECK_FALSE(ndm::tls::parse_fingerprint(text + "00"));           // 33 bytes
    CHECK_FALSE(ndm::tls::parse_fingerprint(colons + ":"));          // trailing colon
    CHECK_FALSE(ndm::tls::parse_fingerprint(":" + colons));          // leading colon
    CHECK_FALSE(ndm::tls::parse_fingerprint("g" + text.substr(1)));  // not hex
    CHECK_FALSE(ndm::tls::parse_fingerprint(""));
    // SHA-256 of the certificate's DER: the empty input's digest is known.
    CHECK(to_string(ndm::tls::fingerprint_of_der(nullptr, 0)) ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("tls credentials: generated certificates differ in key and serial but not in size") {
    const auto a = ndm::tls::generate_self_signed({"ndm-sim"}, ndm::test::tls_now());
    const auto b = ndm::tls::generate_self_signed({"ndm-sim"}, ndm::test::tls_now());
    CHECK(a.certificate_pem != b.certificate_pem);
    CHECK(a.certificate_pem.size() == b.certificate_pem.size());
    CHECK(a.key_pem.rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
}
