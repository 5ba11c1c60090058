// A client and a server TlsSession (src/tls) pumped against each other in
// memory, level by level, as the connection will do with CRYPTO frames.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "crypto/suite.hpp"
#include "ndm/tls.hpp"
#include "tls/tls_session.hpp"

namespace ndm::test {

// A fixed wall time for certificates (2026-01-01T00:00:00Z): tests read no clock.
inline std::chrono::system_clock::time_point tls_now() {
    return std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
}

inline const tls::ServerCredentials& localhost_credentials() {
    static const tls::ServerCredentials creds = tls::ServerCredentials::self_signed({"localhost", "127.0.0.1"}, tls_now());
    return creds;
}

inline std::vector<std::uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

inline tls::TlsConfig server_config(const tls::ServerCredentials& creds = localhost_credentials()) {
    tls::TlsConfig c;
    c.role = tls::Role::server;
    c.alpn = {"h3", "ndm"};
    c.transport_parameters = bytes_of("server transport parameters \x01\x02\x03");
    c.server_credentials = creds;
    c.now = tls_now();
    return c;
}

inline tls::TlsConfig client_config(tls::ClientCredentials verify = tls::ClientCredentials::insecure(),
                                    std::string name = "localhost") {
    tls::TlsConfig c;
    c.role = tls::Role::client;
    c.alpn = {"ndm"};
    c.server_name = std::move(name);
    c.transport_parameters = bytes_of("client transport parameters \x00\xff");
    c.client_credentials = std::move(verify);
    c.now = tls_now();
    return c;
}

// "ok" or the session's error, for failure messages.
inline std::string describe(const tls::TlsSession& s) {
    if (!s.error()) return s.handshake_complete() ? "complete" : "in progress";
    const auto& e = *s.error();
    return std::to_string(e.code) + " " + e.alert_name + ": " + e.message;
}

// A scratch directory for certificate and key-log files, removed at the end.
class TempDir {
public:
    explicit TempDir(const std::string& name)
        : path_(std::filesystem::temp_directory_path() / ("ndm_tls_test_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] std::string file(const std::string& name, const std::string& content) const {
        const auto p = path_ / name;
        std::ofstream(p, std::ios::binary) << content;
        return p.string();
    }
    [[nodiscard]] std::string path(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

// One CRYPTO flight: the bytes one side sent at one level.
struct Flight {
    bool from_client;
    crypto::EncryptionLevel level;
    std::size_t size;
};

// Moves each side's output to the other until neither has any; returns the
// flights in the order they were delivered.
inline std::vector<Flight> pump(tls::TlsSession& client, tls::TlsSession& server) {
    std::vector<Flight> flights;
    client.start();
    server.start();
    for (int round = 0; round < 20 && (client.has_output() || server.has_output()); ++round) {
        for (const bool from_client : {true, false}) {
            tls::TlsSession& a = from_client ? client : server;
            tls::TlsSession& b = from_client ? server : client;
            for (const auto level : {crypto::EncryptionLevel::initial, crypto::EncryptionLevel::handshake,
                                     crypto::EncryptionLevel::one_rtt}) {
                const auto bytes = a.take_output(level);
                if (bytes.empty()) continue;
                flights.push_back({from_client, level, bytes.size()});
                b.provide(level, bytes);
            }
        }
    }
    return flights;
}

}  // namespace ndm::test
