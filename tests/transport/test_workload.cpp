// The workload (ndm/workload.hpp) is a fixed format (workload::kFormatVersion):
// both ends of a test generate or hash it. These known answers are format 4's
// (the table generator and XXH3); a change to either fails here, and must
// come with a new format version.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "ndm/workload.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

struct Answer {
    std::uint64_t seed;
    std::array<std::uint8_t, 8> first;  // bytes at offsets 3..10
    std::uint64_t digest;               // of bytes 3..1002
};

}  // namespace

TEST_CASE("workload: payload bytes and stream hash are the recorded known answers") {
    const Answer answers[] = {
        {1, {0x03, 0xc2, 0x67, 0xca, 0x86, 0x13, 0xa5, 0x7d}, 0xbef11ff1ffd59763ull},
        {42, {0xd7, 0x8c, 0x7a, 0x3d, 0x1b, 0x74, 0x7d, 0x37}, 0x57633f6401f92b08ull},
    };
    for (const Answer& a : answers) {
        CAPTURE(a.seed);
        const ndm::workload::Payload p(a.seed);
        std::vector<std::uint8_t> bytes(1000);
        p.fill(3, bytes);  // an unaligned start takes the byte-wise head and tail
        for (std::size_t i = 0; i < a.first.size(); ++i) CHECK(bytes[i] == a.first[i]);
        ndm::workload::StreamHash h;
        h.update(bytes);
        CHECK(h.digest() == a.digest);
        CHECK(h.digest() == XXH3_64bits(bytes.data(), bytes.size()));  // the library's one-shot XXH3
        // Any range regenerates the same bytes.
        std::vector<std::uint8_t> part(17);
        p.fill(3 + 500, part);
        CHECK(std::equal(part.begin(), part.end(), bytes.begin() + 500));
    }
    CHECK(ndm::workload::StreamHash{}.digest() == 0x2d06800538d394c2ull);  // XXH3-64 of nothing
}

TEST_CASE("workload: no two payload words in the first 8 MiB are equal, so misplaced data changes the hash") {
    // The table repeats every 32 words; the index term must keep every word
    // distinct, or data delivered a table-length away would go unnoticed.
    const ndm::workload::Payload p(7);
    std::vector<std::uint8_t> bytes(8 << 20);
    p.fill(0, bytes);
    std::vector<std::uint64_t> words(bytes.size() / 8);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    std::sort(words.begin(), words.end());
    CHECK(std::adjacent_find(words.begin(), words.end()) == words.end());
    // Shifting the stream by one table length changes its digest.
    ndm::workload::StreamHash whole, shifted;
    whole.update(std::span(bytes).first(4096));
    shifted.update(std::span(bytes).subspan(ndm::workload::Payload::kTableWords * 8, 4096));
    CHECK(whole.digest() != shifted.digest());
}

TEST_CASE("workload: the stream hash of 4 MiB in uneven chunks is XXH3-64 whatever code path the CPU takes") {
    // StreamHash runs XXH3's AVX2 path where the CPU has AVX2, the library's
    // one-shot XXH3 here its SSE2 one: the digests must agree.
    const ndm::workload::Payload p(7);
    std::vector<std::uint8_t> bytes(4u << 20);
    p.fill(0, bytes);
    ndm::workload::StreamHash h;
    for (std::size_t at = 0, n = 1; at < bytes.size(); n = n * 3 % 100003 + 1) {
        const std::size_t len = std::min(n, bytes.size() - at);
        h.update({bytes.data() + at, len});
        at += len;
    }
    CHECK(h.digest() == XXH3_64bits(bytes.data(), bytes.size()));
}

TEST_CASE("workload: the payload's vector path writes the bytes of the byte-wise one, across the table's wrap") {
    // Payload writes whole words four at a time where the CPU has AVX2; one
    // byte at a time takes the scalar path. Starts around word 252..256 cross
    // the 256-word table's end inside a group of four.
    const ndm::workload::Payload p(99);
    for (std::uint64_t offset : {0ull, 5ull, 8 * 250ull + 3, 8 * 253ull, 8 * 255ull + 7, (1ull << 40) + 1}) {
        CAPTURE(offset);
        std::vector<std::uint8_t> whole(5000), bytewise(5000);
        p.fill(offset, whole);
        for (std::size_t i = 0; i < bytewise.size(); ++i) p.fill(offset + i, {bytewise.data() + i, 1});
        CHECK(whole == bytewise);
    }
}

TEST_CASE("workload: PayloadCheck finds the first changed byte anywhere, in any chunking, across the table's wrap") {
    const std::uint64_t seed = 7;
    const ndm::workload::Payload p(seed);
    std::vector<std::uint8_t> stream(20000);
    p.fill(0, stream);
    // Every byte of the payload matches, whatever the chunks (unaligned
    // heads and tails, the vector path's groups, lengths below a word).
    for (std::size_t chunk : {1u, 7u, 31u, 32u, 33u, 4096u, 20000u}) {
        CAPTURE(chunk);
        ndm::workload::PayloadCheck check(seed);
        for (std::size_t at = 0; at < stream.size(); at += chunk)
            check.update({stream.data() + at, std::min(chunk, stream.size() - at)});
        CHECK(check.checked() == stream.size());
        CHECK_FALSE(check.mismatched());
        CHECK(p.mismatch(8 * 253 + 3, {stream.data() + 8 * 253 + 3, 5000}) == 5000);
    }
    // One flipped bit, at offsets in a head, in a vector group's every word
    // (around the table's wrap at word 256) and in a tail: found exactly,
    // and later changes do not move it.
    for (std::size_t at : {0u, 3u, 8u * 252 + 1, 8u * 253, 8u * 254 + 5, 8u * 255 + 7, 8u * 256, 19999u}) {
        CAPTURE(at);
        std::vector<std::uint8_t> bad = stream;
        bad[at] ^= 0x10;
        if (at + 100 < bad.size()) bad[at + 100] ^= 1;
        for (std::size_t chunk : {13u, 64u, 20000u}) {
            CAPTURE(chunk);
            ndm::workload::PayloadCheck check(seed);
            for (std::size_t i = 0; i < bad.size(); i += chunk) check.update({bad.data() + i, std::min(chunk, bad.size() - i)});
            REQUIRE(check.mismatched());
            CHECK(check.first_mismatch() == at);
            CHECK(check.checked() == bad.size());
        }
    }
    // Another seed's payload, or the right bytes at the wrong offset, differ at once.
    ndm::workload::PayloadCheck other(seed + 1);
    other.update(stream);
    CHECK(other.first_mismatch() == 0);
    CHECK(p.mismatch(8, {stream.data(), 64}) == 0);
}
