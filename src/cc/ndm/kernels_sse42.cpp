// SSE4.2 kernels: 4 connections per vector (SSE4.1 round/blend; no FMA, so
// mul + add in the scalar order). SSE has no masked loads: the batch tail is
// copied into a zero-padded block and run through the same vector code, so
// every lane of a batch gets the same arithmetic. Every function carries
// target("sse4.2"); the table is only used when the CPU has it. Same Cephes
// exp/tanh approximations as the AVX2 kernels (kernels_avx2.cpp).
#include "cc/ndm/kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NDM_KERNELS_SSE42 1
#include <algorithm>
#include <array>

#include <immintrin.h>
#endif

namespace ndm::cc::ndm {

#ifdef NDM_KERNELS_SSE42
namespace {

#define NDM_SSE42 __attribute__((target("sse4.2")))

NDM_SSE42 inline __m128 madd(__m128 a, __m128 b, __m128 c) {
    return _mm_add_ps(_mm_mul_ps(a, b), c);
}

NDM_SSE42 inline __m128 exp_ps(__m128 x) {
    x = _mm_min_ps(_mm_max_ps(x, _mm_set1_ps(-87.3F)), _mm_set1_ps(88.3F));
    const __m128 n = _mm_round_ps(_mm_mul_ps(x, _mm_set1_ps(1.44269504088896341F)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m128 r = _mm_sub_ps(x, _mm_mul_ps(n, _mm_set1_ps(0.693359375F)));
    r = _mm_sub_ps(r, _mm_mul_ps(n, _mm_set1_ps(-2.12194440e-4F)));
    __m128 p = _mm_set1_ps(1.9875691500e-4F);
    p = madd(p, r, _mm_set1_ps(1.3981999507e-3F));
    p = madd(p, r, _mm_set1_ps(8.3334519073e-3F));
    p = madd(p, r, _mm_set1_ps(4.1665795894e-2F));
    p = madd(p, r, _mm_set1_ps(1.6666665459e-1F));
    p = madd(p, r, _mm_set1_ps(5.0000001201e-1F));
    p = madd(p, _mm_mul_ps(r, r), _mm_add_ps(r, _mm_set1_ps(1.0F)));
    const __m128i e =
        _mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23);
    return _mm_mul_ps(p, _mm_castsi128_ps(e));
}

NDM_SSE42 inline __m128 sigmoid_ps(__m128 x) {
    const __m128 one = _mm_set1_ps(1.0F);
    return _mm_div_ps(one, _mm_add_ps(one, exp_ps(_mm_sub_ps(_mm_setzero_ps(), x))));
}

NDM_SSE42 inline __m128 tanh_ps(__m128 x) {
    const __m128 sign = _mm_set1_ps(-0.0F);
    const __m128 ax = _mm_andnot_ps(sign, x);
    const __m128 z = _mm_mul_ps(x, x);
    __m128 p = _mm_set1_ps(-5.70498872745e-3F);
    p = madd(p, z, _mm_set1_ps(2.06390887954e-2F));
    p = madd(p, z, _mm_set1_ps(-5.37397155531e-2F));
    p = madd(p, z, _mm_set1_ps(1.33314422036e-1F));
    p = madd(p, z, _mm_set1_ps(-3.33332819422e-1F));
    const __m128 small = madd(_mm_mul_ps(p, z), x, x);
    const __m128 one = _mm_set1_ps(1.0F);
    const __m128 e = exp_ps(_mm_add_ps(ax, ax));
    __m128 large = _mm_sub_ps(one, _mm_div_ps(_mm_set1_ps(2.0F), _mm_add_ps(e, one)));
    large = _mm_or_ps(large, _mm_and_ps(sign, x));
    return _mm_blendv_ps(large, small, _mm_cmplt_ps(ax, _mm_set1_ps(0.625F)));
}

NDM_SSE42 inline __m128 activate(Act act, __m128 v) {
    switch (act) {
        case Act::sigmoid: return sigmoid_ps(v);
        case Act::tanh: return tanh_ps(v);
        case Act::relu: return _mm_max_ps(v, _mm_setzero_ps());
        case Act::linear: break;
    }
    return v;
}

// Whole blocks of 4 lanes: n4 is a multiple of 4.
NDM_SSE42 void dense_blocks(const float* w, const float* b, std::size_t in, std::size_t out,
                            Act act, const float* x, std::size_t xs, float* y, std::size_t ys,
                            std::size_t n4) {
    std::size_t i = 0;
    for (; i + 8 <= n4; i += 8) {
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m128 a0 = _mm_set1_ps(b[o]);
            __m128 a1 = a0;
            for (std::size_t k = 0; k < in; ++k) {
                const __m128 wk = _mm_set1_ps(wo[k]);
                a0 = madd(wk, _mm_loadu_ps(x + k * xs + i), a0);
                a1 = madd(wk, _mm_loadu_ps(x + k * xs + i + 4), a1);
            }
            _mm_storeu_ps(y + o * ys + i, activate(act, a0));
            _mm_storeu_ps(y + o * ys + i + 4, activate(act, a1));
        }
    }
    for (; i < n4; i += 4) {
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m128 a = _mm_set1_ps(b[o]);
            for (std::size_t k = 0; k < in; ++k) {
                a = madd(_mm_set1_ps(wo[k]), _mm_loadu_ps(x + k * xs + i), a);
            }
            _mm_storeu_ps(y + o * ys + i, activate(act, a));
        }
    }
}

NDM_SSE42 void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
                     const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
    const std::size_t n4 = n & ~std::size_t{3};
    dense_blocks(w, b, in, out, act, x, xs, y, ys, n4);
    if (n4 == n) return;
    const std::size_t rem = n - n4;
    // Only the rows in use are touched: zeroing whole buffers would cost more
    // than the arithmetic at batch 1.
    std::array<float, kMaxLayerWidth * 4> xb;
    std::array<float, kMaxLayerWidth * 4> yb;
    std::fill_n(xb.data(), in * 4, 0.0F);
    for (std::size_t k = 0; k < in; ++k) std::copy_n(x + k * xs + n4, rem, xb.data() + k * 4);
    dense_blocks(w, b, in, out, act, xb.data(), 4, yb.data(), 4, 4);
    for (std::size_t o = 0; o < out; ++o) std::copy_n(yb.data() + o * 4, rem, y + o * ys + n4);
}

NDM_SSE42 void gru_blocks(const float* gi, const float* gh, std::size_t hidden, float* h,
                          std::size_t gs, std::size_t hs, std::size_t n4) {
    const __m128 one = _mm_set1_ps(1.0F);
    for (std::size_t j = 0; j < hidden; ++j) {
        const float* ir = gi + j * gs;
        const float* iz = gi + (hidden + j) * gs;
        const float* in = gi + (2 * hidden + j) * gs;
        const float* hr = gh + j * gs;
        const float* hz = gh + (hidden + j) * gs;
        const float* hn = gh + (2 * hidden + j) * gs;
        float* hj = h + j * hs;
        for (std::size_t i = 0; i < n4; i += 4) {
            const __m128 r = sigmoid_ps(_mm_add_ps(_mm_loadu_ps(ir + i), _mm_loadu_ps(hr + i)));
            const __m128 z = sigmoid_ps(_mm_add_ps(_mm_loadu_ps(iz + i), _mm_loadu_ps(hz + i)));
            const __m128 c =
                tanh_ps(_mm_add_ps(_mm_loadu_ps(in + i), _mm_mul_ps(r, _mm_loadu_ps(hn + i))));
            const __m128 hv = _mm_loadu_ps(hj + i);
            _mm_storeu_ps(hj + i, _mm_add_ps(_mm_mul_ps(_mm_sub_ps(one, z), c), _mm_mul_ps(z, hv)));
        }
    }
}

NDM_SSE42 void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
         std::size_t hs, std::size_t n) {
    const std::size_t n4 = n & ~std::size_t{3};
    gru_blocks(gi, gh, hidden, h, s, hs, n4);
    if (n4 == n) return;
    const std::size_t rem = n - n4;
    std::array<float, kMaxLayerWidth * 3 * 4> ib;
    std::array<float, kMaxLayerWidth * 3 * 4> hb;
    std::array<float, kMaxLayerWidth * 4> sb;
    std::fill_n(ib.data(), 3 * hidden * 4, 0.0F);
    std::fill_n(hb.data(), 3 * hidden * 4, 0.0F);
    std::fill_n(sb.data(), hidden * 4, 0.0F);
    for (std::size_t r = 0; r < 3 * hidden; ++r) {
        std::copy_n(gi + r * s + n4, rem, ib.data() + r * 4);
        std::copy_n(gh + r * s + n4, rem, hb.data() + r * 4);
    }
    for (std::size_t j = 0; j < hidden; ++j) std::copy_n(h + j * hs + n4, rem, sb.data() + j * 4);
    gru_blocks(ib.data(), hb.data(), hidden, sb.data(), 4, 4, 4);
    for (std::size_t j = 0; j < hidden; ++j) std::copy_n(sb.data() + j * 4, rem, h + j * hs + n4);
}

constexpr Kernels kSse42{Simd::sse42, "sse42", dense, gru};

}  // namespace

const Kernels* sse42_kernels() noexcept { return &kSse42; }

#else

const Kernels* sse42_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
