// ndm::emu::Histogram: log-linear buckets over microseconds (HdrHistogram's
// idea with 4 significant bits), enough for queue and one-way delays from
// 1 µs to days in a fixed 5 KB array.
#include <bit>
#include <cmath>

#include "ndm/emu.hpp"

namespace ndm::emu {

namespace {
constexpr std::uint64_t kLinear = 32;  // µs values below this get their own bucket
constexpr std::uint64_t kSub = 16;     // sub-buckets per power of two above

std::size_t bucket_of(std::uint64_t us) {
    if (us < kLinear) return us;
    const int k = std::bit_width(us) - 5;                 // us >> k is in [16, 32)
    const std::uint64_t mant = (us >> k) - kSub;          // [0, 16)
    return kLinear + static_cast<std::size_t>(k - 1) * kSub + mant;
}
// Upper edge (exclusive) of bucket b, in µs.
std::uint64_t upper_of(std::size_t b) {
    if (b < kLinear) return b + 1;
    const std::size_t k = (b - kLinear) / kSub + 1;
    const std::uint64_t mant = (b - kLinear) % kSub + kSub;
    return (mant + 1) << k;
}
}  // namespace

void Histogram::add(Duration d) {
    if (d < Duration::zero()) d = Duration::zero();
    const auto us = static_cast<std::uint64_t>(d.count() / 1000);
    std::size_t b = bucket_of(us);
    if (b >= kBuckets) b = kBuckets - 1;
    ++buckets_[b];
    ++count_;
    sum_ns_ += static_cast<double>(d.count());
    if (d < min_) min_ = d;
    if (d > max_) max_ = d;
}

Duration Histogram::mean() const {
    return count_ ? Duration(static_cast<Duration::rep>(std::llround(sum_ns_ / static_cast<double>(count_))))
                  : Duration{0};
}

Duration Histogram::quantile(double q) const {
    if (count_ == 0) return Duration{0};
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
        seen += buckets_[b];
        if (seen >= rank && seen > 0) {
            const Duration edge = std::chrono::microseconds(upper_of(b));
            return edge < max_ ? edge : max_;
        }
    }
    return max_;
}

}  // namespace ndm::emu
