// Loss models of netem (docs/emulator.md R5): Bernoulli, Gilbert–Elliott
// (`gemodel p r 1-h 1-k`) and the 4-state Markov "GI" model (`state ...`).
#pragma once

#include <optional>

#include "emu/streams.hpp"
#include "ndm/emu.hpp"

namespace ndm::emu {

class LossModel {
public:
    LossModel(const LossConfig& config, Rng rng);
    // Advances the model by one packet; the reason if the packet is lost.
    std::optional<DropReason> next();
    [[nodiscard]] bool enabled() const { return config_.kind != LossKind::none; }
    [[nodiscard]] int state() const { return state_; }

private:
    LossConfig config_;
    Rng rng_;
    int state_;  // gilbert_elliott: 0 Good, 1 Bad; four_state: 1..4 as in netem
};

// Throws std::invalid_argument naming the first probability outside [0, 1]
// or an inconsistent 4-state row.
void validate(const LossConfig& config);

}  // namespace ndm::emu
