#include "cc/ndm/entropy.hpp"

#include <cmath>

namespace ndm::cc::ndm {

double shannon_entropy(std::span<const std::uint16_t> counts) noexcept {
    double n = 0;
    double s = 0;  // Σ n_i·log2 n_i
    for (const auto c : counts) {
        if (c == 0) continue;  // 0·log 0 = 0
        const double d = c;
        n += d;
        s += d * std::log2(d);
    }
    if (n == 0) return 0;
    const double h = std::log2(n) - s / n;
    return h > 0 ? h : 0;  // −0 and rounding below zero for a single bin
}

void DelayHistogram::add(float q, float bin_width) noexcept {
    const float b = q > 0 ? q / bin_width : 0.0F;
    const std::size_t bin = b >= static_cast<float>(kDelayBins - 1)
                                ? kDelayBins - 1
                                : static_cast<std::size_t>(b);
    if (counts_[bin] == UINT16_MAX) {
        // Halve everything rather than saturate: keeps the shape of the
        // distribution (and so entropy and quantiles) for very long rounds.
        for (auto& c : counts_) c = static_cast<std::uint16_t>(c / 2);
    }
    ++counts_[bin];
}

std::uint32_t DelayHistogram::total() const noexcept {
    std::uint32_t n = 0;
    for (const auto c : counts_) n += c;
    return n;
}

double DelayHistogram::normalized_entropy() const noexcept {
    return entropy() / std::log2(static_cast<double>(kDelayBins));
}

float DelayHistogram::quantile(float p) const noexcept {
    const std::uint32_t n = total();
    if (n == 0) return 0;
    const float need = p * static_cast<float>(n);
    std::uint32_t cum = 0;
    for (std::size_t i = 0; i < kDelayBins; ++i) {
        cum += counts_[i];
        if (static_cast<float>(cum) >= need) {
            return (static_cast<float>(i) + 0.5F) * kDelayBinFraction;
        }
    }
    return (static_cast<float>(kDelayBins) - 0.5F) * kDelayBinFraction;
}

}  // namespace ndm::cc::ndm
