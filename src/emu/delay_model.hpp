// Delay, jitter and reordering (docs/emulator.md R2, R3, R6): assigns each
// packet leaving the bottleneck its delivery time.
#pragma once

#include <cstdint>

#include "emu/streams.hpp"
#include "ndm/emu.hpp"

namespace ndm::emu {

// One draw of a standardized jitter variable for `distribution`:
// uniform on [−1, 1); normal, pareto (shape 3) and paretonormal with mean 0,
// σ = 1 (paretonormal: 0.25·N + 0.75·P of independent draws, σ ≈ 0.79),
// clipped at ±4 like netem's int16 tables (±32767/8192).
double sample_jitter(Distribution distribution, Rng& rng);

// Acklam's rational approximation of Φ⁻¹ with one Halley refinement (|ε| < 1e-12).
double inverse_normal_cdf(double p);

class DelayModel {
public:
    DelayModel(const DelayConfig& config, Rng jitter, Rng reorder);

    struct Decision {
        Instant at;
        bool immediate;  // sent at once by the reorder knob
    };
    // The delivery time of a packet that leaves the bottleneck at `now`
    // (non-decreasing across calls).
    Decision schedule(Instant now);

private:
    DelayConfig config_;
    Rng jitter_;
    Rng reorder_;
    std::uint32_t counter_ = 0;     // netem's reorder gap counter
    Instant last_{Instant::min()};  // order-preserving mode: the last due time
    bool jitter_on_;
};

// Throws std::invalid_argument for negative times, a probability outside
// [0, 1], gap 0, or reordering without delay (netem refuses it too).
void validate(const DelayConfig& config);

}  // namespace ndm::emu
