// Address validation tokens (RFC 9000 §8.1.3, §8.1.4): what a server puts in
// a Retry or NEW_TOKEN frame and recognises when a client returns it in an
// Initial. Only the issuing server reads them, so the format is ndm's own:
//   kind (1) | nonce (12) | AES-128-GCM( issue time (8) | ODCID length (1) |
//   ODCID (0..20) ) | tag (16)
// sealed under a random key the server holds, with the kind and the client's
// address as associated data: a token is bound to the address without
// carrying it. Tampering, another address, expiry or a malformed token all
// fail validation the same way (nullopt). The key lives as long as the
// process; tokens do not outlive it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/aead.hpp"
#include "crypto/packet_keys.hpp"
#include "crypto/random.hpp"
#include "ndm/time.hpp"

namespace ndm::crypto {

enum class TokenKind : std::uint8_t { retry = 1, new_token = 2 };

// §8.1.3: Retry tokens are for the immediate retry, NEW_TOKEN ones for a
// later connection.
struct TokenLifetimes {
    Duration retry = std::chrono::seconds(10);
    Duration new_token = std::chrono::hours(24);
};

inline constexpr std::size_t kAddressTokenOverhead = 1 + kAeadIvSize + 8 + 1 + kAeadTagSize;
inline constexpr std::size_t kMaxAddressTokenSize = kAddressTokenOverhead + kMaxConnectionIdSize;

struct AddressToken {
    std::array<std::uint8_t, kMaxAddressTokenSize> bytes{};
    std::uint8_t size = 0;
    [[nodiscard]] std::span<const std::uint8_t> span() const { return {bytes.data(), size}; }
};

struct ValidatedToken {
    TokenKind kind = TokenKind::retry;
    Instant issued{};
    std::array<std::uint8_t, kMaxConnectionIdSize> odcid{};  // the Retry's original DCID
    std::uint8_t odcid_size = 0;
    [[nodiscard]] std::span<const std::uint8_t> original_dcid() const { return {odcid.data(), odcid_size}; }
};

class AddressTokenKey {
public:
    // A fresh key from `random` (CryptoRandom on sockets).
    explicit AddressTokenKey(RandomSource& random, TokenLifetimes lifetimes = {});

    // address: the bytes the token binds, e.g. IPv4/IPv6 address and port
    // for Retry; the address alone for NEW_TOKEN, as a client's port changes
    // between connections (§8.1.3). odcid: for Retry, the client's original
    // DCID (≤ 20 bytes, std::invalid_argument); empty for NEW_TOKEN. The
    // nonce is drawn from `random`.
    [[nodiscard]] AddressToken issue(TokenKind kind, std::span<const std::uint8_t> address, Instant now,
                                     std::span<const std::uint8_t> odcid, RandomSource& random);

    // The token's fields if it was issued by this key for this address, is
    // not from the future and not older than its kind's lifetime at `now`.
    [[nodiscard]] std::optional<ValidatedToken> validate(std::span<const std::uint8_t> token,
                                                         std::span<const std::uint8_t> address, Instant now);

private:
    Aead aead_;
    TokenLifetimes lifetimes_;
};

}  // namespace ndm::crypto
