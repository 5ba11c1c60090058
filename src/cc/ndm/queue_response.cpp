#include "cc/ndm/queue_response.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace ndm::cc::ndm {
namespace {

// WindowedMin keeps µs; the standing queue is kept there in millionths.
constexpr float kScale = 1e6F;

void bump(std::uint32_t& n) noexcept {
    if (n != UINT32_MAX) ++n;
}

}  // namespace

float QueueResponse::floor() const noexcept {
    if (floor_.empty()) return 0.0F;
    return static_cast<float>(std::chrono::duration_cast<std::chrono::microseconds>(floor_.get()).count()) / kScale;
}

QueueDecision QueueResponse::on_round_end(const QueueRound& r) noexcept {
    if (r.has_queue) {
        floor_.update(r.now, std::chrono::microseconds(static_cast<std::int64_t>(r.standing * kScale)), kFloorWindow);
        jitter_ = 0.875F * jitter_ + 0.125F * std::abs(r.standing - last_);
        last_ = r.standing;
    }
    const float jitter_bound = noise_ * jitter_;
    if (r.has_queue && r.forgiving && cruise_ > 0 && r.cruising) {
        const float floor_now = floor();
        const float excess = r.standing - floor_now;
        if (floor_now < kEmptyQueue && excess >= std::max(cruise_, jitter_bound)) {
            bump(cuts_);
            return {QueueAction::cut_short_term, 1.0 / (1.0 + static_cast<double>(excess))};
        }
    }
    if (r.forgiving && probe_ > 0 && r.stalled_probe && r.standing - probe_start_ >= std::max(probe_, jitter_bound)) {
        bump(probes_ended_);
        return {QueueAction::end_probe, 1.0};
    }
    if (r.forgiving && stall_ && r.stalled_probe) {
        bump(probes_stopped_);
        return {QueueAction::stop_probe, 1.0};
    }
    return {};
}

}  // namespace ndm::cc::ndm
