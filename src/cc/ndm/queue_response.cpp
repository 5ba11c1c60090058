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
    float threshold_scale = 0;
    if (r.has_queue) {
        const float q = r.standing;
        floor_.update(r.now, std::chrono::microseconds(static_cast<std::int64_t>(q * kScale)), kFloorWindow);
        jitter_ = 0.875F * jitter_ + 0.125F * std::abs(q - last_);
        last_ = q;
        threshold_scale = noise_ * jitter_;
        const float excess = q - floor();
        if (r.forgiving && cruise_ > 0 && r.cruising && floor() < kEmptyQueue &&
            excess >= std::max(cruise_, threshold_scale)) {
            bump(cuts_);
            return {QueueAction::cut_short_term, 1.0 / (1.0 + static_cast<double>(excess))};
        }
    }
    threshold_scale = noise_ * jitter_;
    if (r.forgiving && probe_ > 0 && r.stalled_probe && r.standing - probe_start_ >= std::max(probe_, threshold_scale)) {
        bump(probes_ended_);
        return {QueueAction::end_probe, 1.0};
    }
    return {};
}

}  // namespace ndm::cc::ndm
