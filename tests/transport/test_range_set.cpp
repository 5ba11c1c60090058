#include <doctest/doctest.h>

#include <random>
#include <set>
#include <vector>

#include "transport/range_set.hpp"

using ndm::transport::RangeSet;
using Iv = RangeSet::Interval;

namespace {
std::vector<Iv> intervals(const RangeSet& s) { return {s.begin(), s.end()}; }
}  // namespace

TEST_CASE("RangeSet: add merges adjacent and overlapping intervals") {
    RangeSet s;
    CHECK(s.empty());
    CHECK(s.add(5, 5) == 0);  // empty interval
    CHECK(s.empty());
    CHECK(s.add(0, 1) == 1);
    CHECK(s.add(1, 2) == 1);  // adjacent: extends
    CHECK(s.interval_count() == 1);
    CHECK(s.add(0, 2) == 0);  // duplicate
    CHECK(s.add(10, 20) == 10);
    CHECK(s.add(4, 6) == 2);
    CHECK(intervals(s) == std::vector<Iv>{{0, 2}, {4, 6}, {10, 20}});
    CHECK(s.add(5, 12) == 4);  // bridges [4,6) and [10,20): new 6..9
    CHECK(intervals(s) == std::vector<Iv>{{0, 2}, {4, 20}});
    CHECK(s.add(2, 4) == 2);  // fills the hole exactly
    CHECK(intervals(s) == std::vector<Iv>{{0, 20}});
    CHECK(s.add(15, 25) == 5);  // overlaps the end
    CHECK(s.first() == Iv{0, 25});
    CHECK(s.last() == Iv{0, 25});
}

TEST_CASE("RangeSet: insertion before, between and across") {
    RangeSet s;
    s.add(100, 110);
    s.add(50, 60);  // before everything
    s.add(70, 80);  // between
    CHECK(intervals(s) == std::vector<Iv>{{50, 60}, {70, 80}, {100, 110}});
    CHECK(s.add(40, 120) == 80 - 30);  // swallows all three: 80 values, 30 present
    CHECK(intervals(s) == std::vector<Iv>{{40, 120}});
}

TEST_CASE("RangeSet: contains, contiguous_end, first, last") {
    RangeSet s;
    s.add(0, 3);
    s.add(5, 8);
    s.add(20, 21);
    CHECK(s.contains(0));
    CHECK(s.contains(2));
    CHECK_FALSE(s.contains(3));
    CHECK(s.contains(7));
    CHECK_FALSE(s.contains(8));
    CHECK(s.contains(20));
    CHECK_FALSE(s.contains(21));
    CHECK_FALSE(s.contains(UINT64_MAX));
    CHECK(s.contiguous_end(0) == 3);
    CHECK(s.contiguous_end(1) == 3);
    CHECK(s.contiguous_end(3) == 3);
    CHECK(s.contiguous_end(6) == 8);
    CHECK(s.contiguous_end(9) == 9);
    CHECK(s.first() == Iv{0, 3});
    CHECK(s.last() == Iv{20, 21});
    CHECK(s.interval_count() == 3);
}

TEST_CASE("RangeSet: remove_below and pop_first") {
    RangeSet s;
    s.add(0, 3);
    s.add(5, 8);
    s.add(20, 30);
    s.remove_below(1);
    CHECK(intervals(s) == std::vector<Iv>{{1, 3}, {5, 8}, {20, 30}});
    s.remove_below(3);
    CHECK(intervals(s) == std::vector<Iv>{{5, 8}, {20, 30}});
    s.remove_below(25);
    CHECK(intervals(s) == std::vector<Iv>{{25, 30}});
    s.add(40, 41);
    s.pop_first();
    CHECK(intervals(s) == std::vector<Iv>{{40, 41}});
    s.remove_below(100);
    CHECK(s.empty());
}

TEST_CASE("RangeSet: randomized against std::set") {
    std::mt19937_64 rng(12345);
    for (int round = 0; round < 10; ++round) {
        RangeSet s;
        std::set<std::uint64_t> ref;
        for (int op = 0; op < 300; ++op) {
            const std::uint64_t lo = rng() % 400;
            const std::uint64_t len = rng() % 8;
            if (rng() % 16 == 0) {
                s.remove_below(lo);
                ref.erase(ref.begin(), ref.lower_bound(lo));
            } else {
                std::uint64_t fresh = 0;
                for (std::uint64_t v = lo; v < lo + len; ++v) fresh += ref.insert(v).second;
                REQUIRE(s.add(lo, lo + len) == fresh);
            }
            // Intervals are sorted, disjoint, non-adjacent and cover exactly ref.
            std::uint64_t covered = 0;
            bool first = true;
            std::uint64_t prev_hi = 0;
            for (const Iv& iv : s) {
                REQUIRE(iv.lo < iv.hi);
                if (!first) REQUIRE(iv.lo > prev_hi);
                first = false;
                prev_hi = iv.hi;
                covered += iv.hi - iv.lo;
            }
            REQUIRE(covered == ref.size());
            const std::uint64_t probe = rng() % 410;
            REQUIRE(s.contains(probe) == (ref.count(probe) == 1));
            std::uint64_t e = probe;
            while (ref.count(e)) ++e;
            REQUIRE(s.contiguous_end(probe) == e);
        }
    }
}
