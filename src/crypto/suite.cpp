#include "crypto/suite.hpp"

#include <algorithm>
#include <cctype>

namespace ndm::crypto {

std::string_view to_string(EncryptionLevel level) {
    switch (level) {
    case EncryptionLevel::initial: return "initial";
    case EncryptionLevel::zero_rtt: return "0rtt";
    case EncryptionLevel::handshake: return "handshake";
    case EncryptionLevel::one_rtt: return "1rtt";
    }
    return "?";
}

std::string_view to_string(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: return "TLS_AES_128_GCM_SHA256";
    case CipherSuite::aes256_gcm_sha384: return "TLS_AES_256_GCM_SHA384";
    case CipherSuite::chacha20_poly1305_sha256: return "TLS_CHACHA20_POLY1305_SHA256";
    }
    return "?";
}

std::optional<CipherSuite> parse_cipher_suite(std::string_view name) {
    const auto same = [&](std::string_view want) {
        return name.size() == want.size() && std::equal(name.begin(), name.end(), want.begin(), [](char a, char b) {
                   return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
               });
    };
    struct Alias {
        std::string_view name;
        CipherSuite suite;
    };
    static constexpr Alias kShort[] = {{"aes128-gcm", CipherSuite::aes128_gcm_sha256},
                                       {"aes256-gcm", CipherSuite::aes256_gcm_sha384},
                                       {"chacha20", CipherSuite::chacha20_poly1305_sha256}};
    for (const Alias& a : kShort)
        if (same(a.name) || same(to_string(a.suite))) return a.suite;
    return std::nullopt;
}

}  // namespace ndm::crypto
