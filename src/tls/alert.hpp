// TLS alerts (RFC 8446 §6) by name, for error messages: in QUIC an alert is
// never sent as a record but as CONNECTION_CLOSE with CRYPTO_ERROR, 0x100 +
// the alert's code (RFC 9001 §4.8).
#pragma once

#include <cstdint>
#include <string_view>

namespace ndm::tls {

// RFC 9001 §4.8: the CRYPTO_ERROR range 0x0100-0x01ff carries a TLS alert.
inline constexpr std::uint64_t kCryptoErrorBase = 0x100;
// RFC 9000 §20.1: transport error codes this module reports itself.
inline constexpr std::uint64_t kInternalError = 0x01;
inline constexpr std::uint64_t kProtocolViolation = 0x0a;
inline constexpr std::uint64_t kCryptoBufferExceeded = 0x0d;

// The alert descriptions this module chooses itself (RFC 8446 §6.2).
enum class Alert : std::uint8_t {
    unexpected_message = 10,
    handshake_failure = 40,
    bad_certificate = 42,
    certificate_revoked = 44,
    certificate_expired = 45,
    certificate_unknown = 46,
    illegal_parameter = 47,
    unknown_ca = 48,
    decode_error = 50,
    internal_error = 80,
    missing_extension = 109,
    no_application_protocol = 120,
};

// "no_application_protocol" for 120; "alert 201" for a code RFC 8446 and
// its registry extensions here do not name.
std::string_view alert_name(std::uint8_t code);

constexpr std::uint64_t crypto_error(std::uint8_t alert) { return kCryptoErrorBase + alert; }
constexpr std::uint64_t crypto_error(Alert alert) { return crypto_error(static_cast<std::uint8_t>(alert)); }
constexpr bool is_crypto_error(std::uint64_t code) { return code >= kCryptoErrorBase && code <= kCryptoErrorBase + 0xff; }

}  // namespace ndm::tls
