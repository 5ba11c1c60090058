// SSE4.2 kernels: 4 connections per vector, the shared loops of
// kernels_simd.hpp (SSE4.1 round; no FMA, so mul + add in the scalar order).
// SSE has no masked loads: the batch tail is loaded lane by lane.
// Every function carries target("sse4.2"); the table is only used when the
// CPU has it.
#include "cc/ndm/kernels.hpp"

#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NDM_KERNELS_SSE42 1
#include <immintrin.h>
#endif

namespace ndm::cc::ndm {

#ifdef NDM_KERNELS_SSE42
namespace {

#define NDM_SIMD_TARGET __attribute__((target("sse4.2")))

struct Sse42 {
    using reg = __m128;
    static constexpr std::size_t kLanes = 4;

    NDM_SIMD_TARGET static reg set1(float v) { return _mm_set1_ps(v); }
    NDM_SIMD_TARGET static reg zero() { return _mm_setzero_ps(); }
    NDM_SIMD_TARGET static reg load(const float* p) { return _mm_loadu_ps(p); }
    NDM_SIMD_TARGET static void store(float* p, reg v) { _mm_storeu_ps(p, v); }
    // rem in 1..3, without a memcpy call (batch 1 is all tail).
    NDM_SIMD_TARGET static reg load_part(const float* p, std::size_t rem) {
        // movlps, not movsd: _mm_load_sd dereferences a double*, which p
        // (4-byte aligned) is not.
        const reg lo = rem == 1 ? _mm_load_ss(p) : _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(p));
        return rem == 3 ? _mm_movelh_ps(lo, _mm_load_ss(p + 2)) : lo;
    }
    NDM_SIMD_TARGET static void store_part(float* p, std::size_t rem, reg v) {
        if (rem == 1) {
            _mm_store_ss(p, v);
            return;
        }
        _mm_storel_pi(reinterpret_cast<__m64*>(p), v);
        if (rem == 3) _mm_store_ss(p + 2, _mm_movehl_ps(v, v));
    }
    NDM_SIMD_TARGET static reg add(reg a, reg b) { return _mm_add_ps(a, b); }
    NDM_SIMD_TARGET static reg sub(reg a, reg b) { return _mm_sub_ps(a, b); }
    NDM_SIMD_TARGET static reg mul(reg a, reg b) { return _mm_mul_ps(a, b); }
    NDM_SIMD_TARGET static reg min(reg a, reg b) { return _mm_min_ps(a, b); }
    NDM_SIMD_TARGET static reg max(reg a, reg b) { return _mm_max_ps(a, b); }
    NDM_SIMD_TARGET static reg fma(reg a, reg b, reg c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
    NDM_SIMD_TARGET static reg fnma(reg a, reg b, reg c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }
    NDM_SIMD_TARGET static reg round(reg v) { return _mm_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    NDM_SIMD_TARGET static reg ldexp(reg p, reg n) {
        const __m128i e = _mm_slli_epi32(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)), 23);
        return _mm_mul_ps(p, _mm_castsi128_ps(e));
    }
    NDM_SIMD_TARGET static reg recip(reg d) {
        const reg r = _mm_rcp_ps(d);
        return _mm_mul_ps(r, _mm_sub_ps(_mm_set1_ps(2.0F), _mm_mul_ps(d, r)));
    }
};

#include "cc/ndm/kernels_simd.hpp"

constexpr Kernels kSse42 = SimdKernels<Sse42>::table(Simd::sse42, "sse42");

}  // namespace

const Kernels* sse42_kernels() noexcept { return &kSse42; }

#else

const Kernels* sse42_kernels() noexcept { return nullptr; }

#endif

}  // namespace ndm::cc::ndm
