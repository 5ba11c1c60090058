// Connection IDs and packet numbers (RFC 9000 §17.1, Appendix A.2/A.3).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "wire/packet.hpp"

using namespace ndm::wire;

namespace {
ConnectionId cid(std::initializer_list<std::uint8_t> b) {
    return ConnectionId::from(std::span<const std::uint8_t>(b.begin(), b.size()));
}
}  // namespace

TEST_CASE("packet: connection ids") {
    const ConnectionId a = cid({1, 2, 3});
    CHECK(a.length == 3);
    CHECK(a.span().size() == 3);
    CHECK(a == cid({1, 2, 3}));
    CHECK_FALSE(a == cid({1, 2}));
    CHECK_FALSE(a == cid({1, 2, 4}));
    CHECK(ConnectionId{} == cid({}));
    const std::vector<std::uint8_t> big(25, 7);
    CHECK(ConnectionId::from(big).length == kMaxCidLength);  // clamped, never overflows
}

TEST_CASE("packet: packet number length, RFC 9000 Appendix A.2") {
    // RFC 9000 §17.1 examples.
    CHECK(packet_number_length(0xac5c02, 0xabe8b3, true) == 2);
    CHECK(packet_number_length(0xace8fe, 0xabe8b3, true) == 3);
    CHECK(packet_number_length(0, 0, false) == 1);
    CHECK(packet_number_length(126, 0, false) == 1);
    CHECK(packet_number_length(127, 0, false) == 2);  // 128 unacked: twice that needs 9 bits
    CHECK(packet_number_length(128, 0, false) == 2);
    CHECK(packet_number_length(200, 100, true) == 1);
    CHECK(packet_number_length(228, 100, true) == 2);
    CHECK(packet_number_length(100 + (1u << 15) - 1, 100, true) == 2);
    CHECK(packet_number_length(100 + (1u << 15), 100, true) == 3);
    CHECK(packet_number_length(1ull << 40, 0, true) == 4);  // capped
}

TEST_CASE("packet: packet number decoding, RFC 9000 Appendix A.3") {
    CHECK(decode_packet_number(0xa82f30ea, true, 0x9b32, 2) == 0xa82f9b32);
    CHECK(decode_packet_number(0, false, 0, 1) == 0);
    CHECK(decode_packet_number(0, false, 5, 4) == 5);
    CHECK(decode_packet_number(0xff, true, 0x01, 1) == 0x101);   // wraps forward
    CHECK(decode_packet_number(0x101, true, 0xff, 1) == 0xff);   // late packet, wraps back
    CHECK(decode_packet_number(10, true, 0xf0, 1) == 0xf0);      // no negative candidates
    // Near 2^62 the candidate is never pushed past the packet-number space.
    const std::uint64_t top = (1ull << 62) - 1;
    CHECK(decode_packet_number(top - 1, true, top & 0xff, 1) == top);
}

TEST_CASE("packet: sender's length always lets the receiver recover the number (property)") {
    std::mt19937_64 rng(0x9ac4e7'0001);
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t acked = rng() >> (2 + rng() % 40);
        const std::uint64_t pn = acked + 1 + (rng() >> (36 + rng() % 28));
        const std::size_t len = packet_number_length(pn, acked, true);
        if (pn - acked >= (1ull << 31)) continue;  // beyond what 4 bytes can carry
        // The receiver has seen anything from acked up to pn-1.
        const std::uint64_t received = acked + rng() % (pn - acked);
        const std::uint64_t mask = (len == 4) ? 0xffffffffull : ((1ull << (8 * len)) - 1);
        REQUIRE(decode_packet_number(received, true, pn & mask, len) == pn);
    }
}
