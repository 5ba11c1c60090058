// FlowHeap: the next event time of each of a fixed set of flows, in a binary
// min-heap with each flow's position indexed, so run_shared_path finds the
// earliest flow and updates one flow's time in O(log flows) instead of
// scanning them all (issue 18). Ties order by flow index, the order the scan
// it replaces used, so simulations stay bit-identical.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "ndm/time.hpp"

namespace ndm::sim {

class FlowHeap {
public:
    explicit FlowHeap(std::size_t flows) : at_(flows, kNever), pos_(flows, kAbsent) {}

    [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
    // The earliest (time, flow); the heap must not be empty.
    [[nodiscard]] Instant top_time() const { return at_[heap_.front()]; }
    [[nodiscard]] std::size_t top() const { return heap_.front(); }
    [[nodiscard]] bool contains(std::size_t flow) const { return pos_[flow] != kAbsent; }

    // Inserts the flow or moves it to its new time.
    void set(std::size_t flow, Instant at) {
        if (!contains(flow)) {
            pos_[flow] = heap_.size();
            heap_.push_back(flow);
        }
        at_[flow] = at;
        up(down(pos_[flow]));
    }

    void erase(std::size_t flow) {
        if (!contains(flow)) return;
        const std::size_t i = pos_[flow];
        const std::size_t last = heap_.back();
        heap_.pop_back();
        pos_[flow] = kAbsent;
        if (last == flow) return;
        heap_[i] = last;
        pos_[last] = i;
        up(down(i));
    }

private:
    static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);

    [[nodiscard]] bool before(std::size_t a, std::size_t b) const {
        return at_[a] < at_[b] || (at_[a] == at_[b] && a < b);
    }
    void swap_at(std::size_t i, std::size_t j) {
        std::swap(heap_[i], heap_[j]);
        pos_[heap_[i]] = i;
        pos_[heap_[j]] = j;
    }
    // Sift the entry at i toward the leaves; returns where it ended.
    std::size_t down(std::size_t i) {
        while (true) {
            const std::size_t l = 2 * i + 1, r = l + 1;
            std::size_t best = i;
            if (l < heap_.size() && before(heap_[l], heap_[best])) best = l;
            if (r < heap_.size() && before(heap_[r], heap_[best])) best = r;
            if (best == i) return i;
            swap_at(i, best);
            i = best;
        }
    }
    void up(std::size_t i) {
        while (i > 0) {
            const std::size_t parent = (i - 1) / 2;
            if (!before(heap_[i], heap_[parent])) return;
            swap_at(i, parent);
            i = parent;
        }
    }

    std::vector<Instant> at_;         // per flow
    std::vector<std::size_t> pos_;    // per flow: index in heap_, or kAbsent
    std::vector<std::size_t> heap_;   // flow indices
};

}  // namespace ndm::sim
