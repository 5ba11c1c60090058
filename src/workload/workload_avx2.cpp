// The AVX2 code paths of the workload (src/workload/workload.cpp), which
// calls them where the CPU has AVX2 (__builtin_cpu_supports). This file alone
// is compiled with -mavx2 (CMakeLists.txt): xxHash's header then picks its
// AVX2 accumulator for StreamHash, 2.5x its SSE2 speed here (40 against
// 16 GB/s on 64 KiB chunks) with the same digests (XXH3's output does not
// depend on the vector path), and Payload's words are written (and checked)
// four at a time. Only these functions may be defined here: XXH_INLINE_ALL
// makes xxHash's functions static, the intrinsics and table_words are always
// inlined, so no code of this file can be picked by the linker for a CPU
// without AVX2.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ndm::workload::detail {

namespace {
// table[w mod 32 .. w+3 mod 32] (Payload::kTableWords), across the table's wrap.
[[gnu::always_inline]] inline __m256i table_words(const std::uint64_t* table, std::uint64_t w) {
    constexpr std::size_t kWords = 32;
    const std::size_t j = w % kWords;
    if (j <= kWords - 4) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + j));
    return _mm256_set_epi64x(static_cast<long long>(table[(w + 3) % kWords]),
                             static_cast<long long>(table[(w + 2) % kWords]),
                             static_cast<long long>(table[(w + 1) % kWords]), static_cast<long long>(table[j]));
}

// (w+i)*k for i = 0..3, given step = w*k.
[[gnu::always_inline]] inline __m256i word_steps(std::uint64_t step, std::uint64_t k) {
    return _mm256_set_epi64x(static_cast<long long>(step + 3 * k), static_cast<long long>(step + 2 * k),
                             static_cast<long long>(step + k), static_cast<long long>(step));
}
}  // namespace

void xxh3_update_avx2(void* state, const void* data, std::size_t size) {
    XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

// Payload's words w, w+1, ... (n of them, a multiple of 4: Payload::fill
// writes the rest) into out: table[w mod 32] ^ w*k, little-endian, with
// step = w*k.
void payload_words_avx2(const std::uint64_t* table, std::uint64_t w, std::uint64_t step, std::uint64_t k,
                        std::uint8_t* out, std::size_t n) {
    __m256i steps = word_steps(step, k);
    const __m256i k4 = _mm256_set1_epi64x(static_cast<long long>(4 * k));
    for (std::size_t i = 0; i + 4 <= n; i += 4, w += 4) {
        const __m256i t = table_words(table, w);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), _mm256_xor_si256(t, steps));
        steps = _mm256_add_epi64(steps, k4);
    }
}

// The index of the first group of four words of in (n of them, a multiple
// of 4) that differs from Payload's words w, w+1, ...; n where none does.
std::size_t payload_mismatch_avx2(const std::uint64_t* table, std::uint64_t w, std::uint64_t step, std::uint64_t k,
                                  const std::uint8_t* in, std::size_t n) {
    __m256i steps = word_steps(step, k);
    const __m256i k4 = _mm256_set1_epi64x(static_cast<long long>(4 * k));
    std::size_t i = 0;
    // Two groups (a cache line) a step, one branch for both.
    for (; i + 8 <= n; i += 8, w += 8) {
        // The bytes were written by the AEAD some time ago: ask for them a
        // few lines ahead, as XXH3's loop does.
        _mm_prefetch(reinterpret_cast<const char*>(in + 8 * i + 512), _MM_HINT_T0);
        const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i)),
                                           _mm256_xor_si256(table_words(table, w), steps));
        steps = _mm256_add_epi64(steps, k4);
        const __m256i b = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i + 32)),
                                           _mm256_xor_si256(table_words(table, w + 4), steps));
        steps = _mm256_add_epi64(steps, k4);
        if (!_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_set1_epi8(-1)))
            return _mm256_testz_si256(a, _mm256_set1_epi8(-1)) ? i + 4 : i;
    }
    if (i + 4 <= n) {
        const __m256i got = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i));
        if (!_mm256_testz_si256(_mm256_xor_si256(got, _mm256_xor_si256(table_words(table, w), steps)),
                                _mm256_set1_epi8(-1)))
            return i;
    }
    return n;
}

}  // namespace ndm::workload::detail

#endif
