// RFC 8985 §6.2's reordering window (LossDetection::rack).
#include <doctest/doctest.h>

#include "transport/rack_reordering.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::transport::RackReorderingWindow;

TEST_CASE("RackReorderingWindow: 0 until reordering is seen, in recovery or once 3 packets overtook") {
    RackReorderingWindow w;
    CHECK(w.window(false, false, 100ms, 120ms) == 25ms);  // min_rtt/4 from the start
    CHECK(w.window(true, false, 100ms, 120ms) == 0ms);
    CHECK(w.window(false, true, 100ms, 120ms) == 0ms);
    w.on_reordering();
    CHECK(w.reordering_seen());
    CHECK(w.window(true, true, 100ms, 120ms) == 25ms);
}

TEST_CASE("RackReorderingWindow: a spurious loss adds min_rtt/4 once per round trip, up to the smoothed RTT") {
    RackReorderingWindow w;
    w.on_spurious_loss(10);  // the round ends when pn 10 (sent from now on) is acknowledged
    CHECK(w.multiplier() == 2);
    CHECK(w.reordering_seen());
    w.on_spurious_loss(12);
    CHECK(w.multiplier() == 2);
    w.on_largest_acked(9);
    w.on_spurious_loss(13);
    CHECK(w.multiplier() == 2);
    w.on_largest_acked(10);
    w.on_spurious_loss(20);
    CHECK(w.multiplier() == 3);
    CHECK(w.window(false, false, 100ms, 200ms) == 75ms);
    CHECK(w.window(false, false, 100ms, 60ms) == 60ms);  // capped at srtt
}

TEST_CASE("RackReorderingWindow: 16 recoveries without a spurious loss bring the multiplier back to 1") {
    RackReorderingWindow w;
    w.on_spurious_loss(1);
    w.on_largest_acked(1);
    w.on_spurious_loss(2);
    REQUIRE(w.multiplier() == 3);
    for (int i = 0; i < RackReorderingWindow::kPersist - 1; ++i) w.on_recovery();
    CHECK(w.multiplier() == 3);
    w.on_recovery();
    CHECK(w.multiplier() == 1);
    CHECK(w.reordering_seen());  // what was seen stays seen
}

TEST_CASE("RackReorderingWindow: the multiplier is bounded") {
    RackReorderingWindow w;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        w.on_spurious_loss(i + 1);
        w.on_largest_acked(i + 1);
    }
    CHECK(w.multiplier() == RackReorderingWindow::kMaxMultiplier);
    CHECK(w.window(false, false, 100ms, 10s) == 100ms / 4 * RackReorderingWindow::kMaxMultiplier);
}
