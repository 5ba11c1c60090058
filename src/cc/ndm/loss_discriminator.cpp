#include "cc/ndm/loss_discriminator.hpp"

#include <cmath>

namespace ndm::cc::ndm {

std::string_view to_string(Verdict v) noexcept {
    switch (v) {
        case Verdict::random: return "random";
        case Verdict::ecn: return "ecn";
        case Verdict::persistent: return "persistent";
        case Verdict::timeout: return "timeout";
        case Verdict::cap: return "cap";
        case Verdict::queue: return "queue";
        case Verdict::probe: return "probe";
        case Verdict::model: return "model";
    }
    return "?";
}

void LossDiscriminator::on_round_end(bool baseline) noexcept {
    if (baseline && cur_.packets > 0) {
        constexpr float kKeep = 7.0F / 8.0F;
        base_packets_ = kKeep * base_packets_ + static_cast<float>(cur_.packets);
        base_lost_ = kKeep * base_lost_ + static_cast<float>(cur_.lost);
    }
    past_[next_] = cur_;
    next_ = (next_ + 1) % kCapRounds;
    cur_ = {};
}

float LossDiscriminator::forgiven_share(std::uint64_t extra) const noexcept {
    std::uint64_t packets = cur_.packets;
    std::uint64_t forgiven = cur_.forgiven + extra;
    for (const Round& r : past_) {
        packets += r.packets;
        forgiven += r.forgiven;
    }
    return packets > 0 ? static_cast<float>(forgiven) / static_cast<float>(packets) : 1.0F;
}

float LossDiscriminator::baseline_loss() const noexcept {
    return base_packets_ > 0 ? base_lost_ / base_packets_ : 0.0F;
}

bool LossDiscriminator::excess_loss() const noexcept {
    // A binomial count's mean plus three standard deviations (√e bounds
    // √(e·(1 − p))): a random-loss round passes it about once in a
    // thousand; with no baseline loss any loss is excess.
    const float expected = baseline_loss() * static_cast<float>(cur_.packets);
    return static_cast<float>(cur_.lost) > expected + 3.0F * std::sqrt(expected);
}

Verdict LossDiscriminator::judge(const LossEvidence& e) noexcept {
    if (e.ecn_ce) return Verdict::ecn;
    cur_.packets += e.packets_lost;
    cur_.lost += e.packets_lost;
    if (e.persistent) return Verdict::persistent;
    if (e.after_silence) return Verdict::timeout;
    if (forgiven_share(e.packets_lost) > cap_) return Verdict::cap;
    if (e.standing_queue >= queue_) return Verdict::queue;
    if (e.saturated_probe && excess_loss()) return Verdict::probe;
    if (e.p >= threshold_) return Verdict::model;
    cur_.forgiven += e.packets_lost;
    return Verdict::random;
}

}  // namespace ndm::cc::ndm
