// CRC32C (Castagnoli; RFC 3720 §B.4): reflected polynomial 0x82F63B78, initial
// value ~0, final xor ~0. check value crc32c("123456789") = 0xE3069283.
//
// Chaining convention: the crc argument is a previously *returned* (finalized)
// value, so crc32c(b, crc32c(a)) == crc32c(a ++ b); the default 0 starts a new
// checksum (0 un-finalizes to the standard initial state ~0).
#include "transport/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
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

#ifdef NDM_CRC32C_HAVE_SSE42_PATH
// The crc32 instruction computes exactly this reflected CRC32C step; compiled
// for SSE4.2 only here so the rest of the binary runs on any x86-64.
__attribute__((target("sse4.2"))) std::uint32_t sse42_raw(std::uint32_t c, const std::uint8_t* p,
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
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

bool cpu_has_sse42() {
    __builtin_cpu_init();  // harmless when already done; required before use in static init
    return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::uint8_t> data, std::uint32_t crc) {
    return ~portable_raw(~crc, data.data(), data.size());
}

std::uint32_t crc32c(std::span<const std::uint8_t> data, std::uint32_t crc) {
#ifdef NDM_CRC32C_HAVE_SSE42_PATH
    static const bool have_sse42 = cpu_has_sse42();
    if (have_sse42) return ~sse42_raw(~crc, data.data(), data.size());
#endif
    return crc32c_portable(data, crc);
}

}  // namespace ndm::wire
