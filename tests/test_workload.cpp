// The workload (ndm/workload.hpp) is a fixed format: recorded digests and the
// transfer tests depend on its bytes and hashes. These known answers were
// computed with the headers it was moved from (src/sim/payload.hpp and
// src/sim/stream_hash.hpp at a08cb34), so a change to either fails here.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ndm/workload.hpp"

namespace {

struct Answer {
    std::uint64_t seed;
    std::array<std::uint8_t, 8> first;  // bytes at offsets 3..10
    std::uint64_t digest;               // of bytes 3..1002
};

}  // namespace

TEST_CASE("workload: payload bytes and stream hash are the recorded known answers") {
    const Answer answers[] = {
        {1, {0x03, 0xc2, 0x67, 0xca, 0x86, 0x06, 0xd9, 0x37}, 0x8849ec89163f6612ull},
        {42, {0xd7, 0x8c, 0x7a, 0x3d, 0x1b, 0x61, 0x01, 0x7d}, 0xa8543b0975e264d8ull},
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
        // Any range regenerates the same bytes.
        std::vector<std::uint8_t> part(17);
        p.fill(3 + 500, part);
        CHECK(std::equal(part.begin(), part.end(), bytes.begin() + 500));
    }
    CHECK(ndm::workload::StreamHash{}.digest() == 0x3caa33f07db2522cull);
}
