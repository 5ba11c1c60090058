// The Endpoint's receive budget as a value (src/io/receive_budget.*), in
// virtual time: its ceiling at the socket's receive buffer with the 4 MiB
// floor, equal shares down to kMinReceiveShare, and the AIMD on the kernel's
// receive drops (halved at most every 20 ms, grown back by eighths every 50 ms).
// test_endpoint.cpp checks the same over real sockets.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "io/receive_budget.hpp"
#include "ndm/endpoint.hpp"

using ndm::Instant;
using ndm::io::ReceiveBudget;
using namespace std::chrono_literals;

namespace {
constexpr std::uint64_t kMiB = 1u << 20;
}  // namespace

TEST_CASE("receive budget: the socket's receive buffer caps it, 4 MiB is its floor, 0 is none") {
    CHECK(ReceiveBudget(64 * kMiB, 6 * kMiB).ceiling() == 6 * kMiB);
    CHECK(ReceiveBudget(64 * kMiB, 128u << 10).ceiling() == 4 * kMiB);  // an unprivileged socket's size
    CHECK(ReceiveBudget(kMiB, 6 * kMiB).ceiling() == kMiB);            // a smaller budget stays
    CHECK(ReceiveBudget(64 * kMiB, 0).ceiling() == 64 * kMiB);         // the socket's size unknown
    const ReceiveBudget none(0, 6 * kMiB);
    CHECK_FALSE(none.enabled());
    CHECK(none.share(1) == std::numeric_limits<std::uint64_t>::max());
    CHECK(ReceiveBudget().share(100) == std::numeric_limits<std::uint64_t>::max());
    const ReceiveBudget b(64 * kMiB, 16 * kMiB);
    CHECK(b.current() == b.ceiling());
}

TEST_CASE("receive budget: equal shares, never below kMinReceiveShare") {
    const ReceiveBudget b(64 * kMiB, 16 * kMiB);
    CHECK(b.share(0) == 16 * kMiB);  // the first connection's, before it counts
    CHECK(b.share(1) == 16 * kMiB);
    CHECK(b.share(4) == 4 * kMiB);
    CHECK(b.share(256) == ndm::kMinReceiveShare);  // 64 KiB would be the equal share
    CHECK(b.share(100000) == ndm::kMinReceiveShare);
}

TEST_CASE("receive budget: drops halve it at most every 20 ms, then it grows back by eighths every 50 ms") {
    ReceiveBudget b(64 * kMiB, 128u << 10);  // ceiling 4 MiB
    Instant t = Instant{} + 10s;
    CHECK_FALSE(b.adapt(0, t));  // no drops, at the ceiling: unchanged
    CHECK(b.current() == 4 * kMiB);
    CHECK(b.adapt(5, t));  // the drop count rose: cut to half the ceiling
    CHECK(b.current() == 2 * kMiB);
    CHECK_FALSE(b.adapt(9, t + 19ms));  // more drops within 20 ms of the cut: no second cut
    CHECK(b.current() == 2 * kMiB);
    CHECK(b.adapt(12, t + 20ms));  // and from then on one again, down to the floor
    CHECK(b.current() == 2 * kMiB);  // max(half of 2 MiB, min(half the ceiling, 4 MiB))
    t += 20ms;
    std::vector<std::uint64_t> seen;
    for (int ms = 1; ms <= 300; ++ms) {
        CHECK_FALSE(b.adapt(12, t + ms * 1ms));  // the count stands still: no drops
        if (seen.empty() || seen.back() != b.current()) seen.push_back(b.current());
    }
    const std::uint64_t k = 1u << 10;
    CHECK(seen == std::vector<std::uint64_t>{2048 * k, 2560 * k, 3072 * k, 3584 * k, 4096 * k});
    ReceiveBudget none(0, 128u << 10);
    CHECK_FALSE(none.adapt(1, t));  // no budget: nothing to cut
}
