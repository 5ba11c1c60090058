// An indexed binary min-heap of deadlines. The Endpoint keeps each of its
// connections in it keyed by when that connection next has timed work, so a
// turn finds the due ones at the top instead of asking every connection; the
// simulator keeps each flow's next event in it (sim/flow_heap.hpp). Each item
// stores its own slot (a `timer_slot` member), which makes re-keying and
// removing an item O(log n) with no stale entries left behind. Items with
// equal deadlines come out in TieBreak's order (a strict weak order on items;
// the default leaves it unspecified).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "ndm/time.hpp"

namespace ndm::util {

inline constexpr std::size_t kNoTimerSlot = static_cast<std::size_t>(-1);

struct NoTieBreak {
    template <class T>
    bool operator()(const T&, const T&) const {
        return false;
    }
};

// T has a member `std::size_t timer_slot` initialised to kNoTimerSlot; the
// heap owns its value while T is in it.
template <class T, class TieBreak = NoTieBreak>
class TimerHeap {
public:
    // Inserts `t` with deadline `at`, or moves it there if present.
    void set(T& t, Instant at) {
        if (t.timer_slot == kNoTimerSlot) {
            t.timer_slot = heap_.size();
            heap_.push_back({at, &t});
            up(t.timer_slot);
            return;
        }
        const std::size_t i = t.timer_slot;
        const Instant old = heap_[i].at;
        heap_[i].at = at;
        if (at < old) up(i);
        else down(i);
    }

    void erase(T& t) {
        const std::size_t i = t.timer_slot;
        if (i == kNoTimerSlot) return;
        t.timer_slot = kNoTimerSlot;
        const std::size_t last = heap_.size() - 1;
        if (i != last) {
            place(i, heap_[last]);
            heap_.pop_back();
            up(i);
            down(heap_[i].item->timer_slot);
        } else {
            heap_.pop_back();
        }
    }

    // The earliest item and its deadline; nullptr / kNever when empty.
    [[nodiscard]] T* top() const { return heap_.empty() ? nullptr : heap_.front().item; }
    [[nodiscard]] Instant top_time() const { return heap_.empty() ? kNever : heap_.front().at; }
    [[nodiscard]] std::size_t size() const { return heap_.size(); }
    [[nodiscard]] bool contains(const T& t) const { return t.timer_slot != kNoTimerSlot; }

private:
    struct Entry {
        Instant at;
        T* item;
    };

    static bool before(const Entry& a, const Entry& b) {
        return a.at < b.at || (!(b.at < a.at) && TieBreak{}(*a.item, *b.item));
    }
    void place(std::size_t i, const Entry& e) {
        heap_[i] = e;
        e.item->timer_slot = i;
    }
    void up(std::size_t i) {
        const Entry e = heap_[i];
        while (i > 0) {
            const std::size_t parent = (i - 1) / 2;
            if (!before(e, heap_[parent])) break;
            place(i, heap_[parent]);
            i = parent;
        }
        place(i, e);
    }
    void down(std::size_t i) {
        const Entry e = heap_[i];
        const std::size_t n = heap_.size();
        for (;;) {
            std::size_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
            if (!before(heap_[child], e)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, e);
    }

    std::vector<Entry> heap_;
};

}  // namespace ndm::util
