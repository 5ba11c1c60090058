// SIMD kernels of the NDM inference engine (docs/ndm-controller.md §4).
//
// Batches are structure-of-arrays: row r of a batch holds one value for every
// connection, element (r, i) at p[r * stride + i]. A kernel vectorises across
// connections, so every lane performs exactly the scalar sequence of
// operations for its connection (the same summation order): kernels differ
// only by FMA contraction and by the activation approximations, which keeps
// them within 1e-5 of the scalar reference.
//
// The SIMD kernels share their loops (kernels_simd.hpp, a template over a
// small vector-traits struct); each ISA file holds only its primitives.
// The kernel files are compiled at the library's baseline x86-64 flags; each
// SIMD function carries its own __attribute__((target(...))), and a table is
// only handed out when the running CPU has the features
// (__builtin_cpu_supports), so the library still runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ndm/ndm_model.hpp"  // Act

namespace ndm::cc::ndm {

enum class Simd : std::uint8_t { scalar, sse42, avx2, avx512, neon };

// Largest layer width the kernels accept (bounds their stack buffers for the
// batch tail); Model::validate enforces it.
inline constexpr std::size_t kMaxLayerWidth = 128;

struct Kernels {
    Simd simd;
    std::string_view name;
    // y[o][i] = act(b[o] + sum_k w[o * in + k] * x[k][i]) for o < out, i < n,
    // k summed in increasing order. x rows at x_stride, y rows at y_stride.
    void (*dense)(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
                  const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
                  std::size_t n);
    // GRU cell update (Cho et al. 2014, PyTorch gate layout r, z, n): gi and gh
    // hold the 3H pre-activation rows W_ih·x + b_ih and W_hh·h + b_hh (rows
    // at gate_stride);
    //   r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), c = tanh(gi_n + r·gh_n),
    //   h ← (1 − z)·c + z·h   (h updated in place, H rows at h_stride).
    void (*gru)(const float* gi, const float* gh, std::size_t gate_stride, std::size_t hidden,
                float* h, std::size_t h_stride, std::size_t n);
};

// The kernel tables compiled into this build, or nullptr (sse42/avx2/avx512
// need x86-64 and a compiler that knows the targets; neon needs arm64).
// A non-null table may still be unusable on this CPU: see supported().
const Kernels* scalar_kernels() noexcept;
const Kernels* sse42_kernels() noexcept;
const Kernels* avx2_kernels() noexcept;
const Kernels* avx512_kernels() noexcept;
const Kernels* neon_kernels() noexcept;

std::string_view simd_name(Simd s) noexcept;
// "scalar", "sse42", "avx2", "avx512", "neon"; nullopt otherwise.
std::optional<Simd> parse_simd(std::string_view name) noexcept;

// Compiled in and the CPU has the features.
bool supported(Simd s) noexcept;
// Every supported level, scalar first.
std::vector<Simd> supported_simd();
// The best supported level (avx512 > avx2 > sse42 > scalar; neon on arm64).
Simd best_simd() noexcept;

// The process-wide default, used by engines and controllers that are not told
// otherwise: the environment variable NDM_SIMD=scalar|sse42|avx2|avx512|neon
// when set and supported (a warning is logged otherwise), else best_simd().
Simd active_simd() noexcept;
// Overrides the default (tests, benchmarks). Throws std::invalid_argument
// when s is not supported here.
void set_active_simd(Simd s);

// Unit j's rows of the GRU gate pre-activations (gates r, z, n in PyTorch
// order, rows of stride s; gi from the input, gh from the state) and of the
// state itself (stride hs): what every kernel's GRU step walks.
struct GruUnitRows {
    const float *ir, *iz, *in, *hr, *hz, *hn;
    float* h;
};
inline GruUnitRows gru_unit_rows(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
                                 std::size_t hs, std::size_t j) noexcept {
    return {gi + j * s,      gi + (hidden + j) * s, gi + (2 * hidden + j) * s, gh + j * s,
            gh + (hidden + j) * s, gh + (2 * hidden + j) * s, h + j * hs};
}

// The table for s; throws std::invalid_argument when s is not supported.
const Kernels& kernels_for(Simd s);
// The table a user names: "auto" (active_simd()) or a level name; throws
// std::invalid_argument naming an unknown or unsupported level.
const Kernels& kernels_named(std::string_view name);

}  // namespace ndm::cc::ndm
