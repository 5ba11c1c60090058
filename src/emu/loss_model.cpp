#include "emu/loss_model.hpp"

#include <stdexcept>
#include <string>

namespace ndm::emu {

namespace {
void probability(double p, const char* what) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument(std::string("loss: ") + what + " must be in [0, 1]");
}
}  // namespace

void validate(const LossConfig& c) {
    probability(c.p, "p");
    probability(c.r, "r");
    probability(c.loss_bad, "1-h");
    probability(c.loss_good, "1-k");
    probability(c.p13, "p13");
    probability(c.p31, "p31");
    probability(c.p32, "p32");
    probability(c.p23, "p23");
    probability(c.p14, "p14");
    if (c.kind == LossKind::four_state) {
        // One uniform draw selects among a state's exits (netem loss_4state), so they must fit in [0, 1].
        if (c.p13 + c.p14 > 1) throw std::invalid_argument("loss: 4-state p13 + p14 must be <= 1");
        if (c.p31 + c.p32 > 1) throw std::invalid_argument("loss: 4-state p31 + p32 must be <= 1");
    }
}

LossModel::LossModel(const LossConfig& config, Rng rng)
    : config_(config), rng_(rng), state_(config.kind == LossKind::four_state ? 1 : 0) {
    validate(config_);
}

std::optional<DropReason> LossModel::next() {
    switch (config_.kind) {
        case LossKind::none:
            return std::nullopt;
        case LossKind::bernoulli:
            if (rng_.chance(config_.p)) return DropReason::random;
            return std::nullopt;
        case LossKind::gilbert_elliott: {
            // Transition first, then lose with the new state's probability
            // (docs/emulator.md R5); stationary π_B = p/(p+r), mean Bad sojourn 1/r.
            if (state_ == 0) {
                if (rng_.uniform() < config_.p) state_ = 1;
            } else if (rng_.uniform() < config_.r) {
                state_ = 0;
            }
            if (state_ == 1) {
                if (rng_.chance(config_.loss_bad)) return DropReason::burst;
            } else if (rng_.chance(config_.loss_good)) {
                return DropReason::random;
            }
            return std::nullopt;
        }
        case LossKind::four_state: {
            // netem loss_4state: one draw per packet; lost iff the chain enters or
            // stays in 3 (burst loss) or 4 (isolated loss); 4 always returns to 1.
            const double u = rng_.uniform();
            const LossConfig& c = config_;
            switch (state_) {
                case 1:
                    if (u < c.p14) {
                        state_ = 4;
                        return DropReason::random;
                    }
                    if (u < c.p14 + c.p13) {
                        state_ = 3;
                        return DropReason::burst;
                    }
                    return std::nullopt;
                case 2:
                    if (u < c.p23) {
                        state_ = 3;
                        return DropReason::burst;
                    }
                    return std::nullopt;
                case 3:
                    if (u < c.p32) {
                        state_ = 2;
                        return std::nullopt;
                    }
                    if (u < c.p32 + c.p31) {
                        state_ = 1;
                        return std::nullopt;
                    }
                    return DropReason::burst;
                default:  // 4
                    state_ = 1;
                    return std::nullopt;
            }
        }
    }
    return std::nullopt;
}

}  // namespace ndm::emu
