// QUIC variable-length integers (RFC 9000 §16): 1, 2, 4 or 8 bytes, the two
// high bits of the first byte giving the length; values up to 2^62-1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ndm::wire {

inline constexpr std::uint64_t kVarintMax = (std::uint64_t{1} << 62) - 1;

// Bytes needed to encode v (v must be <= kVarintMax).
constexpr std::size_t varint_size(std::uint64_t v) {
    return v < 64 ? 1 : v < 16384 ? 2 : v < 1073741824 ? 4 : 8;
}

// A cursor over bytes being decoded: every read checks bounds and fails
// (returns nullopt) instead of reading past the end.
class Reader {
public:
    explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}
    std::optional<std::uint64_t> varint();
    std::optional<std::uint8_t> u8();
    std::optional<std::uint32_t> u32();   // big-endian
    std::optional<std::uint64_t> uint(std::size_t nbytes);  // big-endian, 1..8 bytes
    std::optional<std::span<const std::uint8_t>> bytes(std::size_t n);
    [[nodiscard]] std::size_t remaining() const { return data_.size() - pos_; }
    [[nodiscard]] std::size_t position() const { return pos_; }
    [[nodiscard]] bool empty() const { return remaining() == 0; }
    [[nodiscard]] std::span<const std::uint8_t> rest() const { return data_.subspan(pos_); }

private:
    std::span<const std::uint8_t> data_;
    std::size_t pos_ = 0;
};

// A cursor over an output buffer; writes fail (return false) when out of room
// and leave the position unchanged.
class Writer {
public:
    explicit Writer(std::span<std::uint8_t> out) : out_(out) {}
    bool varint(std::uint64_t v);
    // Fixed 2/4/8-byte varint encoding (for lengths patched in later).
    bool varint_fixed(std::uint64_t v, std::size_t nbytes);
    bool u8(std::uint8_t v);
    bool u32(std::uint32_t v);
    bool uint(std::uint64_t v, std::size_t nbytes);
    bool bytes(std::span<const std::uint8_t> b);
    [[nodiscard]] std::size_t remaining() const { return out_.size() - pos_; }
    [[nodiscard]] std::size_t position() const { return pos_; }
    [[nodiscard]] std::span<std::uint8_t> written() const { return out_.first(pos_); }
    [[nodiscard]] std::span<std::uint8_t> buffer() const { return out_; }

private:
    std::span<std::uint8_t> out_;
    std::size_t pos_ = 0;
};

// The per-field codec is inline: it runs for every header and frame field of
// every packet, and a call per field showed in profiles of the core.
namespace detail {
// Fixed-width big-endian loads and stores written byte by byte: compilers
// merge them into one byte-swapped access (and, unlike memcpy, they do not
// trip -Wstringop-overflow on buffers shorter than the dead wider cases).
template <class T>
T load_big_endian(const std::uint8_t* p) {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | p[i]);
    return v;
}
template <class T>
void store_big_endian(std::uint8_t* p, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * (sizeof(T) - 1 - i)));
}
}  // namespace detail

inline std::optional<std::uint64_t> Reader::varint() {
    if (empty()) return std::nullopt;
    const std::uint8_t* p = data_.data() + pos_;
    // The two high bits of the first byte give the length: 1 << prefix bytes.
    const std::size_t len = std::size_t{1} << (p[0] >> 6);
    if (remaining() < len) return std::nullopt;
    std::uint64_t v;
    switch (len) {
        case 1: v = p[0]; break;
        case 2: v = detail::load_big_endian<std::uint16_t>(p) & 0x3fffu; break;
        case 4: v = detail::load_big_endian<std::uint32_t>(p) & 0x3fffffffu; break;
        default: v = detail::load_big_endian<std::uint64_t>(p) & kVarintMax; break;
    }
    pos_ += len;
    return v;
}

inline std::optional<std::uint8_t> Reader::u8() {
    if (empty()) return std::nullopt;
    return data_[pos_++];
}

inline bool Writer::varint_fixed(std::uint64_t v, std::size_t nbytes) {
    if (nbytes != 1 && nbytes != 2 && nbytes != 4 && nbytes != 8) return false;
    // nbytes bytes hold 8*nbytes-2 value bits.
    if (v > kVarintMax || (nbytes < 8 && v >= (std::uint64_t{1} << (8 * nbytes - 2)))) return false;
    if (remaining() < nbytes) return false;
    std::uint8_t* p = out_.data() + pos_;
    switch (nbytes) {
        case 1: p[0] = static_cast<std::uint8_t>(v); break;
        case 2: detail::store_big_endian(p, static_cast<std::uint16_t>(v | 0x4000u)); break;
        case 4: detail::store_big_endian(p, static_cast<std::uint32_t>(v | 0x80000000u)); break;
        default: detail::store_big_endian(p, v | 0xc000000000000000u); break;
    }
    pos_ += nbytes;
    return true;
}

inline bool Writer::varint(std::uint64_t v) {
    if (v > kVarintMax) return false;
    return varint_fixed(v, varint_size(v));
}

inline bool Writer::u8(std::uint8_t v) {
    if (remaining() < 1) return false;
    out_[pos_++] = v;
    return true;
}

}  // namespace ndm::wire
