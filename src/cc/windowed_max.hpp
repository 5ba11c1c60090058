// The maximum of a measurement over a sliding window, in constant space: the
// three-sample estimator of Kathleen Nichols that BBR uses for its bandwidth
// filter (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
// Queue 2016; Linux's lib/win_minmax.c). It keeps the best sample, and the
// best ones of the later quarter and half of the window, so that when the
// best ages out the next best within the window is already known. Time is
// any monotonic counter: BBR counts round trips.
#pragma once

#include <array>
#include <cstdint>

namespace ndm::cc {

class WindowedMax {
public:
    explicit WindowedMax(std::uint64_t window) : window_(window) {}

    // The maximum of the samples taken within the window ending at the latest `time`.
    [[nodiscard]] double get() const { return s_[0].value; }

    // A new window length for the samples that follow (BBRv3's extra_acked
    // filter remembers one round in Startup and ten afterwards).
    void set_window(std::uint64_t window) { window_ = window; }

    // Forgets everything: `value` at `time` is the only sample.
    void reset(std::uint64_t time, double value) { s_.fill({time, value}); }

    // Adds a sample; times must not decrease. Returns the new maximum.
    double update(std::uint64_t time, double value) {
        const Sample v{time, value};
        // A new best, or nothing left inside the window: start over from it.
        if (value >= s_[0].value || time - s_[2].time > window_) {
            reset(time, value);
            return get();
        }
        if (value >= s_[1].value) {
            s_[1] = s_[2] = v;
        } else if (value >= s_[2].value) {
            s_[2] = v;
        }
        age(v);
        return get();
    }

private:
    struct Sample {
        std::uint64_t time = 0;
        double value = 0;
    };

    // The best sample has aged out: promote the others (twice if the second
    // is out too); or refresh the second and third choices once a quarter and
    // a half of the window have passed without better ones, so that they
    // always come from later in the window than the best.
    void age(const Sample& v) {
        const std::uint64_t dt = v.time - s_[0].time;
        if (dt > window_) {
            s_[0] = s_[1];
            s_[1] = s_[2];
            s_[2] = v;
            if (v.time - s_[0].time > window_) {
                s_[0] = s_[1];
                s_[1] = s_[2];
            }
        } else if (s_[1].time == s_[0].time && dt > window_ / 4) {
            s_[1] = s_[2] = v;
        } else if (s_[2].time == s_[1].time && dt > window_ / 2) {
            s_[2] = v;
        }
    }

    std::uint64_t window_;
    std::array<Sample, 3> s_{};
};

}  // namespace ndm::cc
