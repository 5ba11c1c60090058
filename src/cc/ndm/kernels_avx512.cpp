// AVX-512F kernels: 16 connections per vector, the shared loops of
// kernels_simd.hpp, mask registers for the batch tail. Compiled only by
// compilers that know the target (GCC and Clang on x86-64); every function
// carries target("avx512f,avx2,fma") and the table is only used when the CPU
// reports avx512f (engine.cpp). 2^n applied with vscalefps; 1/x is
// vrcp14ps + one Newton step (~28 bits).
#include "cc/ndm/kernels.hpp"

#include <cstddef>

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

#define NDM_SIMD_TARGET __attribute__((target("avx512f,avx2,fma")))

struct Avx512 {
    using reg = __m512;
    static constexpr std::size_t kLanes = 16;

    NDM_SIMD_TARGET static __mmask16 mask(std::size_t rem) { return static_cast<__mmask16>((1U << rem) - 1); }
    NDM_SIMD_TARGET static reg set1(float v) { return _mm512_set1_ps(v); }
    NDM_SIMD_TARGET static reg zero() { return _mm512_setzero_ps(); }
    NDM_SIMD_TARGET static reg load(const float* p) { return _mm512_loadu_ps(p); }
    NDM_SIMD_TARGET static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
    NDM_SIMD_TARGET static reg load_part(const float* p, std::size_t rem) {
        return _mm512_maskz_loadu_ps(mask(rem), p);
    }
    NDM_SIMD_TARGET static void store_part(float* p, std::size_t rem, reg v) {
        _mm512_mask_storeu_ps(p, mask(rem), v);
    }
    NDM_SIMD_TARGET static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    NDM_SIMD_TARGET static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
    NDM_SIMD_TARGET static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
    NDM_SIMD_TARGET static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }
    NDM_SIMD_TARGET static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
    NDM_SIMD_TARGET static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
    NDM_SIMD_TARGET static reg fnma(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }
    NDM_SIMD_TARGET static reg round(reg v) {
        return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    NDM_SIMD_TARGET static reg ldexp(reg p, reg n) { return _mm512_scalef_ps(p, n); }
    NDM_SIMD_TARGET static reg recip(reg d) {
        const reg r = _mm512_rcp14_ps(d);
        return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0F)));
    }
};

#include "cc/ndm/kernels_simd.hpp"

constexpr Kernels kAvx512 = SimdKernels<Avx512>::table(Simd::avx512, "avx512");

}  // namespace

const Kernels* avx512_kernels() noexcept { return &kAvx512; }

#else

const Kernels* avx512_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
