// The test payload of transfers: a pure function of (seed, offset), so a
// sender regenerates any range on demand instead of holding the whole
// transfer in memory, and a receiver could verify any range independently.
#pragma once

#include <cstdint>
#include <span>

#include "util/rng.hpp"

namespace ndm::sim {

class Payload {
public:
    explicit Payload(std::uint64_t seed) : key_(util::splitmix64(seed ^ 0x7061796c6f6164ull)) {}
    void fill(std::uint64_t offset, std::span<std::uint8_t> out) const {
        std::size_t i = 0;
        auto byte_at = [&](std::uint64_t pos) {
            return static_cast<std::uint8_t>(util::splitmix64(key_ + pos / 8) >> (8 * (pos % 8)));
        };
        while (i < out.size() && (offset + i) % 8 != 0) {
            out[i] = byte_at(offset + i);
            ++i;
        }
        for (; i + 8 <= out.size(); i += 8) {
            const std::uint64_t word = util::splitmix64(key_ + (offset + i) / 8);
            for (unsigned b = 0; b < 8; ++b) out[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
        }
        for (; i < out.size(); ++i) out[i] = byte_at(offset + i);
    }

private:
    std::uint64_t key_;
};

}  // namespace ndm::sim
