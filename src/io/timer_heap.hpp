// An indexed binary min-heap of deadlines: the Endpoint keeps each of its
// connections in it keyed by when that connection next has timed work, so a
// turn finds the due ones at the top instead of asking every connection.
// Each item stores its own slot (a `timer_slot` member), which makes re-keying
// and removing an item O(log n) with no stale entries left behind.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "ndm/time.hpp"

namespace ndm::io {

inline constexpr std::size_t kNoTimerSlot = static_cast<std::size_t>(-1);

// T has a member `std::size_t timer_slot` initialised to kNoTimerSlot; the
// heap owns its value while T is in it.
template <class T>
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

    void place(std::size_t i, const Entry& e) {
        heap_[i] = e;
        e.item->timer_slot = i;
    }
    void up(std::size_t i) {
        const Entry e = heap_[i];
        while (i > 0) {
            const std::size_t parent = (i - 1) / 2;
            if (!(e.at < heap_[parent].at)) break;
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
            if (child + 1 < n && heap_[child + 1].at < heap_[child].at) ++child;
            if (!(heap_[child].at < e.at)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, e);
    }

    std::vector<Entry> heap_;
};

}  // namespace ndm::io
