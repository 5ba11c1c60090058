#include <doctest/doctest.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "transport/ack_tracker.hpp"

using namespace std::chrono_literals;
using ndm::Instant;
using ndm::kNever;
using ndm::transport::AckTracker;
using ndm::wire::AckRange;

namespace {
const Instant t0 = Instant{} + 1s;
}

TEST_CASE("AckTracker: ACK every second ack-eliciting packet, else after max_ack_delay") {
    AckTracker at({.max_ack_delay = 25ms});
    CHECK_FALSE(at.has_received());
    CHECK(at.ack_deadline() == kNever);
    CHECK_FALSE(at.ack_pending());

    CHECK(at.on_packet_received(0, true, t0));
    CHECK(at.ack_pending());
    CHECK(at.ack_deadline() == t0 + 25ms);
    // A second ack-eliciting packet: ACK now (RFC 9000 §13.2.2).
    CHECK(at.on_packet_received(1, true, t0 + 5ms));
    CHECK(at.ack_deadline() == t0 + 5ms);
    at.on_ack_sent(t0 + 5ms);
    CHECK_FALSE(at.ack_pending());
    CHECK(at.ack_deadline() == kNever);

    CHECK(at.on_packet_received(2, true, t0 + 10ms));
    CHECK(at.ack_deadline() == t0 + 35ms);
    // A later packet does not push the deadline back.
    CHECK(at.on_packet_received(3, false, t0 + 20ms));
    CHECK(at.ack_deadline() == t0 + 35ms);
    CHECK(at.on_packet_received(4, true, t0 + 30ms));
    CHECK(at.ack_deadline() == t0 + 30ms);
}

TEST_CASE("AckTracker: non-ack-eliciting packets alone never trigger an ACK") {
    AckTracker at({});
    for (std::uint64_t pn = 0; pn < 5; ++pn) CHECK(at.on_packet_received(pn, false, t0));
    CHECK(at.ack_pending());  // an ACK may be bundled
    CHECK(at.ack_deadline() == kNever);
    // Even out of order.
    CHECK(at.on_packet_received(9, false, t0));
    CHECK(at.ack_deadline() == kNever);
}

TEST_CASE("AckTracker: immediate ACK on a gap and on reordering (RFC 9000 §13.2.1)") {
    AckTracker at({.max_ack_delay = 25ms, .ack_eliciting_threshold = 10});
    CHECK(at.on_packet_received(0, true, t0));
    CHECK(at.ack_deadline() == t0 + 25ms);
    at.on_ack_sent(t0);
    // 1 is missing.
    CHECK(at.on_packet_received(2, true, t0 + 1ms));
    CHECK(at.ack_deadline() == t0 + 1ms);
    at.on_ack_sent(t0 + 1ms);
    // 1 arrives late: reordered.
    CHECK(at.on_packet_received(1, true, t0 + 2ms));
    CHECK(at.ack_deadline() == t0 + 2ms);
    at.on_ack_sent(t0 + 2ms);
    // In order again: delayed.
    CHECK(at.on_packet_received(3, true, t0 + 3ms));
    CHECK(at.ack_deadline() == t0 + 28ms);
    at.on_ack_sent(t0 + 3ms);
    // A hole left by a non-ack-eliciting packet still counts: 4 missing
    // between the last ack-eliciting (3) and 6.
    CHECK(at.on_packet_received(5, false, t0 + 4ms));
    CHECK(at.ack_deadline() == kNever);
    CHECK(at.on_packet_received(6, true, t0 + 5ms));
    CHECK(at.ack_deadline() == t0 + 5ms);
}

TEST_CASE("AckTracker: immediate ACK when the first packet is not pn 0") {
    AckTracker at({});
    CHECK(at.on_packet_received(3, true, t0));
    CHECK(at.ack_deadline() == t0);
}

TEST_CASE("AckTracker: duplicates are detected") {
    AckTracker at({});
    CHECK(at.on_packet_received(0, true, t0));
    CHECK(at.on_packet_received(2, true, t0));
    at.on_ack_sent(t0);
    CHECK_FALSE(at.on_packet_received(0, true, t0 + 1ms));
    CHECK_FALSE(at.on_packet_received(2, false, t0 + 1ms));
    CHECK_FALSE(at.ack_pending());  // a duplicate changes nothing
    CHECK(at.ack_deadline() == kNever);
    CHECK(at.on_packet_received(1, true, t0 + 1ms));
    CHECK_FALSE(at.on_packet_received(1, true, t0 + 1ms));
}

TEST_CASE("AckTracker: ACK frame ranges and ack_delay") {
    AckTracker at({});
    for (std::uint64_t pn : {0, 1, 2, 5, 6, 9}) at.on_packet_received(pn, true, t0 + pn * 1ms);
    // A late lower packet does not change the largest's arrival time.
    at.on_packet_received(7, true, t0 + 20ms);
    auto f = at.build_ack(t0 + 16ms);
    CHECK(f.largest() == 9);
    CHECK(f.ranges == std::vector<AckRange>{{9, 9}, {5, 7}, {0, 2}});
    CHECK(f.ack_delay == 7ms);  // 9 arrived at t0 + 9 ms
    // Never negative.
    CHECK(at.build_ack(t0).ack_delay == 0ms);
}

TEST_CASE("AckTracker: at most max_ranges ranges, the highest ones") {
    AckTracker at({.max_ranges = 32});
    for (std::uint64_t pn = 0; pn <= 200; pn += 2) at.on_packet_received(pn, true, t0);
    auto f = at.build_ack(t0);
    REQUIRE(f.ranges.size() == 32);
    CHECK(f.ranges.front() == AckRange{200, 200});
    CHECK(f.ranges.back() == AckRange{138, 138});
}

TEST_CASE("AckTracker: memory is bounded, the duplicate floor rises") {
    AckTracker at({.max_ranges = 32});  // keeps at most max(4·32, 256) = 256 intervals
    for (std::uint64_t pn = 0; pn < 2000; pn += 2) at.on_packet_received(pn, true, t0);
    CHECK(at.received().interval_count() <= 256);
    CHECK(at.duplicate_floor() > 0);
    // Below the floor: treated as a duplicate even if it never arrived.
    CHECK_FALSE(at.on_packet_received(1, true, t0));
    CHECK_FALSE(at.on_packet_received(0, true, t0));
    // Above it, holes are still accepted.
    CHECK(at.on_packet_received(1997, true, t0));
    CHECK(at.largest_received() == 1998);
}

TEST_CASE("AckTracker: after an ACK is acknowledged, older packet numbers are not reported") {
    AckTracker at({});
    for (std::uint64_t pn = 0; pn < 10; ++pn) at.on_packet_received(pn, true, t0);
    at.on_packet_received(12, true, t0);
    at.on_ack_sent(t0);
    at.on_ack_acknowledged(9);
    at.on_packet_received(13, true, t0 + 1ms);
    CHECK(at.build_ack(t0 + 1ms).ranges == std::vector<AckRange>{{12, 13}});
    // Still duplicates.
    CHECK_FALSE(at.on_packet_received(5, true, t0 + 2ms));
    // A late packet below the floor is reported again (the sender learns of
    // the spurious loss).
    CHECK(at.on_packet_received(10, true, t0 + 2ms));
    CHECK(at.build_ack(t0 + 2ms).ranges == std::vector<AckRange>{{12, 13}, {10, 10}});
    // The largest is always reported.
    at.on_ack_acknowledged(13);
    CHECK(at.build_ack(t0 + 3ms).ranges == std::vector<AckRange>{{13, 13}});
}

// ---- ACK frequency (draft-ietf-quic-ack-frequency-14) ----------------------

namespace {
// Receives pn at t0 and reports whether an ACK is due at once; sends it if so.
bool acks_at_once(AckTracker& at, std::uint64_t pn, ndm::Ecn ecn = ndm::Ecn::not_ect) {
    REQUIRE(at.on_packet_received(pn, true, t0, ecn));
    if (at.ack_deadline() != t0) return false;
    at.on_ack_sent(t0);
    return true;
}

// A tracker under ACK_FREQUENCY's reordering threshold r (and a threshold of
// 100 packets, so that only reordering sends an ACK at once).
AckTracker with_reordering(std::uint64_t r) {
    AckTracker at({.max_ack_delay = 25ms});
    REQUIRE(at.set_frequency(0, {.ack_eliciting_threshold = 100, .max_ack_delay = 25ms, .reordering_threshold = r}));
    return at;
}

// Receives each row's packet number and checks whether it is acknowledged at once.
void check_rows(AckTracker& at, std::initializer_list<std::pair<std::uint64_t, bool>> rows) {
    for (const auto& [pn, ack] : rows) {
        CAPTURE(pn);
        CHECK(acks_at_once(at, pn) == ack);
    }
}
}  // namespace

TEST_CASE("AckTracker: an ACK_FREQUENCY request sets the threshold and the delay, and obsolete ones are ignored") {
    AckTracker at({.max_ack_delay = 25ms});
    CHECK(at.set_frequency(0, {.ack_eliciting_threshold = 4, .max_ack_delay = 10ms, .reordering_threshold = 1}));
    // "More than 4": the fifth ack-eliciting packet is acknowledged at once.
    for (std::uint64_t pn = 0; pn < 4; ++pn) {
        REQUIRE(at.on_packet_received(pn, true, t0));
        CHECK(at.ack_deadline() == t0 + 10ms);
    }
    REQUIRE(at.on_packet_received(4, true, t0));
    CHECK(at.ack_deadline() == t0);
    at.on_ack_sent(t0);
    // A reordered, older request (sequence 0 again) changes nothing (§4).
    CHECK_FALSE(at.set_frequency(0, {.ack_eliciting_threshold = 0, .max_ack_delay = 1ms, .reordering_threshold = 1}));
    REQUIRE(at.on_packet_received(5, true, t0));
    CHECK(at.ack_deadline() == t0 + 10ms);
    // Threshold 0 acknowledges every ack-eliciting packet; a lowered threshold
    // that the packets already exceed makes the ACK due.
    CHECK(at.set_frequency(1, {.ack_eliciting_threshold = 0, .max_ack_delay = 1ms, .reordering_threshold = 1}));
    CHECK(at.ack_deadline() == t0);
    // An absurd threshold is capped: the receiver may acknowledge more often than asked.
    CHECK(at.set_frequency(9, {.ack_eliciting_threshold = ~0ull, .max_ack_delay = 1ms, .reordering_threshold = 1}));
    at.on_ack_sent(t0);
    for (std::uint64_t pn = 6; pn < 6 + AckTracker::kMaxFrequencyThreshold; ++pn) CHECK_FALSE(acks_at_once(at, pn));
    CHECK(acks_at_once(at, 6 + AckTracker::kMaxFrequencyThreshold));
}

TEST_CASE("AckTracker: reordering threshold 3 acknowledges gaps as the draft's Table 1 does") {
    AckTracker at = with_reordering(3);
    // Received: 0 1 3 4 5 8 9 10; ACKs at 5, 9 and 10 (ack-frequency-14 §6.2.1).
    check_rows(at, {{0, false}, {1, false}, {3, false}, {4, false}, {5, true}, {8, false}, {9, true}, {10, true}});
    // A packet at or below Largest Acked - 3 (the sender may have declared it lost): at once.
    CHECK(acks_at_once(at, 2));
}

TEST_CASE("AckTracker: reordering threshold 5 as the draft's Table 2, and 0 never acknowledges a gap at once") {
    AckTracker at = with_reordering(5);
    check_rows(at, {{0, false}, {1, false}, {3, false}, {5, false}, {6, false}, {7, true}, {8, false}, {9, true}});
    AckTracker none = with_reordering(0);
    check_rows(none, {{0, false}, {10, false}, {5, false}, {20, false}, {1, false}});
}

TEST_CASE("AckTracker: with a threshold above 1, only the first CE after unmarked packets is acknowledged at once") {
    using ndm::Ecn;
    AckTracker at({.max_ack_delay = 25ms});
    REQUIRE(at.set_frequency(0, {.ack_eliciting_threshold = 10, .max_ack_delay = 25ms, .reordering_threshold = 1}));
    CHECK_FALSE(acks_at_once(at, 0, Ecn::ect0));
    CHECK(acks_at_once(at, 1, Ecn::ce));
    CHECK_FALSE(acks_at_once(at, 2, Ecn::ce));
    CHECK_FALSE(acks_at_once(at, 3, Ecn::ect0));
    CHECK(acks_at_once(at, 4, Ecn::ce));
    // Threshold 1 keeps RFC 9000 §13.2.1: every CE at once.
    AckTracker rfc({.max_ack_delay = 25ms});
    REQUIRE(rfc.set_frequency(0, {.ack_eliciting_threshold = 1, .max_ack_delay = 25ms, .reordering_threshold = 1}));
    CHECK(acks_at_once(rfc, 0, Ecn::ce));
    CHECK(acks_at_once(rfc, 1, Ecn::ce));
}

TEST_CASE("AckTracker: IMMEDIATE_ACK makes the ACK due at once") {
    AckTracker at({.max_ack_delay = 25ms});
    REQUIRE(at.set_frequency(0, {.ack_eliciting_threshold = 10, .max_ack_delay = 25ms, .reordering_threshold = 1}));
    REQUIRE(at.on_packet_received(0, true, t0));
    CHECK(at.ack_deadline() == t0 + 25ms);
    at.request_immediate_ack(t0 + 1ms);
    CHECK(at.ack_deadline() == t0 + 1ms);
}
