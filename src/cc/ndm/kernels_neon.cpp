// NEON kernels for arm64 (4 connections per vector, FMA), compiled only on
// aarch64 where NEON is baseline; elsewhere the table is absent. Same Cephes
// exp/tanh as kernels_avx2.cpp. The batch tail (n mod 4 lanes) is computed
// with libm like the scalar reference, which is within the same tolerance.
// Not built or run on the x86-64 development machines.
#include "cc/ndm/kernels.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>
#endif

namespace ndm::cc::ndm {

#if defined(__aarch64__)
namespace {

inline float32x4_t exp_ps(float32x4_t x) {
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3F)), vdupq_n_f32(88.3F));
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341F));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375F));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4F));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4F);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3F), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3F), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2F), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1F), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1F), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0F)), p, vmulq_f32(r, r));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

inline float32x4_t sigmoid_ps(float32x4_t x) {
    const float32x4_t one = vdupq_n_f32(1.0F);
    return vdivq_f32(one, vaddq_f32(one, exp_ps(vnegq_f32(x))));
}

inline float32x4_t tanh_ps(float32x4_t x) {
    const float32x4_t ax = vabsq_f32(x);
    const float32x4_t z = vmulq_f32(x, x);
    float32x4_t p = vdupq_n_f32(-5.70498872745e-3F);
    p = vfmaq_f32(vdupq_n_f32(2.06390887954e-2F), p, z);
    p = vfmaq_f32(vdupq_n_f32(-5.37397155531e-2F), p, z);
    p = vfmaq_f32(vdupq_n_f32(1.33314422036e-1F), p, z);
    p = vfmaq_f32(vdupq_n_f32(-3.33332819422e-1F), p, z);
    const float32x4_t small = vfmaq_f32(x, vmulq_f32(p, z), x);
    const float32x4_t one = vdupq_n_f32(1.0F);
    const float32x4_t e = exp_ps(vaddq_f32(ax, ax));
    const float32x4_t large_abs = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.0F), vaddq_f32(e, one)));
    const float32x4_t large = vbslq_f32(vdupq_n_u32(0x80000000U), x, large_abs);
    return vbslq_f32(vcltq_f32(ax, vdupq_n_f32(0.625F)), small, large);
}

inline float32x4_t activate(Act act, float32x4_t v) {
    switch (act) {
        case Act::sigmoid: return sigmoid_ps(v);
        case Act::tanh: return tanh_ps(v);
        case Act::relu: return vmaxq_f32(v, vdupq_n_f32(0.0F));
        case Act::linear: break;
    }
    return v;
}

float activate1(Act act, float v) {
    switch (act) {
        case Act::sigmoid: return 1.0F / (1.0F + std::exp(-v));
        case Act::tanh: return std::tanh(v);
        case Act::relu: return v > 0.0F ? v : 0.0F;
        case Act::linear: break;
    }
    return v;
}

void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
           const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
    const std::size_t n4 = n & ~std::size_t{3};
    for (std::size_t o = 0; o < out; ++o) {
        const float* wo = w + o * in;
        for (std::size_t i = 0; i < n4; i += 4) {
            float32x4_t a = vdupq_n_f32(b[o]);
            for (std::size_t k = 0; k < in; ++k) a = vfmaq_n_f32(a, vld1q_f32(x + k * xs + i), wo[k]);
            vst1q_f32(y + o * ys + i, activate(act, a));
        }
        for (std::size_t i = n4; i < n; ++i) {
            float a = b[o];
            for (std::size_t k = 0; k < in; ++k) a += wo[k] * x[k * xs + i];
            y[o * ys + i] = activate1(act, a);
        }
    }
}

void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
         std::size_t hs, std::size_t n) {
    const std::size_t n4 = n & ~std::size_t{3};
    const float32x4_t one = vdupq_n_f32(1.0F);
    for (std::size_t j = 0; j < hidden; ++j) {
        const float* ir = gi + j * s;
        const float* iz = gi + (hidden + j) * s;
        const float* in = gi + (2 * hidden + j) * s;
        const float* hr = gh + j * s;
        const float* hz = gh + (hidden + j) * s;
        const float* hn = gh + (2 * hidden + j) * s;
        float* hj = h + j * hs;
        for (std::size_t i = 0; i < n4; i += 4) {
            const float32x4_t r = sigmoid_ps(vaddq_f32(vld1q_f32(ir + i), vld1q_f32(hr + i)));
            const float32x4_t z = sigmoid_ps(vaddq_f32(vld1q_f32(iz + i), vld1q_f32(hz + i)));
            const float32x4_t c = tanh_ps(vfmaq_f32(vld1q_f32(in + i), r, vld1q_f32(hn + i)));
            vst1q_f32(hj + i, vfmaq_f32(vmulq_f32(z, vld1q_f32(hj + i)), vsubq_f32(one, z), c));
        }
        for (std::size_t i = n4; i < n; ++i) {
            const float r = activate1(Act::sigmoid, ir[i] + hr[i]);
            const float z = activate1(Act::sigmoid, iz[i] + hz[i]);
            const float c = std::tanh(in[i] + r * hn[i]);
            hj[i] = (1.0F - z) * c + z * hj[i];
        }
    }
}

constexpr Kernels kNeon{Simd::neon, "neon", dense, gru};

}  // namespace

const Kernels* neon_kernels() noexcept { return &kNeon; }

#else

const Kernels* neon_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
