#include "crypto/suite.hpp"

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

}  // namespace ndm::crypto
