// AVX2 + FMA kernels: 8 connections per vector, two vectors per step for
// instruction-level parallelism, masked loads and stores for the batch tail.
// Every function carries target("avx2,fma"): the file is compiled at the
// library's baseline flags, and the table is only used when the CPU has both
// (see engine.cpp). exp is the Cephes expf polynomial (max relative error
// ~2 ulp); tanh is Cephes tanhf (odd polynomial below 0.625, 1 − 2/(e^2x + 1)
// above).
#include "cc/ndm/kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NDM_KERNELS_AVX2 1
#include <immintrin.h>
#endif

namespace ndm::cc::ndm {

#ifdef NDM_KERNELS_AVX2
namespace {

#define NDM_AVX2 __attribute__((target("avx2,fma")))

NDM_AVX2 inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3F)), _mm256_set1_ps(88.3F));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341F)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375F), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4F), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4F);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3F));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3F));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2F));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1F));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1F));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0F)));
    const __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

NDM_AVX2 inline __m256 sigmoid_ps(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0F);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

NDM_AVX2 inline __m256 tanh_ps(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0F);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3F);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2F));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2F));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1F));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1F));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    const __m256 one = _mm256_set1_ps(1.0F);
    const __m256 e = exp_ps(_mm256_add_ps(ax, ax));
    __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0F), _mm256_add_ps(e, one)));
    large = _mm256_or_ps(large, _mm256_and_ps(sign, x));
    return _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625F), _CMP_LT_OQ));
}

NDM_AVX2 inline __m256 activate(Act act, __m256 v) {
    switch (act) {
        case Act::sigmoid: return sigmoid_ps(v);
        case Act::tanh: return tanh_ps(v);
        case Act::relu: return _mm256_max_ps(v, _mm256_setzero_ps());
        case Act::linear: break;
    }
    return v;
}

// Lanes [0, rem) of a vector, rem in 1..7.
NDM_AVX2 inline __m256i tail_mask(std::size_t rem) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

NDM_AVX2 void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
                    const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m256 a0 = _mm256_set1_ps(b[o]);
            __m256 a1 = a0;
            for (std::size_t k = 0; k < in; ++k) {
                const __m256 wk = _mm256_set1_ps(wo[k]);
                a0 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x + k * xs + i), a0);
                a1 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x + k * xs + i + 8), a1);
            }
            _mm256_storeu_ps(y + o * ys + i, activate(act, a0));
            _mm256_storeu_ps(y + o * ys + i + 8, activate(act, a1));
        }
    }
    for (; i < n; i += 8) {
        const bool full = i + 8 <= n;
        const __m256i m = full ? _mm256_set1_epi32(-1) : tail_mask(n - i);
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m256 a = _mm256_set1_ps(b[o]);
            for (std::size_t k = 0; k < in; ++k) {
                a = _mm256_fmadd_ps(_mm256_set1_ps(wo[k]), _mm256_maskload_ps(x + k * xs + i, m), a);
            }
            _mm256_maskstore_ps(y + o * ys + i, m, activate(act, a));
        }
    }
}

NDM_AVX2 void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
         std::size_t hs, std::size_t n) {
    const __m256 one = _mm256_set1_ps(1.0F);
    for (std::size_t j = 0; j < hidden; ++j) {
        const float* ir = gi + j * s;
        const float* iz = gi + (hidden + j) * s;
        const float* in = gi + (2 * hidden + j) * s;
        const float* hr = gh + j * s;
        const float* hz = gh + (hidden + j) * s;
        const float* hn = gh + (2 * hidden + j) * s;
        float* hj = h + j * hs;
        for (std::size_t i = 0; i < n; i += 8) {
            const __m256i m = i + 8 <= n ? _mm256_set1_epi32(-1) : tail_mask(n - i);
            const __m256 r = sigmoid_ps(
                _mm256_add_ps(_mm256_maskload_ps(ir + i, m), _mm256_maskload_ps(hr + i, m)));
            const __m256 z = sigmoid_ps(
                _mm256_add_ps(_mm256_maskload_ps(iz + i, m), _mm256_maskload_ps(hz + i, m)));
            const __m256 c = tanh_ps(
                _mm256_fmadd_ps(r, _mm256_maskload_ps(hn + i, m), _mm256_maskload_ps(in + i, m)));
            const __m256 hv = _mm256_maskload_ps(hj + i, m);
            _mm256_maskstore_ps(hj + i, m,
                                _mm256_fmadd_ps(_mm256_sub_ps(one, z), c, _mm256_mul_ps(z, hv)));
        }
    }
}

constexpr Kernels kAvx2{Simd::avx2, "avx2", dense, gru};

}  // namespace

const Kernels* avx2_kernels() noexcept { return &kAvx2; }

#else

const Kernels* avx2_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
