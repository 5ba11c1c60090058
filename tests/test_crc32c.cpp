// CRC32C: every implementation the CPU runs (portable, serial SSE4.2, 3-way
// interleaved SSE4.2+PCLMULQDQ) computes the same function, at every length
// (the 3-way path has thresholds, block caps and tails), alignment and
// starting value, and matches a bit-at-a-time reference.
#include <doctest/doctest.h>

#include <array>
#include <random>
#include <string_view>
#include <vector>

#include "transport/crc32c.hpp"

using namespace ndm::wire;

namespace {

// Straight from the definition (RFC 3720 §B.4): reflected, one bit at a time.
std::uint32_t crc32c_bitwise(std::span<const std::uint8_t> data, std::uint32_t crc = 0) {
    std::uint32_t c = ~crc;
    for (std::uint8_t b : data) {
        c ^= b;
        for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
    }
    return ~c;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

std::span<const std::uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("crc32c: the dispatcher runs the last (fastest) implementation, portable is always there") {
    const auto impls = crc32c_implementations();
    REQUIRE(!impls.empty());
    CHECK(std::string_view(impls.front().name) == "portable");
    MESSAGE("crc32c implementations on this CPU: " << impls.size() << ", dispatching to " << std::string_view(impls.back().name));
}

TEST_CASE("crc32c: check value and empty input, every implementation") {
    for (const auto& impl : crc32c_implementations()) {
        INFO(impl.name);
        CHECK(impl.fn(bytes_of("123456789"), 0) == 0xE3069283u);
        CHECK(impl.fn({}, 0) == 0u);
        CHECK(impl.fn({}, 0xDEADBEEFu) == 0xDEADBEEFu);  // nothing to add: the value passes through
    }
    CHECK(crc32c_bitwise(bytes_of("123456789")) == 0xE3069283u);
}

TEST_CASE("crc32c: all implementations agree on every length 0..4096") {
    const auto data = random_bytes(4096, 0x5eed'c0c0);
    const std::span<const std::uint8_t> all(data);
    const auto impls = crc32c_implementations();
    for (std::size_t len = 0; len <= data.size(); ++len) {
        const auto s = all.first(len);
        const std::uint32_t want = crc32c_portable(s);
        for (const auto& impl : impls) {
            INFO(impl.name << " length " << len);
            REQUIRE(impl.fn(s, 0) == want);
        }
        REQUIRE(crc32c(s) == want);
    }
    // The portable table itself against the definition, at a spread of lengths.
    for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 95u, 96u, 191u, 192u, 1452u, 4096u})
        CHECK(crc32c_portable(all.first(len)) == crc32c_bitwise(all.first(len)));
}

TEST_CASE("crc32c: unaligned starts and a non-zero starting value") {
    const auto data = random_bytes(4096 + 16, 0x5eed'c0c1);
    const std::span<const std::uint8_t> all(data);
    const auto impls = crc32c_implementations();
    // Every start offset mod 16 at lengths around the 8-byte stride, the
    // 24-byte 3-way granule and its 96-byte threshold, and packet sizes.
    std::vector<std::size_t> lengths;
    for (std::size_t len = 0; len < 80; ++len) lengths.push_back(len);
    for (std::size_t len = 80; len < 220; ++len) lengths.push_back(len);
    for (std::size_t len : {255u, 1200u, 1451u, 1452u, 1453u, 2048u, 4095u, 4096u}) lengths.push_back(len);
    for (std::size_t off = 0; off < 16; ++off)
        for (std::size_t len : lengths) {
            const auto s = all.subspan(off, len);
            const std::uint32_t want = crc32c_portable(s), want_chained = crc32c_portable(s, 0x12345678u);
            for (const auto& impl : impls) {
                INFO(impl.name << " offset " << off << " length " << len);
                REQUIRE(impl.fn(s, 0) == want);
                REQUIRE(impl.fn(s, 0x12345678u) == want_chained);
            }
        }
}

TEST_CASE("crc32c: buffers longer than one 3-way block, and chaining across implementations") {
    // 65507 (largest UDP payload) and 100000 take several 12 KiB blocks and a tail.
    const auto data = random_bytes(100'000, 0x5eed'c0c2);
    const std::span<const std::uint8_t> all(data);
    const auto impls = crc32c_implementations();
    for (std::size_t len : {9000u, 12288u, 12289u, 36'864u, 65'507u, 100'000u}) {
        const auto s = all.first(len);
        const std::uint32_t want = crc32c_bitwise(s);
        for (const auto& impl : impls) {
            INFO(impl.name << " length " << len);
            CHECK(impl.fn(s, 0) == want);
        }
    }
    // crc(a ‖ b) computed in two pieces by different implementations.
    const std::uint32_t one_shot = crc32c_portable(all.first(5000));
    for (const auto& first : impls)
        for (const auto& second : impls)
            for (std::size_t split : {0u, 1u, 191u, 1452u, 4999u, 5000u}) {
                INFO(first.name << " then " << second.name << " split " << split);
                CHECK(second.fn(all.subspan(split, 5000 - split), first.fn(all.first(split), 0)) == one_shot);
            }
}

TEST_CASE("crc32c: RFC 3720 Appendix B.4 vectors") {
    std::array<std::uint8_t, 32> zeros{}, ones{}, inc{}, dec{};
    ones.fill(0xff);
    for (std::size_t i = 0; i < 32; ++i) {
        inc[i] = static_cast<std::uint8_t>(i);
        dec[i] = static_cast<std::uint8_t>(31 - i);
    }
    for (const auto& impl : crc32c_implementations()) {
        INFO(impl.name);
        CHECK(impl.fn(zeros, 0) == 0x8A9136AAu);
        CHECK(impl.fn(ones, 0) == 0x62A8AB43u);
        CHECK(impl.fn(inc, 0) == 0x46DD794Eu);
        CHECK(impl.fn(dec, 0) == 0x113FDB5Cu);
    }
}

TEST_CASE("crc32c: chaining equals one shot") {
    std::mt19937_64 rng(0x5eed'0003);
    std::vector<std::uint8_t> data(200);
    for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    const std::span<const std::uint8_t> all(data);
    const std::uint32_t one_shot = crc32c(all);
    for (std::size_t split = 0; split <= data.size(); ++split) {
        const auto a = all.first(split), b = all.subspan(split);
        REQUIRE(crc32c(b, crc32c(a)) == one_shot);
        REQUIRE(crc32c_portable(b, crc32c_portable(a)) == one_shot);
        REQUIRE(crc32c_portable(b, crc32c(a)) == one_shot);
    }
    // Three pieces.
    CHECK(crc32c(all.subspan(150), crc32c(all.subspan(20, 130), crc32c(all.first(20)))) == one_shot);
    // "1234" + "56789" == "123456789"
    CHECK(crc32c(bytes_of("56789"), crc32c(bytes_of("1234"))) == 0xE3069283u);
}
