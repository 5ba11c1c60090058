// A sorted set of disjoint, non-adjacent half-open intervals [lo, hi) of
// uint64: received packet numbers (RFC 9000 §13.2.3) and stream reassembly
// offsets. Stored as a sorted vector: the common case (in-order arrival) only
// touches the last interval, and the interval count stays small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ndm::transport {

class RangeSet {
public:
    struct Interval {
        std::uint64_t lo;
        std::uint64_t hi;  // exclusive
        bool operator==(const Interval&) const = default;
    };
    using const_iterator = std::vector<Interval>::const_iterator;

    // Inserts [lo, hi), merging with overlapping or adjacent intervals.
    // Returns how many values were not present before (0 for a duplicate).
    std::uint64_t add(std::uint64_t lo, std::uint64_t hi);

    [[nodiscard]] bool contains(std::uint64_t v) const;
    // If from is covered, the end of the interval holding it; else from.
    [[nodiscard]] std::uint64_t contiguous_end(std::uint64_t from) const;

    [[nodiscard]] std::size_t interval_count() const { return v_.size(); }
    [[nodiscard]] bool empty() const { return v_.empty(); }
    // Lowest / highest interval; the set must not be empty.
    [[nodiscard]] Interval first() const { return v_.front(); }
    [[nodiscard]] Interval last() const { return v_.back(); }

    // Drops every value < v.
    void remove_below(std::uint64_t v);
    // Drops the lowest interval; the set must not be empty.
    void pop_first();
    void clear() { v_.clear(); }

    // Ascending order.
    [[nodiscard]] const_iterator begin() const { return v_.begin(); }
    [[nodiscard]] const_iterator end() const { return v_.end(); }
    // Descending order (ACK frames list the highest range first).
    [[nodiscard]] auto rbegin() const { return v_.rbegin(); }
    [[nodiscard]] auto rend() const { return v_.rend(); }

private:
    // The interval containing v, or end().
    [[nodiscard]] const_iterator find(std::uint64_t v) const;

    std::vector<Interval> v_;  // ascending by lo; gaps of at least one value between entries
};

}  // namespace ndm::transport
