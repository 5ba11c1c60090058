// The windowed maximum BBR keeps its bandwidth estimate in
// (src/cc/windowed_max.hpp): the best sample within the window, and when it
// ages out, the best of the samples after it, not zero and not the oldest.
#include <doctest/doctest.h>

#include "cc/windowed_max.hpp"

using ndm::cc::WindowedMax;

TEST_CASE("windowed max: the best sample holds for the window, then the best later one takes over") {
    WindowedMax f(10);
    f.reset(0, 5);
    CHECK(f.update(1, 9) == 9);
    CHECK(f.update(2, 3) == 9);
    CHECK(f.update(5, 7) == 9);   // a later second choice
    CHECK(f.update(8, 4) == 9);
    CHECK(f.update(11, 2) == 9);  // 9 was taken at 1: still inside (11 - 1 = 10)
    CHECK(f.update(12, 2) == 7);  // 9 aged out; 7 (at 5) is the best within the window
    CHECK(f.update(16, 1) == 4);  // 7 aged out too; 4 (at 8) remains
    CHECK(f.update(40, 3) == 3);  // everything aged out: the new sample alone
}

TEST_CASE("windowed max: a new best replaces everything at once, and equal values refresh it") {
    WindowedMax f(10);
    f.reset(0, 1);
    f.update(3, 6);
    f.update(4, 5);
    CHECK(f.update(6, 8) == 8);
    CHECK(f.update(15, 8) == 8);  // equal: taken as the new best, so it lives on from 15
    CHECK(f.update(24, 1) == 8);
    CHECK(f.update(26, 1) == 1);
}
