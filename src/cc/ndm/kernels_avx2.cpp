// AVX2 + FMA kernels: 8 connections per vector, 4 output rows × two vectors
// per step (register blocking), masked loads and stores for the batch tail.
// Every function carries target("avx2,fma"): the file is compiled at the
// library's baseline flags, and the table is only used when the CPU has both
// (see engine.cpp). exp is the Cephes expf polynomial (max relative error
// ~2 ulp), tanh a rational approximation (below), 1/x vrcpps + Newton.
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

// 1/d: vrcpps (12 bits) and one Newton step (~23 bits), a third of the cost
// of vdivps. d ≤ 1 + e^87.3 < 2^126 where it matters, so vrcpps never flushes.
NDM_AVX2 inline __m256 recip(__m256 d) {
    const __m256 r = _mm256_rcp_ps(d);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0F)));
}

NDM_AVX2 inline __m256 sigmoid_ps(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0F);
    return recip(_mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// tanh as the rational function x·P(x²)/Q(x²) (degrees 13/6) on x clamped
// to ±7.905 (Eigen's ptanh_float coefficients): max relative error 2.6e-7
// against libm, and half the work of the exp-based form.
NDM_AVX2 inline __m256 tanh_ps(__m256 x) {
    const __m256 lim = _mm256_set1_ps(7.90531110763549805F);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim);
    const __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-2.76076847742355e-16F);
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.00018790482477e-13F));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-8.60467152213735e-11F));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(5.12229709037114e-08F));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(1.48572235717979e-05F));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(6.37261928875436e-04F));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(4.89352455891786e-03F));
    __m256 q = _mm256_set1_ps(1.19825839466702e-06F);
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(1.18534705686654e-04F));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(2.26843463243900e-03F));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(4.89352518554385e-03F));
    return _mm256_mul_ps(_mm256_mul_ps(p, x), recip(q));
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
        std::size_t o = 0;
        // 4 output rows × 16 lanes: each x load feeds 4 FMAs and each weight
        // broadcast 2, so the loop is bound by FMA throughput, not loads.
        for (; o + 4 <= out; o += 4) {
            const float* w0 = w + o * in;
            const float* w1 = w0 + in;
            const float* w2 = w1 + in;
            const float* w3 = w2 + in;
            __m256 a00 = _mm256_set1_ps(b[o]);
            __m256 a10 = _mm256_set1_ps(b[o + 1]);
            __m256 a20 = _mm256_set1_ps(b[o + 2]);
            __m256 a30 = _mm256_set1_ps(b[o + 3]);
            __m256 a01 = a00;
            __m256 a11 = a10;
            __m256 a21 = a20;
            __m256 a31 = a30;
            for (std::size_t k = 0; k < in; ++k) {
                const __m256 x0 = _mm256_loadu_ps(x + k * xs + i);
                const __m256 x1 = _mm256_loadu_ps(x + k * xs + i + 8);
                __m256 c = _mm256_set1_ps(w0[k]);
                a00 = _mm256_fmadd_ps(c, x0, a00);
                a01 = _mm256_fmadd_ps(c, x1, a01);
                c = _mm256_set1_ps(w1[k]);
                a10 = _mm256_fmadd_ps(c, x0, a10);
                a11 = _mm256_fmadd_ps(c, x1, a11);
                c = _mm256_set1_ps(w2[k]);
                a20 = _mm256_fmadd_ps(c, x0, a20);
                a21 = _mm256_fmadd_ps(c, x1, a21);
                c = _mm256_set1_ps(w3[k]);
                a30 = _mm256_fmadd_ps(c, x0, a30);
                a31 = _mm256_fmadd_ps(c, x1, a31);
            }
            float* yo = y + o * ys + i;
            _mm256_storeu_ps(yo, activate(act, a00));
            _mm256_storeu_ps(yo + 8, activate(act, a01));
            _mm256_storeu_ps(yo + ys, activate(act, a10));
            _mm256_storeu_ps(yo + ys + 8, activate(act, a11));
            _mm256_storeu_ps(yo + 2 * ys, activate(act, a20));
            _mm256_storeu_ps(yo + 2 * ys + 8, activate(act, a21));
            _mm256_storeu_ps(yo + 3 * ys, activate(act, a30));
            _mm256_storeu_ps(yo + 3 * ys + 8, activate(act, a31));
        }
        for (; o < out; ++o) {
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
    for (; i + 8 <= n; i += 8) {
        for (std::size_t o = 0; o < out; ++o) {
            const float* wo = w + o * in;
            __m256 a = _mm256_set1_ps(b[o]);
            for (std::size_t k = 0; k < in; ++k) {
                a = _mm256_fmadd_ps(_mm256_set1_ps(wo[k]), _mm256_loadu_ps(x + k * xs + i), a);
            }
            _mm256_storeu_ps(y + o * ys + i, activate(act, a));
        }
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
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

// One GRU step for the 8 lanes at offset i of row j.
NDM_AVX2 inline __m256 gru_lanes(__m256 ir, __m256 hr, __m256 iz, __m256 hz, __m256 in, __m256 hn,
                                 __m256 h) {
    const __m256 r = sigmoid_ps(_mm256_add_ps(ir, hr));
    const __m256 z = sigmoid_ps(_mm256_add_ps(iz, hz));
    const __m256 c = tanh_ps(_mm256_fmadd_ps(r, hn, in));
    // (1 − z)·c + z·h = c + z·(h − c)
    return _mm256_fmadd_ps(z, _mm256_sub_ps(h, c), c);
}

NDM_AVX2 void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
                  std::size_t hs, std::size_t n) {
    for (std::size_t j = 0; j < hidden; ++j) {
        const float* ir = gi + j * s;
        const float* iz = gi + (hidden + j) * s;
        const float* in = gi + (2 * hidden + j) * s;
        const float* hr = gh + j * s;
        const float* hz = gh + (hidden + j) * s;
        const float* hn = gh + (2 * hidden + j) * s;
        float* hj = h + j * hs;
        std::size_t i = 0;
        // Plain loads and stores for whole vectors: vmaskmovps stores are
        // microcoded on AMD cores.
        for (; i + 8 <= n; i += 8) {
            _mm256_storeu_ps(hj + i, gru_lanes(_mm256_loadu_ps(ir + i), _mm256_loadu_ps(hr + i),
                                               _mm256_loadu_ps(iz + i), _mm256_loadu_ps(hz + i),
                                               _mm256_loadu_ps(in + i), _mm256_loadu_ps(hn + i),
                                               _mm256_loadu_ps(hj + i)));
        }
        if (i < n) {
            const __m256i m = tail_mask(n - i);
            _mm256_maskstore_ps(
                hj + i, m,
                gru_lanes(_mm256_maskload_ps(ir + i, m), _mm256_maskload_ps(hr + i, m),
                          _mm256_maskload_ps(iz + i, m), _mm256_maskload_ps(hz + i, m),
                          _mm256_maskload_ps(in + i, m), _mm256_maskload_ps(hn + i, m),
                          _mm256_maskload_ps(hj + i, m)));
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
