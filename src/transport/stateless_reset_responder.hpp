// The sending side of stateless reset (RFC 9000 §10.3) for an Endpoint: the
// token of each connection ID it issues, derived from a secret of its own so
// that it can be recomputed without the connection (§10.3.2), and the reset
// that answers a short-header datagram for an ID it no longer knows: always
// smaller than the datagram it answers, so two endpoints cannot loop
// (§10.3.3), at least 21 bytes, and at a bounded rate. The Router (router.hpp) owns it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/random.hpp"
#include "crypto/stateless_reset.hpp"
#include "ndm/time.hpp"

namespace ndm::transport {

class StatelessResetResponder {
public:
    static constexpr std::size_t kMaxResetSize = 43;        // a small 1-RTT packet's size
    static constexpr unsigned kMaxResetsPerSecond = 1000;   // bounds the work a flood can cause

    // The secret given, or a fresh one from GnuTLS's generator.
    explicit StatelessResetResponder(const std::optional<std::array<std::uint8_t, crypto::StatelessResetKey::kSize>>& secret);

    [[nodiscard]] crypto::StatelessResetToken token_for(std::span<const std::uint8_t> cid) const {
        return key_.token_for(cid);
    }
    // Writes into `out` (at least kMaxResetSize bytes) the reset answering a
    // datagram whose connection ID (the `cid_length` bytes after its first)
    // reached no connection, and returns its size; 0 when none is due: a long
    // header, a datagram too short to answer with a smaller one, or the rate
    // limit reached.
    std::size_t answer(std::span<const std::uint8_t> datagram, std::size_t cid_length, Instant now,
                       std::span<std::uint8_t> out);

private:
    crypto::CryptoRandom random_;
    crypto::StatelessResetKey key_;
    Instant window_start_{};
    unsigned sent_in_window_ = 0;
};

}  // namespace ndm::transport
