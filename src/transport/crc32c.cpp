// CRC32C (Castagnoli; RFC 3720 §B.4): reflected polynomial 0x82F63B78, initial
// value ~0, final xor ~0. check value crc32c("123456789") = 0xE3069283.
//
// Chaining convention: the crc argument is a previously *returned* (finalized)
// value, so crc32c(b, crc32c(a)) == crc32c(a ++ b); the default 0 starts a new
// checksum (0 un-finalizes to the standard initial state ~0).
//
// Speed: the crc32 instruction has a 3-cycle latency but issues every cycle, so
// one dependent chain runs at a third of the machine's rate. For longer
// buffers three chains run over three equal stripes and are joined with
// carry-less multiplications (the approach of Intel's "Fast CRC Computation
// for iSCSI Polynomial Using CRC32 Instruction", 2011).
#include "transport/crc32c.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <wmmintrin.h>
#define NDM_CRC32C_HAVE_SSE42_PATH 1
#endif

namespace ndm::wire {

namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u;

// table[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
    std::array<std::array<std::uint32_t, 256>, 8> t{};
    for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t c = b;
        for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
        t[0][b] = c;
    }
    for (std::size_t k = 1; k < 8; ++k)
        for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    return t;
}

constexpr auto kTables = make_tables();

std::uint64_t load_le64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

std::uint32_t portable_raw(std::uint32_t c, const std::uint8_t* p, std::size_t n) {
    while (n >= 8) {
        const std::uint64_t w = load_le64(p) ^ c;
        c = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
            kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^
            kTables[2][(w >> 40) & 0xff] ^ kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
    return c;
}

std::uint32_t crc32c_portable_impl(std::span<const std::uint8_t> data, std::uint32_t crc) {
    return ~portable_raw(~crc, data.data(), data.size());
}

#ifdef NDM_CRC32C_HAVE_SSE42_PATH

// Polynomials mod P in the reflected form the CRC register uses: bit i holds
// the coefficient of x^(31-i), so 1 is 0x80000000 and multiplying by x is a
// right shift (reducing x^32 to the polynomial).
constexpr std::uint32_t gf_mulx(std::uint32_t a) { return (a >> 1) ^ ((a & 1u) ? kPoly : 0u); }

constexpr std::uint32_t gf_mul(std::uint32_t a, std::uint32_t b) {
    std::uint32_t p = 0;
    for (int i = 0; i < 32; ++i) {  // b holds (original b)·x^i here
        if (a & (0x80000000u >> i)) p ^= b;
        b = gf_mulx(b);
    }
    return p;
}

constexpr std::uint32_t gf_xpow(unsigned e) {
    std::uint32_t r = 0x80000000u;
    while (e--) r = gf_mulx(r);
    return r;
}

// Stripes of up to kMaxWords 8-byte words; longer buffers take several blocks.
constexpr std::size_t kMaxWords = 512;
// Below this the join (≈ 15 cycles) is not repaid: the serial loop runs
// (measured: 3-way is ahead from 72 bytes on, clearly from 96).
constexpr std::size_t kMin3Way = 96;

// Shifting a register c over m zero bytes is c·x^(8m) mod P. With
// PCLMULQDQ: the 64-bit carry-less product of c and K reads, as a CRC input
// word, as x·c·K, and crc32(0, word) multiplies by x^32 and reduces, giving
// c·K·x^33. So K = x^(8m - 33); k2 shifts over two stripes, k1 over one.
struct alignas(16) ShiftPair {
    std::uint64_t k2, k1;
};
constexpr std::array<ShiftPair, kMaxWords + 1> make_shift_table() {
    std::array<ShiftPair, kMaxWords + 1> t{};
    const std::uint32_t x64 = gf_xpow(64), x128 = gf_mul(x64, x64);
    std::uint32_t k1 = gf_xpow(64 - 33), k2 = gf_xpow(128 - 33);
    for (std::size_t w = 1; w <= kMaxWords; ++w) {
        t[w] = {k2, k1};
        k1 = gf_mul(k1, x64);
        k2 = gf_mul(k2, x128);
    }
    return t;
}
constexpr auto kShift = make_shift_table();

// The crc32 instruction computes exactly this reflected CRC32C step; compiled
// for SSE4.2 only here so the rest of the binary runs on any x86-64.
__attribute__((target("sse4.2"))) inline std::uint32_t sse42_serial_raw(std::uint32_t c, const std::uint8_t* p,
                                                                        std::size_t n) {
    std::uint64_t c64 = c;
    while (n >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);  // unaligned-safe load; x86 is little-endian
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        n -= 8;
    }
    auto c32 = static_cast<std::uint32_t>(c64);
    if (n >= 4) {
        std::uint32_t w;
        std::memcpy(&w, p, 4);
        c32 = _mm_crc32_u32(c32, w);
        p += 4;
        n -= 4;
    }
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

__attribute__((target("sse4.2,pclmul"))) std::uint32_t sse42_3way_raw(std::uint32_t c, const std::uint8_t* p,
                                                                      std::size_t n) {
    while (n >= kMin3Way) {
        const std::size_t words = std::min(n / 24, kMaxWords);
        const std::size_t stripe = words * 8;
        std::uint64_t c0 = c, c1 = 0, c2 = 0;
        for (const std::uint8_t *q = p, *end = p + stripe; q != end; q += 8) {
            std::uint64_t w0, w1, w2;
            std::memcpy(&w0, q, 8);
            std::memcpy(&w1, q + stripe, 8);
            std::memcpy(&w2, q + 2 * stripe, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
        }
        // crc(A‖B‖C) = shift(c0, |B|+|C|) ^ shift(c1, |C|) ^ c2 (the raw CRC is linear).
        const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(&kShift[words]));
        const __m128i x = _mm_set_epi64x(static_cast<long long>(c1), static_cast<long long>(c0));
        const __m128i prod = _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
        c = static_cast<std::uint32_t>(c2) ^
            static_cast<std::uint32_t>(_mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(prod))));
        p += 3 * stripe;
        n -= 3 * stripe;
    }
    return sse42_serial_raw(c, p, n);
}

std::uint32_t crc32c_sse42_serial(std::span<const std::uint8_t> data, std::uint32_t crc) {
    return ~sse42_serial_raw(~crc, data.data(), data.size());
}

std::uint32_t crc32c_sse42_3way(std::span<const std::uint8_t> data, std::uint32_t crc) {
    return ~sse42_3way_raw(~crc, data.data(), data.size());
}

#endif  // NDM_CRC32C_HAVE_SSE42_PATH

struct Registry {
    std::array<Crc32cImpl, 3> impls{};
    std::size_t count = 0;
    Crc32cImpl best{};
};

Registry detect() {
    Registry r;
    r.impls[r.count++] = {"portable", &crc32c_portable_impl};
#ifdef NDM_CRC32C_HAVE_SSE42_PATH
    __builtin_cpu_init();  // harmless when already done; required before use in static init
    if (__builtin_cpu_supports("sse4.2")) {
        r.impls[r.count++] = {"sse42", &crc32c_sse42_serial};
        if (__builtin_cpu_supports("pclmul")) r.impls[r.count++] = {"sse42-3way", &crc32c_sse42_3way};
    }
#endif
    r.best = r.impls[r.count - 1];
    return r;
}

const Registry& registry() {
    static const Registry r = detect();
    return r;
}

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::uint8_t> data, std::uint32_t crc) {
    return crc32c_portable_impl(data, crc);
}

std::uint32_t crc32c(std::span<const std::uint8_t> data, std::uint32_t crc) {
    static const auto fn = registry().best.fn;
    return fn(data, crc);
}

std::span<const Crc32cImpl> crc32c_implementations() {
    const Registry& r = registry();
    return {r.impls.data(), r.count};
}

}  // namespace ndm::wire
