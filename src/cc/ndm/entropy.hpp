// A real Shannon entropy of the RTT distribution (docs/ndm-controller.md §1.2, "Proper
// entropy"), replacing the published module's 1-bit signal (§1.1 items 1-2).
//
// Samples are binned at a fixed resolution relative to the minimum RTT
// (queueing delay q = rtt − min_rtt in bins of min_rtt / 10), not min–max, so
// that a 1 ms wobble and a 100 ms bufferbloat ramp look different; the last
// bin collects everything from 1.5·min_rtt up. The entropy itself is exact:
// H = −Σ p_i·log2 p_i, computed as log2 N − (1/N)·Σ n_i·log2 n_i.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ndm::cc::ndm {

inline constexpr std::size_t kDelayBins = 16;
// Bin width as a fraction of min_rtt.
inline constexpr float kDelayBinFraction = 0.1F;

// Bits; 0 for an empty histogram. log2(k) when k bins hold equal counts.
double shannon_entropy(std::span<const std::uint16_t> counts) noexcept;

// A per-round histogram of queueing delays, 32 bytes.
class DelayHistogram {
public:
    // q and bin_width in the same unit (µs in the controller); bin_width > 0.
    void add(float q, float bin_width) noexcept;
    void clear() noexcept { counts_.fill(0); }

    [[nodiscard]] std::uint32_t total() const noexcept;
    [[nodiscard]] const std::array<std::uint16_t, kDelayBins>& counts() const noexcept {
        return counts_;
    }
    // Entropy in bits, and divided by log2(kDelayBins) (0..1).
    [[nodiscard]] double entropy() const noexcept { return shannon_entropy(counts_); }
    [[nodiscard]] double normalized_entropy() const noexcept;
    // The p-quantile (0 < p ≤ 1) in units of min_rtt: the midpoint of the bin
    // where the cumulative count reaches p·N; 0 when empty.
    [[nodiscard]] float quantile(float p) const noexcept;

private:
    std::array<std::uint16_t, kDelayBins> counts_{};
};

}  // namespace ndm::cc::ndm
