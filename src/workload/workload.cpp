// The workload's generator and hash (ndm/workload.hpp). Both loops stay in
// this file, so the compiler inlines splitmix64 and mix() into them as it did
// when they were header-only.
#include "ndm/workload.hpp"

#include <bit>
#include <cstring>

#include "util/rng.hpp"

namespace ndm::workload {

Payload::Payload(std::uint64_t seed) : key_(util::splitmix64(seed ^ 0x7061796c6f6164ull)) {}

void Payload::fill(std::uint64_t offset, std::span<std::uint8_t> out) const {
    std::size_t i = 0;
    auto byte_at = [&](std::uint64_t pos) {
        return static_cast<std::uint8_t>(util::splitmix64(key_ + pos / 8) >> (8 * (pos % 8)));
    };
    while (i < out.size() && (offset + i) % 8 != 0) {
        out[i] = byte_at(offset + i);
        ++i;
    }
    for (; i + 8 <= out.size(); i += 8) {
        const std::uint64_t word = util::splitmix64(key_ + (offset + i) / 8);
        for (unsigned b = 0; b < 8; ++b) out[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
    }
    for (; i < out.size(); ++i) out[i] = byte_at(offset + i);
}

void StreamHash::update(std::span<const std::uint8_t> bytes) {
    length_ += bytes.size();
    std::size_t i = 0;
    while (fill_ != 0 && i < bytes.size()) push(bytes[i++]);
    if constexpr (std::endian::native == std::endian::little) {
        for (; i + 8 <= bytes.size(); i += 8) {  // fast path: the same words push() would build
            std::uint64_t w;
            std::memcpy(&w, bytes.data() + i, 8);
            mix(w);
        }
    }
    while (i < bytes.size()) push(bytes[i++]);
}

std::uint64_t StreamHash::digest() const {
    StreamHash h = *this;
    h.mix(h.pending_ ^ (static_cast<std::uint64_t>(h.fill_) << 56));
    h.mix(length_);
    std::uint64_t x = h.state_;  // final avalanche (murmur3 fmix64)
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

void StreamHash::push(std::uint8_t b) {
    pending_ |= static_cast<std::uint64_t>(b) << (8 * fill_);
    if (++fill_ == 8) {
        mix(pending_);
        pending_ = 0;
        fill_ = 0;
    }
}

void StreamHash::mix(std::uint64_t word) {
    state_ ^= word * 0x9e3779b97f4a7c15ull;  // odd multiplier: bijective in word
    state_ = ((state_ << 31) | (state_ >> 33)) * 0xbf58476d1ce4e5b9ull;
}

}  // namespace ndm::workload
