// util::TimerHeap, the Endpoint's index of connection deadlines: after any
// sequence of inserts, re-keys and removals its top is the earliest live
// deadline, checked against a plain list, and every slot points back at its item.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "util/rng.hpp"
#include "util/timer_heap.hpp"

using namespace ndm;

namespace {

struct Item {
    std::size_t timer_slot = ndm::util::kNoTimerSlot;
    Instant at = kNever;
    bool in = false;
};

Instant earliest(const std::vector<Item>& items) {
    Instant t = kNever;
    for (const Item& i : items)
        if (i.in) t = std::min(t, i.at);
    return t;
}

}  // namespace

TEST_CASE("timer heap: top is the earliest deadline after random inserts, re-keys and removals") {
    std::vector<Item> items(300);
    ndm::util::TimerHeap<Item> heap;
    std::uint64_t seed = 42;
    for (int step = 0; step < 20000; ++step) {
        Item& it = items[util::splitmix64_next(seed) % items.size()];
        const std::uint64_t op = util::splitmix64_next(seed) % 3;
        if (op < 2) {  // insert or re-key, earlier or later
            it.at = Instant{} + std::chrono::microseconds(util::splitmix64_next(seed) % 100000);
            it.in = true;
            heap.set(it, it.at);
        } else {
            heap.erase(it);
            it.in = false;
        }
        REQUIRE(heap.top_time() == earliest(items));
        if (heap.top()) CHECK(heap.top()->at == heap.top_time());
    }
    const auto live = std::count_if(items.begin(), items.end(), [](const Item& i) { return i.in; });
    CHECK(heap.size() == static_cast<std::size_t>(live));
    for (const Item& i : items) CHECK(heap.contains(i) == i.in);
    // Draining from the top yields the deadlines in order.
    Instant last{};
    while (Item* top = heap.top()) {
        CHECK(heap.top_time() >= last);
        last = heap.top_time();
        heap.erase(*top);
        top->in = false;
    }
    CHECK(heap.top_time() == kNever);
    for (const Item& i : items) CHECK(!heap.contains(i));
}
