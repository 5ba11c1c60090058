// StreamHash: the byte-exactness check of transfers. Byte-wise FNV-1a costs a
// dependent multiply per byte (~60 ms per 32 MB side), which would dominate the
// simulator's own profile; this hashes 8-byte words with a multiply-rotate step
// instead. Each step is a bijection of the state for a fixed word and of the
// word for a fixed state, so any change confined to one word is always detected,
// and the result does not depend on how the stream was split into chunks.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace ndm::sim {

class StreamHash {
public:
    void update(std::span<const std::uint8_t> bytes) {
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
    [[nodiscard]] std::uint64_t digest() const {
        StreamHash h = *this;
        h.mix(h.pending_ ^ (static_cast<std::uint64_t>(h.fill_) << 56));
        h.mix(length_);
        std::uint64_t x = h.state_;  // final avalanche (murmur3 fmix64)
        x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
        x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
        return x ^ (x >> 33);
    }

private:
    void push(std::uint8_t b) {
        pending_ |= static_cast<std::uint64_t>(b) << (8 * fill_);
        if (++fill_ == 8) {
            mix(pending_);
            pending_ = 0;
            fill_ = 0;
        }
    }
    void mix(std::uint64_t word) {
        state_ ^= word * 0x9e3779b97f4a7c15ull;  // odd multiplier: bijective in word
        state_ = ((state_ << 31) | (state_ >> 33)) * 0xbf58476d1ce4e5b9ull;
    }
    std::uint64_t state_ = 0xcbf29ce484222325ull;
    std::uint64_t pending_ = 0;
    std::uint64_t length_ = 0;
    unsigned fill_ = 0;
};

}  // namespace ndm::sim
