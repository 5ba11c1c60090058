#include "cc/ndm/loss_discriminator.hpp"

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

void LossDiscriminator::on_round_end() noexcept {
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

Verdict LossDiscriminator::judge(const LossEvidence& e) noexcept {
    if (e.ecn_ce) return Verdict::ecn;
    cur_.packets += e.packets_lost;
    if (e.persistent) return Verdict::persistent;
    if (e.after_silence) return Verdict::timeout;
    if (forgiven_share(e.packets_lost) > cap_) return Verdict::cap;
    if (e.standing_queue >= queue_) return Verdict::queue;
    if (e.saturated_probe) return Verdict::probe;
    if (e.p >= threshold_) return Verdict::model;
    cur_.forgiven += e.packets_lost;
    return Verdict::random;
}

}  // namespace ndm::cc::ndm
