// NSS key log lines from the TLS session (src/tls/keylog.cpp), the file
// sink the tools use for SSLKEYLOGFILE, and the alert names of messages.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tls/alert.hpp"
#include "ndm/tls.hpp"
#include "tls_test_util.hpp"

using ndm::crypto::EncryptionLevel;
using ndm::test::client_config;
using ndm::test::pump;
using ndm::test::server_config;
using ndm::test::TempDir;
using ndm::tls::Direction;
using ndm::tls::TlsSession;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string hex(std::span<const std::uint8_t> b) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (const auto x : b) s += {digits[x >> 4], digits[x & 15]};
    return s;
}

}  // namespace

TEST_CASE("tls keylog: the four traffic secrets are logged under the client random, matching the secrets") {
    std::vector<std::string> lines;
    auto cc = client_config();
    cc.keylog = [&](std::string_view line) { lines.emplace_back(line); };
    TlsSession client(cc);
    TlsSession server(server_config());
    pump(client, server);
    REQUIRE(client.handshake_complete());

    const std::regex format("([A-Z_0-9]+) ([0-9a-f]{64}) ([0-9a-f]{64}|[0-9a-f]{96})");
    std::map<std::string, std::string> secret_of;
    std::string random;
    for (const auto& line : lines) {
        std::smatch m;
        REQUIRE_MESSAGE(std::regex_match(line, m, format), line);
        if (random.empty()) random = m[2];
        CHECK(m[2] == random);
        CHECK(secret_of.emplace(m[1], m[3]).second);  // each label once
    }
    std::map<std::pair<EncryptionLevel, Direction>, std::string> secrets;
    for (const auto& e : client.take_secrets()) secrets[{e.level, e.direction}] = hex(e.secret.span());
    CHECK(secret_of["CLIENT_HANDSHAKE_TRAFFIC_SECRET"] == secrets[{EncryptionLevel::handshake, Direction::write}]);
    CHECK(secret_of["SERVER_HANDSHAKE_TRAFFIC_SECRET"] == secrets[{EncryptionLevel::handshake, Direction::read}]);
    CHECK(secret_of["CLIENT_TRAFFIC_SECRET_0"] == secrets[{EncryptionLevel::one_rtt, Direction::write}]);
    CHECK(secret_of["SERVER_TRAFFIC_SECRET_0"] == secrets[{EncryptionLevel::one_rtt, Direction::read}]);
    CHECK(ndm::tls::keylog_line("L", std::vector<std::uint8_t>{0, 0xab}, std::vector<std::uint8_t>{0xff}) == "L 00ab ff");
}

TEST_CASE("tls keylog: the file sink appends each line once and GnuTLS's own SSLKEYLOGFILE writer stays off") {
    const TempDir dir("keylog");
    const auto ours = dir.path("ours.log");
    const auto gnutls_own = dir.path("gnutls.log");
    ::setenv("SSLKEYLOGFILE", gnutls_own.c_str(), 1);
    for (int run = 0; run < 2; ++run) {
        auto cc = client_config();
        cc.keylog = ndm::tls::keylog_to_file(ours);
        TlsSession client(cc);
        TlsSession server(server_config());  // no sink: logs nothing
        pump(client, server);
        REQUIRE(client.handshake_complete());
    }
    ::unsetenv("SSLKEYLOGFILE");
    CHECK_FALSE(std::filesystem::exists(gnutls_own));
    const auto lines = lines_of(ours);
    CHECK(lines.size() >= 8);  // four traffic secrets per handshake, appended
    std::map<std::string, int> count;
    for (const auto& l : lines) ++count[l];
    for (const auto& [line, n] : count) CHECK_MESSAGE(n == 1, line);
    CHECK((std::filesystem::status(ours).permissions() & std::filesystem::perms::others_read) ==
          std::filesystem::perms::none);

    try {
        (void)ndm::tls::keylog_to_file(dir.path("no/such/dir/k.log"));
        FAIL("no error");
    } catch (const ndm::tls::KeylogError& e) {
        CHECK(std::string(e.what()) == "key log file " + dir.path("no/such/dir/k.log") + ": No such file or directory");
    }
}

TEST_CASE("tls alerts: RFC 8446 names, and a number for unknown codes") {
    CHECK(ndm::tls::alert_name(120) == "no_application_protocol");
    CHECK(ndm::tls::alert_name(42) == "bad_certificate");
    CHECK(ndm::tls::alert_name(109) == "missing_extension");
    CHECK(ndm::tls::alert_name(0) == "close_notify");
    CHECK(ndm::tls::alert_name(7) == "alert 7");
    CHECK(ndm::tls::alert_name(255) == "alert 255");
    CHECK(ndm::tls::crypto_error(ndm::tls::Alert::no_application_protocol) == 0x178);
    CHECK(ndm::tls::is_crypto_error(0x100));
    CHECK(ndm::tls::is_crypto_error(0x1ff));
    CHECK_FALSE(ndm::tls::is_crypto_error(0x200));
}
