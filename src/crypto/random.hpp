// Randomness for connection IDs, tokens and keys (RFC 9000 §5.1: CIDs must
// not let an observer link or predict them; RFC 9001 §9.7). Sockets use the
// cryptographic source (GnuTLS's DRBG, seeded from getrandom); the
// virtual-time simulator uses the seeded one so runs repeat bit for bit.
#pragma once

#include <cstdint>
#include <span>

#include "util/rng.hpp"

namespace ndm::crypto {

class RandomSource {
public:
    virtual ~RandomSource() = default;
    virtual void fill(std::span<std::uint8_t> out) = 0;
};

// gnutls_rnd(GNUTLS_RND_RANDOM); throws CryptoError if it fails.
class CryptoRandom final : public RandomSource {
public:
    void fill(std::span<std::uint8_t> out) override;
};

// Deterministic for a seed (util::Xoshiro256): for the simulator and tests
// only, never on a socket.
class SeededRandom final : public RandomSource {
public:
    explicit SeededRandom(std::uint64_t seed) : rng_(seed) {}
    void fill(std::span<std::uint8_t> out) override;

private:
    util::Xoshiro256 rng_;
};

}  // namespace ndm::crypto
