// AVX-512F kernels: 16 connections per vector, 4 rows × two vectors per step, mask registers
// for the batch tail. Compiled only by compilers that know the target (GCC
// and Clang on x86-64); every function carries target("avx512f,avx2,fma")
// and the table is only used when the CPU reports avx512f (engine.cpp).
// Same exp/tanh as kernels_avx2.cpp; 2^n applied with vscalefps.
#include "cc/ndm/kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NDM_KERNELS_AVX512 1
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports _mm512_undefined_ps() (the intrinsics' own "don't care"
// operand) as maybe-uninitialized once inlined: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

namespace ndm::cc::ndm {

#ifdef NDM_KERNELS_AVX512
namespace {

#define NDM_AVX512 __attribute__((target("avx512f,avx2,fma")))

NDM_AVX512 inline __m512 exp_ps(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3F)), _mm512_set1_ps(88.3F));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341F)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375F), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4F), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4F);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3F));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3F));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2F));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1F));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1F));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0F)));
    return _mm512_scalef_ps(p, n);
}

// 1/d: vrcp14ps and one Newton step (~28 bits) instead of vdivps.
NDM_AVX512 inline __m512 recip(__m512 d) {
    const __m512 r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0F)));
}

NDM_AVX512 inline __m512 sigmoid_ps(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0F);
    return recip(_mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

// Rational tanh on x clamped to ±7.905, as kernels_avx2.cpp.
NDM_AVX512 inline __m512 tanh_ps(__m512 x) {
    const __m512 lim = _mm512_set1_ps(7.90531110763549805F);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
    const __m512 x2 = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-2.76076847742355e-16F);
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.00018790482477e-13F));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-8.60467152213735e-11F));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(5.12229709037114e-08F));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(1.48572235717979e-05F));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(6.37261928875436e-04F));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(4.89352455891786e-03F));
    __m512 q = _mm512_set1_ps(1.19825839466702e-06F);
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.18534705686654e-04F));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(2.26843463243900e-03F));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(4.89352518554385e-03F));
    return _mm512_mul_ps(_mm512_mul_ps(p, x), recip(q));
}

NDM_AVX512 inline __m512 activate(Act act, __m512 v) {
    switch (act) {
        case Act::sigmoid: return sigmoid_ps(v);
        case Act::tanh: return tanh_ps(v);
        case Act::relu: return _mm512_max_ps(v, _mm512_setzero_ps());
        case Act::linear: break;
    }
    return v;
}

NDM_AVX512 void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
                      const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        std::size_t o = 0;
        // 4 output rows × 32 lanes per step, as in kernels_avx2.cpp.
        for (; o + 4 <= out; o += 4) {
            const float* w0 = w + o * in;
            const float* w1 = w0 + in;
            const float* w2 = w1 + in;
            const float* w3 = w2 + in;
            __m512 a00 = _mm512_set1_ps(b[o]);
            __m512 a10 = _mm512_set1_ps(b[o + 1]);
            __m512 a20 = _mm512_set1_ps(b[o + 2]);
            __m512 a30 = _mm512_set1_ps(b[o + 3]);
            __m512 a01 = a00;
            __m512 a11 = a10;
            __m512 a21 = a20;
            __m512 a31 = a30;
            for (std::size_t k = 0; k < in; ++k) {
                const __m512 x0 = _mm512_loadu_ps(x + k * xs + i);
                const __m512 x1 = _mm512_loadu_ps(x + k * xs + i + 16);
                __m512 c = _mm512_set1_ps(w0[k]);
                a00 = _mm512_fmadd_ps(c, x0, a00);
                a01 = _mm512_fmadd_ps(c, x1, a01);
                c = _mm512_set1_ps(w1[k]);
                a10 = _mm512_fmadd_ps(c, x0, a10);
                a11 = _mm512_fmadd_ps(c, x1, a11);
                c = _mm512_set1_ps(w2[k]);
                a20 = _mm512_fmadd_ps(c, x0, a20);
                a21 = _mm512_fmadd_ps(c, x1, a21);
                c = _mm512_set1_ps(w3[k]);
                a30 = _mm512_fmadd_ps(c, x0, a30);
                a31 = _mm512_fmadd_ps(c, x1, a31);
            }
            float* yo = y + o * ys + i;
            _mm512_storeu_ps(yo, activate(act, a00));
            _mm512_storeu_ps(yo + 16, activate(act, a01));
            _mm512_storeu_ps(yo + ys, activate(act, a10));
            _mm512_storeu_ps(yo + ys + 16, activate(act, a11));
            _mm512_storeu_ps(yo + 2 * ys, activate(act, a20));
            _mm512_storeu_ps(yo + 2 * ys + 16, activate(act, a21));
            _mm512_storeu_ps(yo + 3 * ys, activate(act, a30));
            _mm512_storeu_ps(yo + 3 * ys + 16, activate(act, a31));
        }
        for (; o < out; ++o) {
            const float* wo = w + o * in;
            __m512 a0 = _mm512_set1_ps(b[o]);
            __m512 a1 = a0;
            for (std::size_t k = 0; k < in; ++k) {
                const __m512 wk = _mm512_set1_ps(wo[k]);
                a0 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(x + k * xs + i), a0);
                a1 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(x + k * xs + i + 16), a1);
            }
            _mm512_storeu_ps(y + o * ys + i, activate(act, a0));
            _mm512_storeu_ps(y + o * ys + i + 16, activate(act, a1));
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 m = i + 16 <= n ? static_cast<__mmask16>(0xFFFF)
                                        : static_cast<__mmask16>((1U << (n - i)) - 1);
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m512 a = _mm512_set1_ps(b[o]);
            for (std::size_t k = 0; k < in; ++k) {
                a = _mm512_fmadd_ps(_mm512_set1_ps(wo[k]), _mm512_maskz_loadu_ps(m, x + k * xs + i),
                                    a);
            }
            _mm512_mask_storeu_ps(y + o * ys + i, m, activate(act, a));
        }
    }
}

NDM_AVX512 void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
                    std::size_t hs, std::size_t n) {
    for (std::size_t j = 0; j < hidden; ++j) {
        const float* ir = gi + j * s;
        const float* iz = gi + (hidden + j) * s;
        const float* in = gi + (2 * hidden + j) * s;
        const float* hr = gh + j * s;
        const float* hz = gh + (hidden + j) * s;
        const float* hn = gh + (2 * hidden + j) * s;
        float* hj = h + j * hs;
        for (std::size_t i = 0; i < n; i += 16) {
            const __mmask16 m = i + 16 <= n ? static_cast<__mmask16>(0xFFFF)
                                            : static_cast<__mmask16>((1U << (n - i)) - 1);
            const __m512 r = sigmoid_ps(
                _mm512_add_ps(_mm512_maskz_loadu_ps(m, ir + i), _mm512_maskz_loadu_ps(m, hr + i)));
            const __m512 z = sigmoid_ps(
                _mm512_add_ps(_mm512_maskz_loadu_ps(m, iz + i), _mm512_maskz_loadu_ps(m, hz + i)));
            const __m512 c = tanh_ps(_mm512_fmadd_ps(r, _mm512_maskz_loadu_ps(m, hn + i),
                                                     _mm512_maskz_loadu_ps(m, in + i)));
            const __m512 hv = _mm512_maskz_loadu_ps(m, hj + i);
            // (1 − z)·c + z·h = c + z·(h − c)
            _mm512_mask_storeu_ps(hj + i, m, _mm512_fmadd_ps(z, _mm512_sub_ps(hv, c), c));
        }
    }
}

constexpr Kernels kAvx512{Simd::avx512, "avx512", dense, gru};

}  // namespace

const Kernels* avx512_kernels() noexcept { return &kAvx512; }

#else

const Kernels* avx512_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
