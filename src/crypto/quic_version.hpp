// The QUIC versions ndm speaks, and what tells them apart on the wire:
// version 1 (RFC 9000, RFC 9001) and version 2 (RFC 9369), which differs
// only in its version number (§3.1), the long header type bits (§3.2), the
// Initial salt (§3.3.1), the HKDF labels of packet protection, header
// protection and key update (§3.3.2) and the Retry integrity key (§3.3.3).
// Everything version-specific is looked up from a QuicVersion here and in
// packet_keys.cpp / retry.cpp; nothing else in ndm branches on the number.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ndm::crypto {

enum class QuicVersion : std::uint8_t { v1, v2 };

inline constexpr std::uint32_t kVersion1Number = 0x00000001;  // RFC 9000 §15
inline constexpr std::uint32_t kVersion2Number = 0x6b3343cf;  // RFC 9369 §3.1

[[nodiscard]] constexpr std::uint32_t version_number(QuicVersion v) {
    return v == QuicVersion::v2 ? kVersion2Number : kVersion1Number;
}

// The version a long header's Version field names, if ndm speaks it.
[[nodiscard]] constexpr std::optional<QuicVersion> known_version(std::uint32_t number) {
    if (number == kVersion1Number) return QuicVersion::v1;
    if (number == kVersion2Number) return QuicVersion::v2;
    return std::nullopt;
}

// "QUICv1" / "QUICv2", as logs and qlog name them.
[[nodiscard]] constexpr std::string_view version_name(QuicVersion v) {
    return v == QuicVersion::v2 ? "QUICv2" : "QUICv1";
}

// RFC 9001 §5.1, §6.1 and RFC 9369 §3.3.2: the HKDF-Expand-Label labels
// (without TLS's "tls13 " prefix) of a version's packet protection key, IV,
// header protection key and next key phase secret.
struct VersionLabels {
    std::string_view key;
    std::string_view iv;
    std::string_view hp;
    std::string_view ku;
};
[[nodiscard]] constexpr VersionLabels labels(QuicVersion v) {
    if (v == QuicVersion::v2) return {"quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku"};
    return {"quic key", "quic iv", "quic hp", "quic ku"};
}

}  // namespace ndm::crypto
