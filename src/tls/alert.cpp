#include "tls/alert.hpp"

#include <array>
#include <utility>

namespace ndm::tls {

namespace {

// RFC 8446 §6 and the TLS Alerts registry entries defined after it
// (RFC 8446 §B.2 lists the same codes).
constexpr std::array<std::pair<std::uint8_t, std::string_view>, 29> kAlerts{{
    {0, "close_notify"},
    {10, "unexpected_message"},
    {20, "bad_record_mac"},
    {21, "decryption_failed"},
    {22, "record_overflow"},
    {40, "handshake_failure"},
    {42, "bad_certificate"},
    {43, "unsupported_certificate"},
    {44, "certificate_revoked"},
    {45, "certificate_expired"},
    {46, "certificate_unknown"},
    {47, "illegal_parameter"},
    {48, "unknown_ca"},
    {49, "access_denied"},
    {50, "decode_error"},
    {51, "decrypt_error"},
    {70, "protocol_version"},
    {71, "insufficient_security"},
    {80, "internal_error"},
    {86, "inappropriate_fallback"},
    {90, "user_canceled"},
    {109, "missing_extension"},
    {110, "unsupported_extension"},
    {112, "unrecognized_name"},
    {113, "bad_certificate_status_response"},
    {115, "unknown_psk_identity"},
    {116, "certificate_required"},
    {120, "no_application_protocol"},
    {60, "export_restriction"},
}};

// Names of unlisted codes, built once: "alert 0" ... "alert 255".
constexpr auto kNumbered = [] {
    std::array<std::array<char, 10>, 256> names{};
    for (unsigned code = 0; code < 256; ++code) {
        auto& n = names[code];
        const char prefix[] = "alert ";
        unsigned i = 0;
        for (; prefix[i] != '\0'; ++i) n[i] = prefix[i];
        if (code >= 100) n[i++] = static_cast<char>('0' + code / 100);
        if (code >= 10) n[i++] = static_cast<char>('0' + code / 10 % 10);
        n[i++] = static_cast<char>('0' + code % 10);
        n[9] = static_cast<char>(i);  // length, in the last byte
    }
    return names;
}();

}  // namespace

std::string_view alert_name(std::uint8_t code) {
    for (const auto& [c, name] : kAlerts)
        if (c == code) return name;
    const auto& n = kNumbered[code];
    return {n.data(), static_cast<std::size_t>(n[9])};
}

}  // namespace ndm::tls
