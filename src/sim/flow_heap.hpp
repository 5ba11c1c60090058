// FlowHeap: the next event time of each of a fixed set of flows, so
// run_shared_path finds the earliest flow and updates one flow's time in
// O(log flows) instead of scanning them all (bench/results/2026-12-06-simulator-cost.md). A thin index-based
// face on util::TimerHeap. Ties order by flow index, the order the scan it
// replaced used, so simulations stay bit-identical.
#pragma once

#include <cstddef>
#include <vector>

#include "ndm/time.hpp"
#include "util/timer_heap.hpp"

namespace ndm::sim {

class FlowHeap {
public:
    explicit FlowHeap(std::size_t flows) : slots_(flows) {
        for (std::size_t i = 0; i < flows; ++i) slots_[i].index = i;
    }
    FlowHeap(const FlowHeap&) = delete;  // the heap points into slots_
    FlowHeap& operator=(const FlowHeap&) = delete;

    [[nodiscard]] bool empty() const noexcept { return heap_.size() == 0; }
    // The earliest (time, flow); the heap must not be empty.
    [[nodiscard]] Instant top_time() const { return heap_.top_time(); }
    [[nodiscard]] std::size_t top() const { return heap_.top()->index; }
    [[nodiscard]] bool contains(std::size_t flow) const { return heap_.contains(slots_[flow]); }

    // Inserts the flow or moves it to its new time.
    void set(std::size_t flow, Instant at) { heap_.set(slots_[flow], at); }
    void erase(std::size_t flow) { heap_.erase(slots_[flow]); }

private:
    struct Slot {
        std::size_t index = 0;
        std::size_t timer_slot = util::kNoTimerSlot;
    };
    struct ByIndex {
        bool operator()(const Slot& a, const Slot& b) const { return a.index < b.index; }
    };

    std::vector<Slot> slots_;  // one per flow, never resized
    util::TimerHeap<Slot, ByIndex> heap_;
};

}  // namespace ndm::sim
