#include "cc/ndm/features.hpp"

#include <algorithm>
#include <chrono>

namespace ndm::cc::ndm {

void WindowedMin::update(Instant now, Duration d, Duration window) noexcept {
    // lib/win_minmax.c minmax_running_min. Sub-µs RTTs count as 1 µs.
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    const std::uint32_t v = us < 1 ? 1 : (us >= UINT32_MAX ? UINT32_MAX - 1 : static_cast<std::uint32_t>(us));
    auto set = [&](std::size_t i, Instant t, std::uint32_t x) {
        t_[i] = t;
        v_[i] = x;
    };
    if (v_[0] == UINT32_MAX || v <= v_[0] || now - t_[2] > window) {
        for (std::size_t i = 0; i < 3; ++i) set(i, now, v);  // a new minimum, or nothing left in the window
        return;
    }
    if (v <= v_[1]) {
        set(1, now, v);
        set(2, now, v);
    } else if (v <= v_[2]) {
        set(2, now, v);
    }
    // Subwindow aging: the best sample expires, the others move up.
    const Duration dt = now - t_[0];
    if (dt > window) {
        set(0, t_[1], v_[1]);
        set(1, t_[2], v_[2]);
        set(2, now, v);
        if (now - t_[0] > window) {
            set(0, t_[1], v_[1]);
            set(1, t_[2], v_[2]);
            set(2, now, v);
        }
    } else if (t_[1] == t_[0] && dt > window / 4) {
        set(1, now, v);
        set(2, now, v);
    } else if (t_[2] == t_[1] && dt > window / 2) {
        set(2, now, v);
    }
}

namespace {

float us(Duration d) noexcept { return static_cast<float>(d.count()) / 1000.0F; }

}  // namespace

void FeatureTracker::start_round(Instant now) noexcept {
    round_start_ = now;
    sum_t_ = sum_q_ = sum_tt_ = sum_tq_ = 0;
    samples_ = acked_ = lost_ = 0;
    bytes_ = 0;
    max_run_ = 0;
    q_min_ = 0;
    hist_.clear();
}

bool FeatureTracker::on_ack(const AckEvent& ev) noexcept {
    if (ev.has_rtt_sample && ev.latest_rtt > Duration::zero()) {
        min_rtt_.update(ev.now, ev.latest_rtt, kMinRttWindow);
        const float q = us(ev.latest_rtt - min_rtt());
        const float t = round_start_ == Instant::min() ? 0.0F : us(ev.now - round_start_);
        sum_t_ += t;
        sum_q_ += q;
        sum_tt_ += t * t;
        sum_tq_ += t * q;
        q_min_ = samples_ == 0 ? q : std::min(q_min_, q);
        q_last_ = q;
        ++samples_;
        hist_.add(q, std::max(us(min_rtt()) * kDelayBinFraction, 1.0F));
    }
    bytes_ += ev.bytes_acked;
    acked_ += static_cast<std::uint32_t>(ev.packets_acked);

    // One round trip: a packet sent after the round began was acknowledged.
    if (round_start_ != Instant::min() && ev.largest_acked_sent_time < round_start_) return false;
    const bool complete = round_start_ != Instant::min() && samples_ > 0 && has_min_rtt();
    if (complete) {
        compute(last_, ev.now);
        standing_ = q_min_ / us(min_rtt());
        const float secs = static_cast<float>(ev.now - round_start_ > Duration::zero()
                                                  ? to_seconds(ev.now - round_start_)
                                                  : 0.0);
        const float rate = secs > 0 ? static_cast<float>(bytes_) / secs : 0.0F;
        max_rate_ = std::max(rate, max_rate_ * 0.875F);
        last_[kRateRatio] = max_rate_ > 0 ? rate / max_rate_ : 0.0F;
    }
    start_round(ev.now);
    return complete;
}

void FeatureTracker::on_loss(const CongestionEvent& ev) noexcept {
    lost_ += static_cast<std::uint32_t>(ev.packets_lost);
    max_run_ = static_cast<std::uint16_t>(
        std::max<std::uint64_t>(max_run_, std::min<std::uint64_t>(ev.packets_lost, UINT16_MAX)));
}

void FeatureTracker::compute(FeatureVector& f, Instant /*now*/) const noexcept {
    const float min_us = us(min_rtt());
    f[kQueueNow] = q_last_ / min_us;
    f[kQueueP50] = hist_.quantile(0.5F);
    f[kQueueP90] = hist_.quantile(0.9F);
    float slope = 0;
    if (samples_ >= 3) {
        const float n = static_cast<float>(samples_);
        const float den = n * sum_tt_ - sum_t_ * sum_t_;
        if (den > 0) slope = (n * sum_tq_ - sum_t_ * sum_q_) / den;
    }
    f[kRttSlope] = std::clamp(slope, -1.0F, 1.0F);
    f[kEntropy] = static_cast<float>(hist_.normalized_entropy());
    const std::uint32_t total = acked_ + lost_;
    f[kLossRate] = total > 0 ? static_cast<float>(lost_) / static_cast<float>(total) : 0.0F;
    f[kRateRatio] = last_[kRateRatio];
    f[kLossRun] = std::clamp((static_cast<float>(max_run_) - 1.0F) / 8.0F, 0.0F, 1.0F);
}

FeatureVector FeatureTracker::at_loss(const CongestionEvent& ev) const noexcept {
    FeatureVector f = last_;
    if (!has_min_rtt()) return f;
    if (samples_ >= kMinSamples) compute(f, ev.now);
    f[kQueueNow] = q_last_ / us(min_rtt());
    const std::uint32_t total = acked_ + lost_;
    f[kLossRate] = total > 0 ? static_cast<float>(lost_) / static_cast<float>(total) : 0.0F;
    f[kLossRun] = std::clamp((static_cast<float>(ev.packets_lost) - 1.0F) / 8.0F, 0.0F, 1.0F);
    return f;
}

}  // namespace ndm::cc::ndm
