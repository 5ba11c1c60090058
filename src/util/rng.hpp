// Small, fast, seedable generators: the one RNG of the tree (simulator,
// emulator, connection IDs, training). We do not use <random>
// distributions: their output is implementation-defined, and runs must be
// bit-identical across standard libraries for a given seed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndm::util {

// SplitMix64 (Steele, Lea, Flood 2014): a bijective mixer; used to expand
// seeds and as a counter-based generator (value = splitmix64(seed + index)).
constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// SplitMix64 as a sequential generator: advances state by one step and
// returns its output (the same sequence as splitmix64(seed), splitmix64(seed
// + golden), ...). Connection IDs and per-connection seeds are drawn this way
// so that a configured seed reproduces them.
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
    const std::uint64_t v = splitmix64(state);
    state += 0x9e3779b97f4a7c15ull;
    return v;
}

// xoshiro256** (Blackman, Vigna 2018).
class Xoshiro256 {
public:
    explicit constexpr Xoshiro256(std::uint64_t seed) {
        for (auto& w : s_) {
            seed += 0x9e3779b97f4a7c15ull;
            w = splitmix64(seed);
        }
    }
    constexpr std::uint64_t next() {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 random bits.
    constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    // True with probability p; draws nothing when p <= 0 so a disabled
    // feature does not advance the stream.
    constexpr bool chance(double p) { return p > 0 && (p >= 1 || uniform() < p); }
    // Uniform in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias is irrelevant here).
    constexpr std::uint64_t below(std::uint64_t n) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
    }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4]{};
};

}  // namespace ndm::util
