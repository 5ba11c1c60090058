// Stateless reset tokens (RFC 9000 §10.3): a server that lost a connection's
// state can still compute the token of any connection ID it issued, from a
// static key alone (§10.3.2: HMAC-SHA256(static key, CID), first 16 bytes).
// Tokens are compared in constant time (§10.3.1 allows no timing oracle).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "crypto/random.hpp"

namespace ndm::crypto {

inline constexpr std::size_t kStatelessResetTokenSize = 16;
using StatelessResetToken = std::array<std::uint8_t, kStatelessResetTokenSize>;

class StatelessResetKey {
public:
    static constexpr std::size_t kSize = 32;
    explicit StatelessResetKey(std::span<const std::uint8_t, kSize> key);
    explicit StatelessResetKey(RandomSource& random);
    ~StatelessResetKey();
    StatelessResetKey(const StatelessResetKey&) = default;
    StatelessResetKey& operator=(const StatelessResetKey&) = default;

    // The token for a connection ID (at most 20 bytes: std::invalid_argument).
    [[nodiscard]] StatelessResetToken token_for(std::span<const std::uint8_t> cid) const;

private:
    std::array<std::uint8_t, kSize> key_{};
};

// Constant-time equality.
[[nodiscard]] bool tokens_equal(const StatelessResetToken& a, const StatelessResetToken& b);

// RFC 9000 §10.3.1: the last 16 bytes of a datagram that may be a stateless
// reset (at least 21 bytes, short-header form) compared with a token.
[[nodiscard]] bool is_stateless_reset(std::span<const std::uint8_t> datagram, const StatelessResetToken& token);

}  // namespace ndm::crypto
