// AVX2 + FMA kernels: 8 connections per vector, the shared loops of
// kernels_simd.hpp. Every function carries target("avx2,fma"): the file is
// compiled at the library's baseline flags, and the table is only used when
// the CPU has both (see engine.cpp). Masked loads and stores for the batch
// tail; 1/x is vrcpps + one Newton step, a third of the cost of vdivps.
#include "cc/ndm/kernels.hpp"

#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NDM_KERNELS_AVX2 1
#include <immintrin.h>
#endif

namespace ndm::cc::ndm {

#ifdef NDM_KERNELS_AVX2
namespace {

#define NDM_SIMD_TARGET __attribute__((target("avx2,fma")))

struct Avx2 {
    using reg = __m256;
    static constexpr std::size_t kLanes = 8;

    // Lanes [0, rem) of a vector, rem in 1..7.
    NDM_SIMD_TARGET static __m256i mask(std::size_t rem) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    NDM_SIMD_TARGET static reg set1(float v) { return _mm256_set1_ps(v); }
    NDM_SIMD_TARGET static reg zero() { return _mm256_setzero_ps(); }
    NDM_SIMD_TARGET static reg load(const float* p) { return _mm256_loadu_ps(p); }
    NDM_SIMD_TARGET static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
    NDM_SIMD_TARGET static reg load_part(const float* p, std::size_t rem) { return _mm256_maskload_ps(p, mask(rem)); }
    NDM_SIMD_TARGET static void store_part(float* p, std::size_t rem, reg v) { _mm256_maskstore_ps(p, mask(rem), v); }
    NDM_SIMD_TARGET static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
    NDM_SIMD_TARGET static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
    NDM_SIMD_TARGET static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
    NDM_SIMD_TARGET static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
    NDM_SIMD_TARGET static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
    NDM_SIMD_TARGET static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    NDM_SIMD_TARGET static reg fnma(reg a, reg b, reg c) { return _mm256_fnmadd_ps(a, b, c); }
    NDM_SIMD_TARGET static reg round(reg v) {
        return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    NDM_SIMD_TARGET static reg ldexp(reg p, reg n) {
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    }
    // d ≤ 1 + e^87.3 < 2^126 where it matters, so vrcpps never flushes.
    NDM_SIMD_TARGET static reg recip(reg d) {
        const reg r = _mm256_rcp_ps(d);
        return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0F)));
    }
};

#include "cc/ndm/kernels_simd.hpp"

constexpr Kernels kAvx2 = SimdKernels<Avx2>::table(Simd::avx2, "avx2");

}  // namespace

const Kernels* avx2_kernels() noexcept { return &kAvx2; }

#else

const Kernels* avx2_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
