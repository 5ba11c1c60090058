// NEON kernels for arm64: 4 connections per vector, the shared loops of
// kernels_simd.hpp, compiled only on aarch64 where NEON (with FMA) is
// baseline; elsewhere the table is absent. The batch tail is loaded lane by
// lane; 1/x is an exact division. Not run on the x86-64
// development machines (compile-checked with g++-aarch64-linux-gnu).
#include "cc/ndm/kernels.hpp"

#include <cstddef>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ndm::cc::ndm {

#if defined(__aarch64__)
namespace {

#define NDM_SIMD_TARGET

struct Neon {
    using reg = float32x4_t;
    static constexpr std::size_t kLanes = 4;

    static reg set1(float v) { return vdupq_n_f32(v); }
    static reg zero() { return vdupq_n_f32(0.0F); }
    static reg load(const float* p) { return vld1q_f32(p); }
    static void store(float* p, reg v) { vst1q_f32(p, v); }
    // rem in 1..3, lane by lane (batch 1 is all tail).
    static reg load_part(const float* p, std::size_t rem) {
        reg v = vld1q_lane_f32(p, vdupq_n_f32(0.0F), 0);
        if (rem > 1) v = vld1q_lane_f32(p + 1, v, 1);
        if (rem > 2) v = vld1q_lane_f32(p + 2, v, 2);
        return v;
    }
    static void store_part(float* p, std::size_t rem, reg v) {
        vst1q_lane_f32(p, v, 0);
        if (rem > 1) vst1q_lane_f32(p + 1, v, 1);
        if (rem > 2) vst1q_lane_f32(p + 2, v, 2);
    }
    static reg add(reg a, reg b) { return vaddq_f32(a, b); }
    static reg sub(reg a, reg b) { return vsubq_f32(a, b); }
    static reg mul(reg a, reg b) { return vmulq_f32(a, b); }
    static reg min(reg a, reg b) { return vminq_f32(a, b); }
    static reg max(reg a, reg b) { return vmaxq_f32(a, b); }
    static reg fma(reg a, reg b, reg c) { return vfmaq_f32(c, a, b); }
    static reg fnma(reg a, reg b, reg c) { return vfmsq_f32(c, a, b); }
    static reg round(reg v) { return vrndnq_f32(v); }
    static reg ldexp(reg p, reg n) {
        const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
        return vmulq_f32(p, vreinterpretq_f32_s32(e));
    }
    static reg recip(reg d) { return vdivq_f32(vdupq_n_f32(1.0F), d); }
};

#include "cc/ndm/kernels_simd.hpp"

constexpr Kernels kNeon = SimdKernels<Neon>::table(Simd::neon, "neon");

}  // namespace

const Kernels* neon_kernels() noexcept { return &kNeon; }

#else

const Kernels* neon_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
