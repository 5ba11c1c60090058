// Bounds-checked cursors and QUIC variable-length integers (RFC 9000 §16).
#include "wire/varint.hpp"

#include <cstring>

namespace ndm::wire {

std::optional<std::uint32_t> Reader::u32() {
    auto v = uint(4);
    if (!v) return std::nullopt;
    return static_cast<std::uint32_t>(*v);
}

std::optional<std::uint64_t> Reader::uint(std::size_t nbytes) {
    if (nbytes < 1 || nbytes > 8 || remaining() < nbytes) return std::nullopt;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < nbytes; ++i) v = (v << 8) | data_[pos_ + i];
    pos_ += nbytes;
    return v;
}

std::optional<std::span<const std::uint8_t>> Reader::bytes(std::size_t n) {
    if (remaining() < n) return std::nullopt;
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
}

bool Writer::u32(std::uint32_t v) { return uint(v, 4); }

// Writes the low nbytes bytes of v, big-endian: higher bytes are dropped, which
// is what truncated packet numbers (RFC 9000 §17.1) want.
bool Writer::uint(std::uint64_t v, std::size_t nbytes) {
    if (nbytes < 1 || nbytes > 8 || remaining() < nbytes) return false;
    for (std::size_t i = nbytes; i-- > 0;) {
        out_[pos_ + i] = static_cast<std::uint8_t>(v);
        v >>= 8;
    }
    pos_ += nbytes;
    return true;
}

bool Writer::bytes(std::span<const std::uint8_t> b) {
    if (remaining() < b.size()) return false;
    // memmove: callers may hand back bytes that live in this very buffer.
    if (!b.empty()) std::memmove(out_.data() + pos_, b.data(), b.size());
    pos_ += b.size();
    return true;
}

}  // namespace ndm::wire
