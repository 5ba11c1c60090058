// Seed derivation for the emulator's independent random streams: one stream
// per decision type and direction, so enabling one impairment never shifts the
// pattern of another (common random numbers across runs and controllers).
#pragma once

#include <cstdint>

#include "util/rng.hpp"

namespace ndm::emu {

using Rng = util::Xoshiro256;

enum class Stream : std::uint64_t {
    loss = 0x6c6f7373,       // "loss"
    duplicate = 0x64757020,  // "dup "
    corrupt = 0x636f7272,    // "corr"
    jitter = 0x6a697474,     // "jitt"
    reorder = 0x72656f72,    // "reor"
    red = 0x72656420,        // "red ": RED's marking/dropping draws
};

inline Rng make_stream(std::uint64_t seed, Stream s) {
    return Rng(util::splitmix64(util::splitmix64(seed) ^ static_cast<std::uint64_t>(s)));
}

}  // namespace ndm::emu
