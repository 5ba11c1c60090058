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

}  // namespace ndm::wire
