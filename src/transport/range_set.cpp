#include "transport/range_set.hpp"

#include <algorithm>

namespace ndm::transport {

std::uint64_t RangeSet::add(std::uint64_t lo, std::uint64_t hi) {
    if (lo >= hi) return 0;
    // Fast paths: in-order data extends or follows the last interval.
    if (v_.empty() || lo > v_.back().hi) {
        v_.push_back({lo, hi});
        return hi - lo;
    }
    if (lo >= v_.back().lo) {
        Interval& b = v_.back();
        if (hi <= b.hi) return 0;
        const std::uint64_t added = hi - std::max(lo, b.hi);
        b.hi = hi;
        return added;
    }
    // General case: [first, last) are the intervals that overlap or touch [lo, hi).
    auto first = std::lower_bound(v_.begin(), v_.end(), lo,
                                  [](const Interval& iv, std::uint64_t x) { return iv.hi < x; });
    auto last = std::upper_bound(first, v_.end(), hi,
                                 [](std::uint64_t x, const Interval& iv) { return x < iv.lo; });
    std::uint64_t added = hi - lo;
    for (auto it = first; it != last; ++it) {
        const std::uint64_t a = std::max(lo, it->lo);
        const std::uint64_t b = std::min(hi, it->hi);
        if (a < b) added -= b - a;
    }
    if (first == last) {
        v_.insert(first, Interval{lo, hi});
        return added;
    }
    const Interval merged{std::min(lo, first->lo), std::max(hi, (last - 1)->hi)};
    *first = merged;
    v_.erase(first + 1, last);
    return added;
}

RangeSet::const_iterator RangeSet::find(std::uint64_t v) const {
    // Last interval with lo <= v.
    auto it = std::upper_bound(v_.begin(), v_.end(), v,
                               [](std::uint64_t x, const Interval& iv) { return x < iv.lo; });
    if (it == v_.begin()) return v_.end();
    --it;
    return v < it->hi ? it : v_.end();
}

bool RangeSet::contains(std::uint64_t v) const {
    if (v_.empty()) return false;
    const Interval& b = v_.back();  // the common query is about recent values
    if (v >= b.lo) return v < b.hi;
    return find(v) != v_.end();
}

std::uint64_t RangeSet::contiguous_end(std::uint64_t from) const {
    auto it = find(from);
    return it == v_.end() ? from : it->hi;
}

void RangeSet::remove_below(std::uint64_t v) {
    auto it = std::partition_point(v_.begin(), v_.end(),
                                   [v](const Interval& iv) { return iv.hi <= v; });
    v_.erase(v_.begin(), it);
    if (!v_.empty() && v_.front().lo < v) v_.front().lo = v;
}

void RangeSet::pop_first() { v_.erase(v_.begin()); }

}  // namespace ndm::transport
