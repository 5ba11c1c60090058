// FlowHeap (src/sim/flow_heap.hpp), the event queue over flows of
// run_shared_path: against a brute-force scan, including its tie-break.
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <vector>

#include "sim/flow_heap.hpp"

namespace {

// What the scan it replaces finds: the earliest time, ties to the lowest
// index, among the flows present.
std::size_t scan(const std::vector<ndm::Instant>& at, const std::vector<bool>& present) {
    std::size_t best = at.size();
    for (std::size_t i = 0; i < at.size(); ++i)
        if (present[i] && (best == at.size() || at[i] < at[best])) best = i;
    return best;
}

}  // namespace

TEST_CASE("flow heap: the earliest flow and its tie-break match a scan through random updates") {
    constexpr std::size_t kFlows = 37;
    ndm::sim::FlowHeap heap(kFlows);
    std::vector<ndm::Instant> at(kFlows, ndm::kNever);
    std::vector<bool> present(kFlows, false);
    std::mt19937_64 rng(18);
    for (int round = 0; round < 20000; ++round) {
        const std::size_t f = rng() % kFlows;
        if (rng() % 5 == 0) {
            heap.erase(f);
            present[f] = false;
        } else {
            // Few distinct times, so ties are common; kNever too.
            const auto t = rng() % 9 == 0 ? ndm::kNever : ndm::Instant{std::chrono::nanoseconds(rng() % 8)};
            heap.set(f, t);
            at[f] = t;
            present[f] = true;
        }
        const std::size_t want = scan(at, present);
        REQUIRE(heap.empty() == (want == kFlows));
        if (want == kFlows) continue;
        REQUIRE(heap.top() == want);
        REQUIRE(heap.top_time() == at[want]);
        for (std::size_t i = 0; i < kFlows; ++i) REQUIRE(heap.contains(i) == present[i]);
    }
}

TEST_CASE("flow heap: erasing an absent flow or the last one leaves it consistent") {
    ndm::sim::FlowHeap heap(3);
    heap.erase(1);
    CHECK(heap.empty());
    heap.set(2, ndm::Instant{std::chrono::nanoseconds(5)});
    heap.set(0, ndm::Instant{std::chrono::nanoseconds(5)});
    CHECK(heap.top() == 0);  // same time: the lower index first
    heap.erase(0);
    CHECK(heap.top() == 2);
    heap.erase(2);
    CHECK(heap.empty());
    CHECK_FALSE(heap.contains(2));
}
