// Varints (RFC 9000 §16), the Reader/Writer cursors, and CRC32C.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "wire/varint.hpp"

using namespace ndm::wire;

namespace {

std::vector<std::uint8_t> encode_varint(std::uint64_t v) {
    std::array<std::uint8_t, 8> buf{};
    Writer w(buf);
    REQUIRE(w.varint(v));
    return {w.written().begin(), w.written().end()};
}

}  // namespace

TEST_CASE("varint: RFC 9000 Appendix A.1 examples") {
    struct Case {
        std::vector<std::uint8_t> bytes;
        std::uint64_t value;
    };
    const Case cases[] = {
        {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 151288809941952652ull},
        {{0x9d, 0x7f, 0x3e, 0x7d}, 494878333},
        {{0x7b, 0xbd}, 15293},
        {{0x25}, 37},
        {{0x40, 0x25}, 37},  // non-minimal, still a valid varint
    };
    for (const auto& c : cases) {
        Reader r(c.bytes);
        auto v = r.varint();
        REQUIRE(v);
        CHECK(*v == c.value);
        CHECK(r.empty());
    }
    CHECK(encode_varint(151288809941952652ull) == cases[0].bytes);
    CHECK(encode_varint(494878333) == cases[1].bytes);
    CHECK(encode_varint(15293) == cases[2].bytes);
    CHECK(encode_varint(37) == cases[3].bytes);
}

TEST_CASE("varint: boundaries and sizes") {
    const std::pair<std::uint64_t, std::size_t> cases[] = {
        {0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1073741823, 4}, {1073741824, 8}, {kVarintMax, 8},
    };
    for (const auto& c : cases) {
        const std::uint64_t v = c.first;
        const std::size_t size = c.second;
        CAPTURE(v);
        CHECK(varint_size(v) == size);
        auto bytes = encode_varint(v);
        CHECK(bytes.size() == size);
        Reader r(bytes);
        CHECK(r.varint() == v);
        CHECK(r.empty());
    }
}

TEST_CASE("varint: writer rejects values above 2^62-1 and writes nothing") {
    std::array<std::uint8_t, 16> buf{};
    Writer w(buf);
    CHECK_FALSE(w.varint(kVarintMax + 1));
    CHECK_FALSE(w.varint(~std::uint64_t{0}));
    CHECK(w.position() == 0);
    CHECK_FALSE(w.varint_fixed(kVarintMax + 1, 8));
    CHECK(w.position() == 0);
}

TEST_CASE("varint: writer fails when out of room, position unchanged") {
    for (std::uint64_t v : {std::uint64_t{5}, std::uint64_t{300}, std::uint64_t{70000}, kVarintMax}) {
        const std::size_t n = varint_size(v);
        std::vector<std::uint8_t> buf(n - 1);
        Writer w(buf);
        CHECK_FALSE(w.varint(v));
        CHECK(w.position() == 0);
    }
    std::array<std::uint8_t, 3> buf{};
    Writer w(buf);
    CHECK(w.u8(1));
    CHECK_FALSE(w.u32(7));
    CHECK_FALSE(w.uint(7, 3));
    CHECK(w.uint(7, 2));
    CHECK_FALSE(w.u8(1));
    const std::array<std::uint8_t, 1> one{9};
    CHECK_FALSE(w.bytes(one));
    CHECK(w.position() == 3);
    CHECK(w.remaining() == 0);
}

TEST_CASE("varint: reader fails on every truncation without moving") {
    for (std::uint64_t v : {std::uint64_t{300}, std::uint64_t{70000}, kVarintMax}) {
        auto bytes = encode_varint(v);
        for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
            Reader r(std::span<const std::uint8_t>(bytes).first(cut));
            CHECK_FALSE(r.varint());
            CHECK(r.position() == 0);
        }
    }
}

TEST_CASE("varint: fixed-width encodings") {
    for (std::size_t n : {1u, 2u, 4u, 8u}) {
        std::array<std::uint8_t, 8> buf{};
        Writer w(buf);
        REQUIRE(w.varint_fixed(37, n));
        CHECK(w.position() == n);
        Reader r(w.written());
        CHECK(r.varint() == 37u);
        CHECK(r.empty());
    }
    std::array<std::uint8_t, 8> buf{};
    Writer w(buf);
    CHECK_FALSE(w.varint_fixed(16384, 2));  // needs 4 bytes
    CHECK_FALSE(w.varint_fixed(64, 1));
    CHECK_FALSE(w.varint_fixed(1, 3));      // not a varint length
    CHECK_FALSE(w.varint_fixed(1, 0));
    CHECK(w.varint_fixed(16383, 2));
    CHECK(w.position() == 2);
}

TEST_CASE("varint: fixed-size big-endian integers and byte spans") {
    std::array<std::uint8_t, 32> buf{};
    Writer w(buf);
    REQUIRE(w.u32(0x01020304));
    REQUIRE(w.uint(0xa1b2c3, 3));
    REQUIRE(w.uint(0xffff'1234, 2));  // keeps the low 2 bytes (truncated packet numbers)
    REQUIRE(w.uint(0x0102030405060708ull, 8));
    CHECK_FALSE(w.uint(1, 0));
    CHECK_FALSE(w.uint(1, 9));
    const std::array<std::uint8_t, 3> tail{7, 8, 9};
    REQUIRE(w.bytes(tail));
    REQUIRE(w.bytes({}));
    const std::vector<std::uint8_t> expect{1, 2, 3, 4, 0xa1, 0xb2, 0xc3, 0x12, 0x34, 1, 2, 3, 4, 5, 6, 7, 8, 7, 8, 9};
    CHECK(std::vector<std::uint8_t>(w.written().begin(), w.written().end()) == expect);

    Reader r(w.written());
    CHECK(r.u32() == 0x01020304u);
    CHECK(r.uint(3) == 0xa1b2c3u);
    CHECK(r.uint(2) == 0x1234u);
    CHECK_FALSE(r.uint(0));
    CHECK_FALSE(r.uint(9));
    CHECK(r.uint(8) == 0x0102030405060708ull);
    CHECK(r.remaining() == 3);
    CHECK_FALSE(r.bytes(4));
    CHECK_FALSE(r.u32());
    auto b = r.bytes(2);
    REQUIRE(b);
    CHECK(b->size() == 2);
    CHECK((*b)[0] == 7);
    CHECK(r.rest().size() == 1);
    CHECK(r.u8() == 9);
    CHECK(r.empty());
    CHECK_FALSE(r.u8());
    CHECK_FALSE(r.varint());
    CHECK(r.bytes(0));  // zero bytes are always available
}

TEST_CASE("varint: randomized round trip") {
    std::mt19937_64 rng(0x5eed'0001);
    std::array<std::uint8_t, 8 * 1000> buf{};
    std::vector<std::uint64_t> values;
    Writer w(buf);
    for (int i = 0; i < 1000; ++i) {
        // Spread over all four lengths, not just the (overwhelmingly common) 8-byte one.
        const int bits = static_cast<int>(rng() % 63);
        const std::uint64_t v = bits == 0 ? 0 : rng() >> (64 - bits);
        REQUIRE(v <= kVarintMax);
        values.push_back(v);
        REQUIRE(w.varint(v));
    }
    Reader r(w.written());
    for (auto v : values) CHECK(r.varint() == v);
    CHECK(r.empty());
}
