// The workload's generator and hash (ndm/workload.hpp).
#include "ndm/workload.hpp"

#include <bit>
#include <cstring>
#include <new>

#include "util/rng.hpp"

#define XXH_INLINE_ALL  // header-only: no run-time dependency on libxxhash
#include <xxhash.h>

namespace ndm::workload {

namespace detail {
// workload_avx2.cpp
void xxh3_update_avx2(void* state, const void* data, std::size_t size);
void payload_words_avx2(const std::uint64_t* table, std::uint64_t w, std::uint64_t step, std::uint64_t k,
                        std::uint8_t* out, std::size_t n);  // n a multiple of 4
std::size_t payload_mismatch_avx2(const std::uint64_t* table, std::uint64_t w, std::uint64_t step, std::uint64_t k,
                                  const std::uint8_t* in, std::size_t n);  // n a multiple of 4
}  // namespace detail

namespace {

constexpr std::uint64_t kIndexStep = 0x9e3779b97f4a7c15ull;  // odd: w * K is a bijection of w

static_assert(sizeof(XXH3_state_t) == StreamHash::kStateBytes && alignof(XXH3_state_t) <= 64,
              "StreamHash reserves room for xxHash's XXH3 state");

XXH3_state_t* as_state(std::uint8_t* p) { return std::launder(reinterpret_cast<XXH3_state_t*>(p)); }
const XXH3_state_t* as_state(const std::uint8_t* p) { return std::launder(reinterpret_cast<const XXH3_state_t*>(p)); }

#if defined(__x86_64__)
// The AVX2 paths (workload_avx2.cpp) where the CPU has them: with SSE2
// alone the hash was a tenth of the tools' CPU per GB on each side, and the
// generator another tenth of the sender's.
const bool kAvx2 = __builtin_cpu_supports("avx2") != 0;
#endif

}  // namespace

Payload::Payload(std::uint64_t seed) {
    std::uint64_t key = util::splitmix64(seed ^ 0x7061796c6f6164ull);
    for (std::size_t i = 0; i < kTableWords; ++i) table_[i] = util::splitmix64(key + i);
}

std::uint64_t Payload::word(std::uint64_t index) const { return table_[index % kTableWords] ^ index * kIndexStep; }

void Payload::fill(std::uint64_t offset, std::span<std::uint8_t> out) const {
    std::size_t i = 0;
    auto byte_at = [&](std::uint64_t pos) { return static_cast<std::uint8_t>(word(pos / 8) >> (8 * (pos % 8))); };
    while (i < out.size() && (offset + i) % 8 != 0) {
        out[i] = byte_at(offset + i);
        ++i;
    }
    std::uint64_t w = (offset + i) / 8;
    std::uint64_t step = w * kIndexStep;
#if defined(__x86_64__)
    static_assert(kTableWords == 32, "payload_words_avx2 indexes a table of 32 words");
    if (kAvx2) {  // whole groups of four words; the loop below writes the rest
        const std::size_t words = (out.size() - i) / 32 * 4;
        detail::payload_words_avx2(table_.data(), w, step, kIndexStep, out.data() + i, words);
        i += 8 * words;
        w += words;
        step += words * kIndexStep;
    }
#endif
    for (; i + 8 <= out.size(); i += 8, ++w, step += kIndexStep) {
        std::uint64_t v = table_[w % kTableWords] ^ step;
        if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
        std::memcpy(out.data() + i, &v, 8);
    }
    for (; i < out.size(); ++i) out[i] = byte_at(offset + i);
}

std::size_t Payload::mismatch(std::uint64_t offset, std::span<const std::uint8_t> in) const {
    // Word by word against the generator, as fill() writes them; a differing
    // word is then searched byte by byte.
    std::array<std::uint8_t, 8> expect{};
    const auto first_diff = [&](std::size_t at, std::size_t n) {
        fill(offset + at, std::span(expect).first(n));
        for (std::size_t j = 0; j < n; ++j)
            if (in[at + j] != expect[j]) return at + j;
        return in.size();
    };
    std::size_t i = 0;
    if (const auto head = static_cast<std::size_t>(std::min<std::uint64_t>((8 - offset % 8) % 8, in.size())); head > 0) {
        if (const std::size_t d = first_diff(0, head); d != in.size()) return d;
        i = head;
    }
    std::uint64_t w = (offset + i) / 8;
#if defined(__x86_64__)
    if (kAvx2) {  // whole groups of four words; the loop below checks the rest
        const std::size_t words = (in.size() - i) / 32 * 4;
        const std::size_t ok = detail::payload_mismatch_avx2(table_.data(), w, w * kIndexStep, kIndexStep,
                                                             in.data() + i, words);
        if (ok < words) {  // one of the four words at ok differs
            for (std::size_t j = i + 8 * ok; j < i + 8 * ok + 32; j += 8)
                if (const std::size_t d = first_diff(j, 8); d != in.size()) return d;
        }
        i += 8 * words;
        w += words;
    }
#endif
    for (; i + 8 <= in.size(); i += 8, ++w) {
        std::uint64_t v = word(w);
        if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
        if (std::memcmp(in.data() + i, &v, 8) != 0) return first_diff(i, 8);
    }
    return i < in.size() ? first_diff(i, in.size() - i) : in.size();
}

void PayloadCheck::update(std::span<const std::uint8_t> bytes) {
    if (mismatch_ == kNone) {
        if (const std::size_t d = payload_.mismatch(offset_, bytes); d != bytes.size()) mismatch_ = offset_ + d;
    }
    offset_ += bytes.size();
}

StreamHash::StreamHash() {
    // XXH3_state_t is plain data: copying the bytes copies the hash (as
    // XXH3_copyState does), so StreamHash stays a value type.
    new (state_.data()) XXH3_state_t;
    XXH3_INITSTATE(as_state(state_.data()));
    XXH3_64bits_reset(as_state(state_.data()));
}

void StreamHash::update(std::span<const std::uint8_t> bytes) {
#if defined(__x86_64__)
    if (kAvx2) return detail::xxh3_update_avx2(as_state(state_.data()), bytes.data(), bytes.size());
#endif
    XXH3_64bits_update(as_state(state_.data()), bytes.data(), bytes.size());
}

void StreamHash::update(const Payload& payload, std::uint64_t offset, std::uint64_t n) {
    std::array<std::uint8_t, 16384> piece;
    for (const std::uint64_t end = offset + n; offset < end;) {
        const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), end - offset));
        const std::span<std::uint8_t> bytes(piece.data(), k);
        payload.fill(offset, bytes);
        update(bytes);
        offset += k;
    }
}

std::uint64_t StreamHash::digest() const { return XXH3_64bits_digest(as_state(state_.data())); }

}  // namespace ndm::workload
