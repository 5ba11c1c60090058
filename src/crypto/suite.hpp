// What the TLS handshake (src/tls) and QUIC packet protection (src/crypto)
// agree on: the encryption levels of RFC 9001 §4.1.4 and the TLS 1.3 cipher
// suites QUIC may use (RFC 9001 §5.3: not TLS_AES_128_CCM_8_SHA256).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ndm::crypto {

// RFC 9001 §4.1.4: each level has its own keys; Initial, Handshake and
// 1-RTT (with 0-RTT) also have their own packet number spaces (RFC 9000 §12.3).
enum class EncryptionLevel : std::uint8_t { initial = 0, zero_rtt = 1, handshake = 2, one_rtt = 3 };
inline constexpr std::size_t kEncryptionLevels = 4;

std::string_view to_string(EncryptionLevel level);

// TLS 1.3 cipher suites (RFC 8446 §B.4) and the AEAD and hash each names.
enum class CipherSuite : std::uint8_t {
    aes128_gcm_sha256 = 0,         // TLS_AES_128_GCM_SHA256, 0x1301
    aes256_gcm_sha384 = 1,         // TLS_AES_256_GCM_SHA384, 0x1302
    chacha20_poly1305_sha256 = 2,  // TLS_CHACHA20_POLY1305_SHA256, 0x1303
};

std::string_view to_string(CipherSuite suite);
// The RFC 8446 name ("TLS_AES_128_GCM_SHA256") or the short one ("aes128-gcm",
// "aes256-gcm", "chacha20"), case-insensitively; nullopt for anything else.
std::optional<CipherSuite> parse_cipher_suite(std::string_view name);

// A traffic secret: as long as the suite's hash (32 or 48 bytes).
inline constexpr std::size_t kMaxSecretSize = 48;
struct Secret {
    std::array<std::uint8_t, kMaxSecretSize> bytes{};
    std::uint8_t size = 0;
    [[nodiscard]] std::span<const std::uint8_t> span() const { return {bytes.data(), size}; }
};

}  // namespace ndm::crypto
