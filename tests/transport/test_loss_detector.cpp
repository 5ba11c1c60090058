#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "transport/ack_tracker.hpp"
#include "transport/loss_detector.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::kNever;
using ndm::transport::AckOutcome;
using ndm::transport::AckTracker;
using ndm::transport::LossDetector;
using ndm::transport::PacketSpace;
using ndm::transport::SentPacket;
namespace sent = ndm::transport::sent;

namespace {

const Instant t0{};

SentPacket packet(std::uint64_t pn, Instant t, std::uint32_t bytes = 1200, bool eliciting = true) {
    SentPacket p;
    p.pn = pn;
    p.time_sent = t;
    p.bytes = bytes;
    p.ack_eliciting = eliciting;
    p.in_flight = eliciting;
    p.frames.push_back(sent::Stream{0, pn * 1000, 1000, false});
    return p;
}

// Ranges given highest first, as in the frame.
ndm::wire::AckFrame ack(std::vector<std::pair<std::uint64_t, std::uint64_t>> desc,
                        Duration delay = 0ms) {
    ndm::wire::AckFrame f;
    for (auto [lo, hi] : desc) f.ranges.push_back({lo, hi});
    f.ack_delay = delay;
    return f;
}

std::vector<std::uint64_t> pns(const std::vector<SentPacket>& v) {
    std::vector<std::uint64_t> out;
    for (const auto& p : v) out.push_back(p.pn);
    return out;
}

using Pns = std::vector<std::uint64_t>;

// pn 0 at t0, acked at t0 + 100 ms: smoothed 100, rttvar 50, pto_period 325 ms.
void take_rtt_sample(LossDetector& ld) {
    ld.on_packet_sent(packet(0, t0));
    auto out = ld.on_ack_received(ack({{0, 0}}), t0 + 100ms, true);
    REQUIRE(out.rtt_sample);
    REQUIRE(ld.rtt().smoothed() == 100ms);
}

}  // namespace

TEST_CASE("LossDetector: packet numbers, bytes in flight, simple ACK") {
    LossDetector ld({});
    CHECK(ld.next_packet_number() == 0);
    CHECK(ld.timer() == kNever);
    for (std::uint64_t pn = 0; pn < 3; ++pn) ld.on_packet_sent(packet(pn, t0 + pn * 1ms));
    ld.on_packet_sent(packet(3, t0 + 3ms, 50, false));  // ACK-only: not in flight
    CHECK(ld.next_packet_number() == 4);
    CHECK(ld.bytes_in_flight() == 3600);
    CHECK(ld.ack_eliciting_in_flight() == 3);

    auto out = ld.on_ack_received(ack({{0, 3}}, 2ms), t0 + 53ms, false);
    CHECK_FALSE(out.invalid);
    CHECK(pns(out.acked) == Pns{0, 1, 2, 3});
    CHECK(out.acked[2].frames.size() == 1);
    CHECK(out.lost.empty());
    // RFC 9002 §5.1: the largest is newly acked and some newly acked packet is
    // ack-eliciting, so this is a sample even though pn 3 itself is not.
    CHECK(out.rtt_sample);
    CHECK(ld.rtt().latest() == 50ms);
    CHECK(out.prior_bytes_in_flight == 3600);
    CHECK(out.largest_acked_time_sent == t0 + 3ms);
    CHECK(ld.bytes_in_flight() == 0);
    CHECK(ld.outstanding() == 0);
    CHECK(ld.timer() == kNever);
}

TEST_CASE("LossDetector: RTT sample only when the largest is newly acked and ack-eliciting") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0));
    ld.on_packet_sent(packet(1, t0 + 1ms));
    auto a = ld.on_ack_received(ack({{1, 1}}), t0 + 51ms, false);
    CHECK(a.rtt_sample);
    CHECK(a.lost.empty());  // pn 0 is within the time threshold of 9/8 · 50 ms
    CHECK(ld.rtt().latest() == 50ms);
    CHECK(a.largest_acked_time_sent == t0 + 1ms);
    // Newly acks pn 0 but the largest (1) was acked before: no sample.
    auto b = ld.on_ack_received(ack({{0, 1}}), t0 + 500ms, false);
    CHECK(pns(b.acked) == Pns{0});
    CHECK_FALSE(b.rtt_sample);
    CHECK(ld.rtt().latest() == 50ms);
    // Duplicate ACK: nothing new.
    auto c = ld.on_ack_received(ack({{0, 1}}), t0 + 600ms, false);
    CHECK(c.acked.empty());
    CHECK_FALSE(c.rtt_sample);
}

TEST_CASE("LossDetector: packet-threshold loss, then time-threshold loss via timer()") {
    LossDetector ld({.max_ack_delay = 25ms});
    take_rtt_sample(ld);  // pn 0
    for (std::uint64_t pn = 1; pn <= 10; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms + pn * 1ms));
    CHECK(ld.bytes_in_flight() == 12000);

    // Ack 5 at t0+206 ms (RTT 101 ms): 1 and 2 are ≥ 3 below it (RFC 9002 §6.1.1);
    // 3 and 4 are not, and were sent too recently for the time threshold.
    auto out = ld.on_ack_received(ack({{5, 5}}), t0 + 206ms, true);
    CHECK(pns(out.acked) == Pns{5});
    CHECK(pns(out.lost) == Pns{1, 2});
    CHECK(out.lost[0].frames.size() == 1);  // frames handed back for retransmission
    CHECK(out.largest_lost_time_sent == t0 + 102ms);
    CHECK_FALSE(out.persistent_congestion);
    CHECK(ld.bytes_in_flight() == 12000 - 3 * 1200);

    // RFC 9002 §6.1.2: loss_delay = 9/8 · max(smoothed, latest).
    const Duration delay = std::max(ld.rtt().smoothed(), ld.rtt().latest()) * 9 / 8;
    const Instant loss_time = t0 + 103ms + delay;
    CHECK(ld.timer() == loss_time);
    CHECK(ld.on_timeout(loss_time - 1ns).lost.empty());  // early wake-up: nothing
    auto to = ld.on_timeout(loss_time);
    CHECK_FALSE(to.pto);
    CHECK(pns(to.lost) == Pns{3});  // 4 was sent 1 ms later
    CHECK(ld.timer() == loss_time + 1ms);
    to = ld.on_timeout(loss_time + 1ms);
    CHECK(pns(to.lost) == Pns{4});
    CHECK(ld.bytes_in_flight() == 5 * 1200);  // 6..10
    CHECK(ld.pto_count() == 0);
    // Only PTO is armed now, from the last ack-eliciting send (pn 10).
    CHECK(ld.timer() == t0 + 110ms + ld.rtt().pto_period(25ms));
}

TEST_CASE("LossDetector: one ACK of 5..10 declares 1..7 lost by packet threshold") {
    LossDetector ld({});
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 10; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms + pn * 1ms));
    auto out = ld.on_ack_received(ack({{5, 10}}), t0 + 220ms, true);
    CHECK(pns(out.acked) == Pns{5, 6, 7, 8, 9, 10});
    CHECK(pns(out.lost) == Pns{1, 2, 3, 4});
    CHECK(ld.bytes_in_flight() == 0);
    CHECK(ld.timer() == kNever);
}

TEST_CASE("LossDetector: PTO when nothing is acknowledged, with the initial RTT") {
    LossDetector ld({.max_ack_delay = 25ms});
    ld.on_packet_sent(packet(0, t0));
    // No sample: 333 ms + 4 · 166.5 ms + 25 ms.
    CHECK(ld.timer() == t0 + 1024ms);
    auto to = ld.on_timeout(t0 + 1024ms);
    CHECK(to.pto);
    CHECK(to.probes == 2);
    CHECK(to.lost.empty());  // a PTO declares nothing lost
    CHECK(ld.bytes_in_flight() == 1200);
    CHECK(ld.timer() == t0 + 2048ms);
    // The probes restart the timer from their send time, still backed off.
    ld.on_packet_sent(packet(1, t0 + 1024ms));
    ld.on_packet_sent(packet(2, t0 + 1024ms));
    CHECK(ld.timer() == t0 + 1024ms + 2048ms);
    to = ld.on_timeout(t0 + 3072ms);
    CHECK(to.pto);
    CHECK(ld.pto_count() == 2);
    CHECK(ld.timer() == t0 + 1024ms + 4096ms);
    // No ack-eliciting packet in flight: no PTO.
    LossDetector idle({});
    idle.on_packet_sent(packet(0, t0, 40, false));
    CHECK(idle.timer() == kNever);
    CHECK_FALSE(idle.on_timeout(t0 + 10s).pto);
}

TEST_CASE("LossDetector: persistent congestion (RFC 9002 §7.6.2)") {
    // After the sample, the final ACK (of pn 9, sent at 1300, acked at 1400)
    // gives latest 100 ms: smoothed 100, rttvar 37.5 → pto_period 275 ms,
    // persistent congestion duration 825 ms.
    auto run = [](Duration spacing, std::vector<std::pair<std::uint64_t, std::uint64_t>> final_ack) {
        LossDetector ld({.max_ack_delay = 25ms});
        take_rtt_sample(ld);
        for (std::uint64_t pn = 1; pn <= 8; ++pn)
            ld.on_packet_sent(packet(pn, t0 + 200ms + (pn - 1) * spacing));
        ld.on_packet_sent(packet(9, t0 + 1300ms));
        auto out = ld.on_ack_received(ack(std::move(final_ack)), t0 + 1400ms, true);
        REQUIRE(ld.rtt().pto_period(25ms) * 3 == 825ms);
        return out;
    };
    SUBCASE("lost span 1..8 longer than the duration") {
        auto out = run(120ms, {{9, 9}});  // span 840 ms > 825 ms
        CHECK(pns(out.lost) == Pns{1, 2, 3, 4, 5, 6, 7, 8});
        CHECK(out.persistent_congestion);
    }
    SUBCASE("a span just under the duration is not enough") {
        auto out = run(825ms / 7, {{9, 9}});
        CHECK(out.lost.size() == 8);
        CHECK_FALSE(out.persistent_congestion);
    }
    SUBCASE("an acknowledged packet in between breaks the span") {
        auto out = run(120ms, {{9, 9}, {4, 4}});  // spans 1..3 and 5..8 are short
        CHECK(pns(out.lost) == Pns{1, 2, 3, 5, 6, 7, 8});
        CHECK_FALSE(out.persistent_congestion);
    }
}

TEST_CASE("LossDetector: no persistent congestion without a prior RTT sample") {
    LossDetector ld({.max_ack_delay = 25ms});
    // Spread over 5 s, longer than 3 PTOs even with the initial RTT (3 · 1024 ms).
    for (std::uint64_t pn = 0; pn <= 8; ++pn) ld.on_packet_sent(packet(pn, t0 + pn * 625ms));
    ld.on_packet_sent(packet(9, t0 + 5100ms));
    auto out = ld.on_ack_received(ack({{9, 9}}), t0 + 5200ms, true);
    CHECK(out.rtt_sample);  // the first sample comes with this ACK, after the packets were sent
    CHECK(out.lost.size() == 9);
    CHECK_FALSE(out.persistent_congestion);
}

TEST_CASE("LossDetector: persistent congestion needs ack-eliciting packets at both ends") {
    LossDetector ld({.max_ack_delay = 25ms});
    take_rtt_sample(ld);
    ld.on_packet_sent(packet(1, t0 + 200ms));
    for (std::uint64_t pn = 2; pn <= 8; ++pn) ld.on_packet_sent(packet(pn, t0 + 200ms + (pn - 1) * 150ms, 40, false));
    ld.on_packet_sent(packet(9, t0 + 1300ms));
    auto out = ld.on_ack_received(ack({{9, 9}}), t0 + 1400ms, true);
    CHECK(out.lost.size() == 8);
    CHECK_FALSE(out.persistent_congestion);  // only pn 1 is ack-eliciting
}

TEST_CASE("LossDetector: spurious loss: late ACK of packets declared lost") {
    LossDetector ld({});
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 5; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms + pn * 1ms));
    auto a = ld.on_ack_received(ack({{5, 5}}), t0 + 210ms, true);
    REQUIRE(pns(a.lost) == Pns{1, 2});
    CHECK(ld.bytes_in_flight() == 2 * 1200);  // 3, 4

    // Pn 1 arrives late: the event is only half acknowledged.
    auto b = ld.on_ack_received(ack({{5, 5}, {1, 1}}), t0 + 212ms, true);
    CHECK(b.acked.empty());
    CHECK(pns(b.late_acked) == Pns{1});
    CHECK(b.late_acked[0].frames.size() == 1);  // tells which data arrived after all
    CHECK_FALSE(b.spurious_congestion);
    CHECK(ld.bytes_in_flight() == 2 * 1200);  // late acks do not touch bytes in flight

    // Pn 2 too: every packet of the event arrived → spurious, reported once.
    auto c = ld.on_ack_received(ack({{5, 5}, {3, 3}, {1, 1}}), t0 + 214ms, true);
    CHECK(pns(c.acked) == Pns{3});
    CHECK(c.late_acked.empty());
    CHECK_FALSE(c.spurious_congestion);
    auto d = ld.on_ack_received(ack({{1, 5}}), t0 + 215ms, true);
    CHECK(pns(d.acked) == Pns{4});
    CHECK(pns(d.late_acked) == Pns{2});
    CHECK(d.spurious_congestion);
    auto e = ld.on_ack_received(ack({{1, 5}}), t0 + 216ms, true);
    CHECK(e.late_acked.empty());
    CHECK_FALSE(e.spurious_congestion);
    CHECK(ld.bytes_in_flight() == 0);
}

TEST_CASE("LossDetector: spurious detection only for the most recent event") {
    LossDetector ld({});
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 10; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms + pn * 1ms));
    REQUIRE(pns(ld.on_ack_received(ack({{4, 4}}), t0 + 210ms, true).lost) == Pns{1});
    REQUIRE(pns(ld.on_ack_received(ack({{8, 8}, {4, 4}}), t0 + 211ms, true).lost) == Pns{2, 3, 5});
    // Acking the older event's packet is a late ack but not a spurious event.
    auto a = ld.on_ack_received(ack({{8, 8}, {4, 4}, {1, 1}}), t0 + 212ms, true);
    CHECK(pns(a.late_acked) == Pns{1});
    CHECK_FALSE(a.spurious_congestion);
    auto b = ld.on_ack_received(ack({{1, 10}}), t0 + 213ms, true);
    CHECK(pns(b.late_acked) == Pns{2, 3, 5});
    CHECK(pns(b.acked) == Pns{6, 7, 9, 10});
    CHECK(b.spurious_congestion);
}

TEST_CASE("LossDetector: lost packets are forgotten after a while") {
    LossDetector ld({});
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 4; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms + pn * 1ms));
    REQUIRE(pns(ld.on_ack_received(ack({{4, 4}}), t0 + 210ms, true).lost) == Pns{1});
    CHECK(ld.outstanding() >= 3);  // 1 (lost, remembered), 2, 3
    // Much later (> 3 PTOs): the late ACK of 1 is no longer recognised.
    auto out = ld.on_ack_received(ack({{1, 4}}), t0 + 10s, true);
    CHECK(pns(out.acked) == Pns{2, 3});
    CHECK(out.late_acked.empty());
    CHECK_FALSE(out.spurious_congestion);
    CHECK(ld.outstanding() == 0);
}

TEST_CASE("LossDetector: ACK of a packet never sent is invalid and changes nothing") {
    LossDetector ld({});
    for (std::uint64_t pn = 0; pn < 3; ++pn) ld.on_packet_sent(packet(pn, t0));
    auto out = ld.on_ack_received(ack({{3, 3}, {0, 1}}), t0 + 10ms, true);
    CHECK(out.invalid);
    CHECK(out.acked.empty());
    CHECK(ld.bytes_in_flight() == 3600);
    CHECK_FALSE(ld.has_largest_acked());
    // Malformed: ranges not descending.
    CHECK(ld.on_ack_received(ack({{0, 0}, {2, 2}}), t0 + 10ms, true).invalid);
    CHECK(ld.on_ack_received(ack({{2, 1}}), t0 + 10ms, true).invalid);
    CHECK(ld.on_ack_received(ndm::wire::AckFrame{}, t0 + 10ms, true).invalid);
    // Valid again.
    auto ok = ld.on_ack_received(ack({{2, 2}, {0, 0}}), t0 + 10ms, true);
    CHECK_FALSE(ok.invalid);
    CHECK(pns(ok.acked) == Pns{0, 2});
    // Old, forgotten packet numbers inside a range are fine.
    ld.on_ack_received(ack({{0, 2}}), t0 + 11ms, true);
    CHECK_FALSE(ld.on_ack_received(ack({{0, 2}}), t0 + 12ms, true).invalid);
}

TEST_CASE("LossDetector: an ACK of a skipped packet number is optimistic and invalid (RFC 9000 21.4)") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0));
    ld.on_packet_sent(packet(1, t0));
    ld.skip_packet_number();  // 2
    CHECK(ld.next_packet_number() == 3);
    for (std::uint64_t pn = 3; pn < 8; ++pn) ld.on_packet_sent(packet(pn, t0));
    // A receiver that claims everything, the skipped number included.
    auto lie = ld.on_ack_received(ack({{0, 7}}), t0 + 10ms, true);
    CHECK(lie.invalid);
    CHECK(lie.optimistic);
    CHECK(lie.acked.empty());
    CHECK(ld.bytes_in_flight() == 7 * 1200);
    // Around it, honestly: accepted, and the skipped number is neither
    // acknowledged nor ever declared lost.
    auto honest = ld.on_ack_received(ack({{3, 7}, {0, 1}}), t0 + 10ms, true);
    CHECK_FALSE(honest.invalid);
    CHECK(pns(honest.acked) == Pns{0, 1, 3, 4, 5, 6, 7});
    CHECK(honest.lost.empty());
    CHECK(ld.bytes_in_flight() == 0);
    // Still remembered once the sent packets around it are gone.
    CHECK(ld.on_ack_received(ack({{1, 4}}), t0 + 11ms, true).optimistic);
    // Only the last kSkippedRemembered skips are checked.
    std::uint64_t pn = ld.next_packet_number();
    for (std::size_t i = 0; i < LossDetector::kSkippedRemembered; ++i) {
        ld.skip_packet_number();
        ld.on_packet_sent(packet(++pn, t0));
        ++pn;
    }
    CHECK_FALSE(ld.on_ack_received(ack({{2, 2}}), t0 + 12ms, true).invalid);
    CHECK(ld.on_ack_received(ack({{pn - 2, pn - 2}}), t0 + 12ms, true).optimistic);
}

TEST_CASE("LossDetector: bytes_in_flight never underflows, discard_all") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0));
    ld.on_packet_sent(packet(1, t0));
    ld.on_ack_received(ack({{0, 0}}), t0 + 10ms, true);
    ld.on_ack_received(ack({{0, 0}}), t0 + 11ms, true);
    CHECK(ld.bytes_in_flight() == 1200);
    ld.discard_all();
    CHECK(ld.bytes_in_flight() == 0);
    CHECK(ld.outstanding() == 0);
    CHECK(ld.timer() == kNever);
    CHECK(ld.next_packet_number() == 2);  // numbers keep increasing
    auto out = ld.on_ack_received(ack({{0, 1}}), t0 + 12ms, true);
    CHECK_FALSE(out.invalid);
    CHECK(out.acked.empty());
    CHECK(ld.bytes_in_flight() == 0);
    ld.on_packet_sent(packet(2, t0 + 20ms));
    CHECK(ld.bytes_in_flight() == 1200);
    CHECK(pns(ld.on_ack_received(ack({{0, 2}}), t0 + 30ms, true).acked) == Pns{2});
    CHECK(ld.bytes_in_flight() == 0);
}

TEST_CASE("LossDetector: randomized sequence keeps the books balanced") {
    std::mt19937_64 rng(20240607);
    std::size_t total_late = 0, total_spurious = 0, total_lost = 0;
    for (int round = 0; round < 8; ++round) {
        LossDetector ld({.max_ack_delay = 25ms});
        Instant now = t0;
        std::map<std::uint64_t, SentPacket> flying;  // reference: not yet acked or lost
        std::set<std::uint64_t> lost_once, late_once, acked_once;
        std::set<std::uint64_t> delivered;  // what the "receiver" has seen
        std::uint64_t events = 0, spurious = 0;

        auto check_books = [&] {
            std::uint64_t bytes = 0;
            for (const auto& [pn, p] : flying)
                if (p.in_flight) bytes += p.bytes;
            REQUIRE(ld.bytes_in_flight() == bytes);
        };
        auto absorb_lost = [&](const std::vector<SentPacket>& lost) {
            std::uint64_t prev = 0;
            bool first = true;
            for (const auto& p : lost) {
                if (!first) REQUIRE(p.pn > prev);
                first = false;
                prev = p.pn;
                REQUIRE(flying.erase(p.pn) == 1);
                REQUIRE(lost_once.insert(p.pn).second);
            }
            if (std::any_of(lost.begin(), lost.end(), [](const SentPacket& p) { return p.in_flight; }))
                ++events;
        };

        for (int step = 0; step < 600; ++step) {
            now += Duration{static_cast<Duration::rep>(rng() % 20'000'000)};  // 0..20 ms
            const unsigned op = rng() % 10;
            if (op < 5) {
                const bool eliciting = rng() % 4 != 0;
                SentPacket p = packet(ld.next_packet_number(), now,
                                      static_cast<std::uint32_t>(40 + rng() % 1400), eliciting);
                p.in_flight = eliciting || rng() % 2 == 0;  // PADDING-only packets count too
                flying[p.pn] = p;
                if (rng() % 5 != 0) delivered.insert(p.pn);  // 20 % loss
                ld.on_packet_sent(std::move(p));
            } else if (op < 9 && !delivered.empty()) {
                // An ACK of the highest delivered packet numbers, up to 4 ranges.
                ndm::wire::AckFrame f;
                auto it = delivered.rbegin();
                while (it != delivered.rend() && f.ranges.size() < 4) {
                    std::uint64_t hi = *it, lo = hi;
                    ++it;
                    while (it != delivered.rend() && *it == lo - 1) lo = *it++;
                    f.ranges.push_back({lo, hi});
                    if (rng() % 3 == 0 && it != delivered.rend()) ++it;  // drop some information
                }
                f.ack_delay = Duration{static_cast<Duration::rep>(rng() % 30'000'000)};
                auto out = ld.on_ack_received(f, now, rng() % 2 == 0);
                REQUIRE_FALSE(out.invalid);
                std::uint64_t prev = 0;
                bool first = true;
                for (const auto& p : out.acked) {
                    if (!first) REQUIRE(p.pn > prev);
                    first = false;
                    prev = p.pn;
                    REQUIRE(flying.erase(p.pn) == 1);
                    REQUIRE(acked_once.insert(p.pn).second);
                    REQUIRE(delivered.count(p.pn) == 1);
                }
                for (const auto& p : out.late_acked) {
                    REQUIRE(lost_once.count(p.pn) == 1);
                    REQUIRE(late_once.insert(p.pn).second);
                }
                if (out.spurious_congestion) ++spurious;
                absorb_lost(out.lost);
            } else {
                if (ld.timer() != kNever) now = std::max(now, ld.timer());
                auto out = ld.on_timeout(now);
                absorb_lost(out.lost);
            }
            check_books();
            REQUIRE(ld.ack_eliciting_in_flight() ==
                    static_cast<std::size_t>(std::count_if(flying.begin(), flying.end(), [](const auto& kv) {
                        return kv.second.in_flight && kv.second.ack_eliciting;
                    })));
        }
        CHECK(spurious <= events);
        CHECK(acked_once.size() + lost_once.size() + flying.size() == ld.next_packet_number());
        total_late += late_once.size();
        total_spurious += spurious;
        total_lost += lost_once.size();
    }
    // The sequence exercised every path.
    CHECK(total_lost > 0);
    CHECK(total_late > 0);
    CHECK(total_spurious > 0);
}

TEST_CASE("LossDetector + AckTracker over a lossy, reordering path") {
    // 1 ms ticks; one-way delay 20..30 ms (reordering); 5 % loss each way.
    std::mt19937_64 rng(7);
    LossDetector ld({.max_ack_delay = 25ms});
    AckTracker rx({.max_ack_delay = 25ms});
    std::multimap<Instant, std::uint64_t> to_rx;          // packets on the wire
    std::multimap<Instant, ndm::wire::AckFrame> to_tx;    // ACKs on the wire
    std::set<std::uint64_t> acked, lost, late, received;
    Instant now = t0;
    auto send = [&] {
        const std::uint64_t pn = ld.next_packet_number();
        ld.on_packet_sent(packet(pn, now));
        if (rng() % 20 != 0)
            to_rx.emplace(now + 20ms + Duration{static_cast<Duration::rep>(rng() % 10'000'000)}, pn);
    };
    for (int tick = 0; tick < 6000; ++tick) {
        now += 1ms;
        const bool sending = tick < 3000;
        if (sending && ld.bytes_in_flight() < 30 * 1200) send();
        while (!to_rx.empty() && to_rx.begin()->first <= now) {
            const std::uint64_t pn = to_rx.begin()->second;
            to_rx.erase(to_rx.begin());
            if (rx.on_packet_received(pn, true, now)) REQUIRE(received.insert(pn).second);
        }
        if (rx.ack_deadline() <= now) {
            auto f = rx.build_ack(now);
            REQUIRE_FALSE(f.ranges.empty());
            rx.on_ack_sent(now);
            if (rng() % 20 != 0) to_tx.emplace(now + 20ms, std::move(f));
        }
        while (!to_tx.empty() && to_tx.begin()->first <= now) {
            auto out = ld.on_ack_received(to_tx.begin()->second, now, true);
            to_tx.erase(to_tx.begin());
            REQUIRE_FALSE(out.invalid);
            for (const auto& p : out.acked) {
                REQUIRE(received.count(p.pn) == 1);
                REQUIRE(acked.insert(p.pn).second);
            }
            for (const auto& p : out.lost) REQUIRE(lost.insert(p.pn).second);
            for (const auto& p : out.late_acked) {
                REQUIRE(lost.count(p.pn) == 1);
                REQUIRE(late.insert(p.pn).second);
            }
        }
        if (ld.timer() <= now) {
            auto out = ld.on_timeout(now);
            for (const auto& p : out.lost) REQUIRE(lost.insert(p.pn).second);
            if (out.pto) send();  // one probe is enough here
        }
        if (!sending && ld.bytes_in_flight() == 0) break;
    }
    CHECK(ld.bytes_in_flight() == 0);
    CHECK(acked.size() + lost.size() == ld.next_packet_number());
    CHECK(lost.size() > 0);
    // Every packet the receiver saw was reported acked, or lost and then (maybe) late.
    for (std::uint64_t pn : acked) CHECK(lost.count(pn) == 0);
    CHECK(ld.rtt().min() >= 40ms);
    CHECK(ld.rtt().min() <= 60ms);
}

TEST_CASE("LossDetector: a spurious loss widens the reordering thresholds") {
    LossDetector ld(LossDetector::Config{});
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 20; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms));
    // Packet 1 is overtaken by 2..10: declared lost by the packet threshold...
    auto out = ld.on_ack_received(ack({{2, 10}}), t0 + 200ms, true);
    CHECK(pns(out.lost) == Pns{1});
    CHECK(ld.packet_threshold() == 3);
    // ...then arrives: the loss was spurious, the reordering distance was 10.
    out = ld.on_ack_received(ack({{1, 10}}), t0 + 201ms, true);
    CHECK(pns(out.late_acked) == Pns{1});
    CHECK(out.spurious_congestion);
    CHECK(ld.packet_threshold() == 10);
    CHECK(ld.time_threshold_eighths() == 10);
    // The same reordering again is tolerated: 11 overtaken by 12..20 (distance 9).
    out = ld.on_ack_received(ack({{12, 20}, {1, 10}}), t0 + 202ms, true);
    CHECK(out.lost.empty());
}

TEST_CASE("SentFrames keeps frames in order inline and after spilling to the heap") {
    ndm::transport::SentFrames f;
    CHECK(f.empty());
    for (std::uint64_t i = 0; i < 10; ++i) {
        f.push_back(sent::MaxData{i});
        REQUIRE(f.size() == i + 1);
        std::uint64_t expect = 0;
        for (const auto& sf : f) CHECK(std::get<sent::MaxData>(sf).maximum == expect++);
        CHECK(expect == i + 1);
    }
    // Copies and moves keep the frames (lost packets are copied out of their slot).
    auto copy = f;
    auto moved = std::move(f);
    REQUIRE(copy.size() == 10);
    REQUIRE(moved.size() == 10);
    CHECK(std::get<sent::MaxData>(copy[9]).maximum == 9);
    CHECK(std::get<sent::MaxData>(moved[0]).maximum == 0);
    CHECK(f.empty());  // NOLINT(bugprone-use-after-move): moved-from is specified empty
    CHECK(f.begin() == f.end());
    f.push_back(sent::Ping{});
    CHECK(f.size() == 1);
    moved = std::move(copy);
    CHECK(copy.empty());  // NOLINT(bugprone-use-after-move)
    CHECK(moved.size() == 10);
    ndm::transport::SentFrames small;
    small.push_back(sent::Ping{});
    auto small_copy = small;
    CHECK(small_copy.size() == 1);
    CHECK(std::holds_alternative<sent::Ping>(small_copy[0]));
    // Copy-assigning a spilled set over an inline one, and back.
    small_copy = moved;
    REQUIRE(small_copy.size() == 10);
    CHECK(std::get<sent::MaxData>(small_copy[9]).maximum == 9);
    CHECK(moved.size() == 10);
    small_copy = small;
    REQUIRE(small_copy.size() == 1);
    CHECK(std::holds_alternative<sent::Ping>(small_copy[0]));
}

TEST_CASE("LossDetector: a reused AckOutcome is reset by every ACK") {
    LossDetector ld({});
    for (std::uint64_t pn = 0; pn < 10; ++pn) ld.on_packet_sent(packet(pn, t0 + std::chrono::milliseconds(pn)));
    AckOutcome out;
    ld.on_ack_received(ack({{5, 5}}), t0 + 100ms, true, out);
    CHECK(pns(out.acked) == Pns{5});
    CHECK(pns(out.lost) == Pns{0, 1, 2});
    CHECK(out.rtt_sample);
    ld.on_ack_received(ack({{5, 6}}), t0 + 101ms, true, out);
    CHECK(pns(out.acked) == Pns{6});
    CHECK(pns(out.lost) == Pns{3});
    ld.on_ack_received(ack({{20, 20}}), t0 + 102ms, true, out);  // never sent
    CHECK(out.invalid);
    CHECK(out.acked.empty());
    CHECK(out.lost.empty());
    ld.on_ack_received(ack({{5, 6}}), t0 + 103ms, true, out);  // nothing new
    CHECK_FALSE(out.invalid);
    CHECK_FALSE(out.rtt_sample);
    CHECK(out.acked.empty());
}

TEST_CASE("LossDetector: each packet number space numbers its packets from 0") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0), PacketSpace::initial);
    ld.on_packet_sent(packet(1, t0), PacketSpace::initial);
    ld.on_packet_sent(packet(0, t0 + 1ms), PacketSpace::handshake);
    ld.on_packet_sent(packet(0, t0 + 2ms));  // application, the default
    CHECK(ld.next_packet_number(PacketSpace::initial) == 2);
    CHECK(ld.next_packet_number(PacketSpace::handshake) == 1);
    CHECK(ld.next_packet_number() == 1);
    CHECK(ld.next_packet_number(PacketSpace::application) == 1);
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::initial) == 2);
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::handshake) == 1);
    CHECK(ld.ack_eliciting_in_flight() == 1);
    CHECK(ld.outstanding(PacketSpace::initial) == 2);
    CHECK(ld.time_of_last_ack_eliciting(PacketSpace::handshake) == t0 + 1ms);
    CHECK(ld.bytes_in_flight() == 4 * 1200);  // shared by the spaces
    CHECK(std::string(ndm::transport::space_name(PacketSpace::handshake)) == "handshake");
}

TEST_CASE("LossDetector: an ACK in the Handshake space acknowledges only Handshake packets") {
    LossDetector ld({});
    for (std::uint64_t pn = 0; pn < 5; ++pn) ld.on_packet_sent(packet(pn, t0));
    ld.on_packet_sent(packet(0, t0), PacketSpace::handshake);
    ld.on_packet_sent(packet(1, t0), PacketSpace::handshake);
    auto out = ld.on_ack_received(ack({{0, 1}}), t0 + 50ms, false, PacketSpace::handshake);
    CHECK_FALSE(out.invalid);
    CHECK(pns(out.acked) == Pns{0, 1});
    CHECK(out.rtt_sample);  // RFC 9002 §5.1: samples from any space
    CHECK(ld.rtt().latest() == 50ms);
    CHECK(ld.has_largest_acked(PacketSpace::handshake));
    CHECK(ld.largest_acked(PacketSpace::handshake) == 1);
    CHECK_FALSE(ld.has_largest_acked());  // application: nothing acked
    CHECK(ld.ack_eliciting_in_flight() == 5);
    CHECK(ld.bytes_in_flight() == 5 * 1200);
    // Handshake pn 3 was never sent, although application pn 3 was.
    auto bad = ld.on_ack_received(ack({{3, 3}}), t0 + 60ms, false, PacketSpace::handshake);
    CHECK(bad.invalid);
    CHECK(ld.bytes_in_flight() == 5 * 1200);
}

TEST_CASE("LossDetector: Initial and Handshake RTT samples ignore ack_delay") {
    // Second sample 140 ms with a reported ack_delay of 30 ms after a first of 100 ms.
    auto second_smoothed = [](PacketSpace s) {
        LossDetector ld({.max_ack_delay = 25ms});
        ld.on_packet_sent(packet(0, t0), s);
        ld.on_packet_sent(packet(1, t0 + 200ms), s);
        REQUIRE(ld.on_ack_received(ack({{0, 0}}), t0 + 100ms, true, s).rtt_sample);
        REQUIRE(ld.on_ack_received(ack({{0, 1}}, 30ms), t0 + 340ms, true, s).rtt_sample);
        return ld.rtt().smoothed();
    };
    CHECK(second_smoothed(PacketSpace::initial) == Duration{7 * 100ms + 140ms} / 8);
    CHECK(second_smoothed(PacketSpace::handshake) == Duration{7 * 100ms + 140ms} / 8);
    // Application: ack_delay capped at max_ack_delay (confirmed) and subtracted.
    CHECK(second_smoothed(PacketSpace::application) == Duration{7 * 100ms + 115ms} / 8);
}

TEST_CASE("LossDetector: no application PTO before confirmation, no max_ack_delay for the handshake spaces") {
    LossDetector ld({.max_ack_delay = 25ms});
    ld.set_handshake_confirmed(false);
    ld.on_packet_sent(packet(0, t0));  // 0-RTT/1-RTT
    CHECK(ld.timer() == kNever);       // RFC 9002 §6.2.1: not armed for it yet
    ld.on_packet_sent(packet(0, t0 + 10ms), PacketSpace::handshake);
    // Initial RTT, no max_ack_delay: 333 ms + 4 · 166.5 ms.
    CHECK(ld.timer() == t0 + 10ms + 999ms);
    auto to = ld.on_timeout(t0 + 1009ms);
    CHECK(to.pto);
    CHECK(to.probes == 2);
    CHECK(to.space == PacketSpace::handshake);
    CHECK(ld.timer() == t0 + 10ms + 2 * 999ms);
    // Confirmed: the application space competes, with max_ack_delay.
    ld.set_handshake_confirmed(true);
    ld.discard_space(PacketSpace::handshake);  // resets pto_count
    CHECK(ld.timer() == t0 + 1024ms);
    to = ld.on_timeout(t0 + 1024ms);
    CHECK(to.pto);
    CHECK(to.space == PacketSpace::application);
}

TEST_CASE("LossDetector: a client with nothing in flight arms the anti-deadlock PTO") {
    LossDetector ld({.max_ack_delay = 25ms});
    ld.set_handshake_confirmed(false);
    ld.set_peer_completed_address_validation(false);
    CHECK(ld.timer() == kNever);  // nothing sent yet
    ld.on_packet_sent(packet(0, t0), PacketSpace::initial);
    // The server's Initial acks the client's: nothing in flight, but the
    // server may be blocked by its amplification limit (RFC 9002 §6.2.2.1).
    auto out = ld.on_ack_received(ack({{0, 0}}), t0 + 100ms, false, PacketSpace::initial);
    REQUIRE(out.rtt_sample);
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::initial) == 0);
    // From now: smoothed 100 + 4 · rttvar 50 (no max_ack_delay).
    CHECK(ld.timer() == t0 + 400ms);
    auto to = ld.on_timeout(t0 + 400ms);
    CHECK(to.pto);
    CHECK(to.probes == 1);
    CHECK(to.space == PacketSpace::initial);  // no Handshake keys yet
    CHECK(ld.pto_count() == 1);
    CHECK(ld.timer() == t0 + 400ms + 600ms);  // backed off from the timeout
    // The probe is acked, still without address validation: pto_count stays.
    ld.on_packet_sent(packet(1, t0 + 400ms), PacketSpace::initial);
    REQUIRE(ld.on_ack_received(ack({{1, 1}}), t0 + 500ms, false, PacketSpace::initial).rtt_sample);
    CHECK(ld.pto_count() == 1);
    CHECK(ld.timer() == t0 + 500ms + 2 * (ld.rtt().smoothed() + 4 * ld.rtt().rttvar()));
    ld.set_has_handshake_keys(true);
    to = ld.on_timeout(ld.timer());
    CHECK(to.pto);
    CHECK(to.space == PacketSpace::handshake);
    // Once the server has validated the address, nothing in flight means no timer.
    ld.set_peer_completed_address_validation(true);
    CHECK(ld.timer() == kNever);
}

TEST_CASE("LossDetector: discard_space removes its bytes in flight and resets pto_count") {
    LossDetector ld({.max_ack_delay = 25ms});
    for (std::uint64_t pn = 0; pn < 5; ++pn) ld.on_packet_sent(packet(pn, t0 + pn * 1ms), PacketSpace::initial);
    ld.on_packet_sent(packet(0, t0 + 10ms));
    // Ack 4 at t0 + 100 ms: 0 and 1 lost by packet threshold, 2 and 3 outstanding.
    auto out = ld.on_ack_received(ack({{4, 4}}), t0 + 100ms, false, PacketSpace::initial);
    REQUIRE(pns(out.lost) == Pns{0, 1});
    REQUIRE(ld.bytes_in_flight() == 3 * 1200);
    ld.on_timeout(ld.timer());  // Initial loss time for 2
    ld.on_timeout(ld.timer());  // and for 3
    REQUIRE(ld.on_timeout(ld.timer()).pto);
    REQUIRE(ld.pto_count() == 1);
    ld.on_packet_sent(packet(5, t0 + 1s), PacketSpace::initial);
    ld.on_packet_sent(packet(6, t0 + 1s, 40, false), PacketSpace::initial);  // not in flight
    CHECK(ld.discard_space(PacketSpace::initial) == 1200);  // only pn 5: lost ones left already
    CHECK(ld.bytes_in_flight() == 1200);
    CHECK(ld.pto_count() == 0);
    CHECK(ld.discarded(PacketSpace::initial));
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::initial) == 0);
    CHECK(ld.outstanding(PacketSpace::initial) == 0);
    CHECK(ld.time_of_last_ack_eliciting(PacketSpace::initial) == Instant{});
    CHECK(ld.timer() == t0 + 10ms + ld.pto_backoff_period());  // the application packet
    CHECK(ld.discard_space(PacketSpace::initial) == 0);  // idempotent
}

TEST_CASE("LossDetector: restart_space hands back the outstanding packets and keeps the space and its numbers (RFC 9002 6.3)") {
    LossDetector ld({.max_ack_delay = 25ms});
    for (std::uint64_t pn = 0; pn < 5; ++pn) ld.on_packet_sent(packet(pn, t0 + pn * 1ms), PacketSpace::initial);
    ld.on_packet_sent(packet(0, t0 + 10ms));
    auto out = ld.on_ack_received(ack({{4, 4}}), t0 + 100ms, false, PacketSpace::initial);
    REQUIRE(pns(out.lost) == Pns{0, 1});  // 0 and 1 lost, 2 and 3 outstanding
    REQUIRE(ld.on_timeout(ld.timer()).lost.size() == 1);  // 2 by time threshold
    REQUIRE(ld.bytes_in_flight() == 2 * 1200);
    const auto back = ld.restart_space(PacketSpace::initial);
    CHECK(pns(back) == Pns{3});  // neither acknowledged nor declared lost
    CHECK(ld.bytes_in_flight() == 1200);  // the application packet
    CHECK(ld.pto_count() == 0);
    CHECK_FALSE(ld.discarded(PacketSpace::initial));
    CHECK(ld.outstanding(PacketSpace::initial) == 0);
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::initial) == 0);
    CHECK(ld.next_packet_number(PacketSpace::initial) == 5);  // RFC 9000 §17.2.5.3
    ld.on_packet_sent(packet(5, t0 + 200ms), PacketSpace::initial);
    out = ld.on_ack_received(ack({{5, 5}}), t0 + 250ms, false, PacketSpace::initial);
    CHECK(pns(out.acked) == Pns{5});
    CHECK(out.lost.empty());
    // An ACK of a packet from before the restart is valid but acknowledges nothing.
    out = ld.on_ack_received(ack({{3, 3}}), t0 + 260ms, false, PacketSpace::initial);
    CHECK_FALSE(out.invalid);
    CHECK(out.acked.empty());
}

TEST_CASE("LossDetector: an ACK for a discarded space is ignored") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0), PacketSpace::handshake);
    ld.on_packet_sent(packet(0, t0));
    ld.discard_space(PacketSpace::handshake);
    for (auto f : {ack({{0, 0}}), ack({{7, 7}})}) {  // one sent, one never sent
        auto out = ld.on_ack_received(f, t0 + 50ms, true, PacketSpace::handshake);
        CHECK_FALSE(out.invalid);
        CHECK(out.acked.empty());
        CHECK_FALSE(out.rtt_sample);
    }
    CHECK_FALSE(ld.rtt().has_sample());
    CHECK(ld.bytes_in_flight() == 1200);
}

TEST_CASE("LossDetector: sending in a discarded space throws") {
    LossDetector ld({});
    ld.on_packet_sent(packet(0, t0), PacketSpace::initial);
    ld.discard_space(PacketSpace::initial);
    CHECK_THROWS_AS(ld.on_packet_sent(packet(1, t0), PacketSpace::initial), std::logic_error);
    CHECK(ld.bytes_in_flight() == 0);
    ld.on_packet_sent(packet(0, t0), PacketSpace::handshake);  // other spaces still work
    CHECK(ld.bytes_in_flight() == 1200);
}

TEST_CASE("LossDetector: packet-threshold and time-threshold loss in the Initial space") {
    LossDetector ld({});
    for (std::uint64_t pn = 0; pn < 5; ++pn) {
        ld.on_packet_sent(packet(pn, t0 + pn * 1ms), PacketSpace::initial);
        ld.on_packet_sent(packet(pn, t0 + pn * 1ms));
    }
    auto out = ld.on_ack_received(ack({{4, 4}}), t0 + 100ms, false, PacketSpace::initial);
    CHECK(pns(out.acked) == Pns{4});
    CHECK(pns(out.lost) == Pns{0, 1});  // RFC 9002 §6.1.1
    CHECK(out.lost[0].frames.size() == 1);
    CHECK(ld.ack_eliciting_in_flight() == 5);  // the application space is untouched
    CHECK(ld.ack_eliciting_in_flight(PacketSpace::initial) == 2);
    // §6.1.2: 2 is lost 9/8 · 96 ms after it was sent; the Initial loss time
    // comes before any PTO.
    const Instant loss_time = t0 + 2ms + 96ms * 9 / 8;
    CHECK(ld.timer() == loss_time);
    auto to = ld.on_timeout(loss_time);
    CHECK_FALSE(to.pto);
    CHECK(to.space == PacketSpace::initial);
    CHECK(pns(to.lost) == Pns{2});
    CHECK(ld.ack_eliciting_in_flight() == 5);
}

namespace {

LossDetector::Config with(ndm::LossDetection d) {
    LossDetector::Config c;
    c.detection = d;
    return c;
}

}  // namespace

TEST_CASE("LossDetector rack: before any reordering, 3 packets overtaking declare a loss at once") {
    LossDetector ld(with(ndm::LossDetection::rack));
    take_rtt_sample(ld);  // min_rtt = srtt = 100 ms
    for (std::uint64_t pn = 1; pn <= 5; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms));
    auto out = ld.on_ack_received(ack({{4, 5}}), t0 + 200ms, true);
    CHECK(pns(out.lost) == Pns{1, 2});  // RFC 8985 §6.2 Step 4: reo_wnd 0 past DupThresh
    // 3 is overtaken by two: it waits RACK.rtt + min_rtt/4 after its send.
    CHECK(ld.timer() == t0 + 100ms + 100ms + 25ms);
    CHECK_FALSE(ld.rack().reordering_seen());
}

TEST_CASE("LossDetector rack: after reordering, an overtaken packet waits RACK.rtt + min_rtt/4, then a spurious loss widens it") {
    LossDetector ld(with(ndm::LossDetection::rack));
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 2; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms));
    auto out = ld.on_ack_received(ack({{2, 2}}), t0 + 201ms, true);
    CHECK(out.lost.empty());
    out = ld.on_ack_received(ack({{1, 2}}), t0 + 205ms, true);  // 1 arrives after 2: reordering
    CHECK(ld.rack().reordering_seen());
    CHECK(out.lost.empty());

    // 3 is overtaken by four packets: no packet rule any more, only time.
    for (std::uint64_t pn = 3; pn <= 7; ++pn) ld.on_packet_sent(packet(pn, t0 + 210ms));
    out = ld.on_ack_received(ack({{4, 7}}), t0 + 311ms, true);
    CHECK(out.lost.empty());
    const Instant deadline = t0 + 210ms + 101ms + 25ms;  // xmit + RACK.rtt + min_rtt/4
    CHECK(ld.timer() == deadline);
    CHECK(ld.on_timeout(deadline - 1ms).lost.empty());
    CHECK(pns(ld.on_timeout(deadline).lost) == Pns{3});
    // 3 was only late: the window doubles (one step per round trip).
    out = ld.on_ack_received(ack({{3, 7}}), deadline + 1ms, true);
    CHECK(pns(out.late_acked) == Pns{3});
    CHECK(ld.rack().multiplier() == 2);
    // The adaptive thresholds are not rack's: they stay put.
    CHECK(ld.packet_threshold() == 3);
    CHECK(ld.time_threshold_eighths() == 9);
}

TEST_CASE("LossDetector rfc9002: a spurious loss leaves the thresholds fixed") {
    LossDetector ld(with(ndm::LossDetection::rfc9002));
    take_rtt_sample(ld);
    for (std::uint64_t pn = 1; pn <= 20; ++pn) ld.on_packet_sent(packet(pn, t0 + 100ms));
    auto out = ld.on_ack_received(ack({{2, 10}}), t0 + 200ms, true);
    CHECK(pns(out.lost) == Pns{1});
    out = ld.on_ack_received(ack({{1, 10}}), t0 + 201ms, true);
    CHECK(pns(out.late_acked) == Pns{1});
    CHECK(ld.packet_threshold() == 3);
    CHECK(ld.time_threshold_eighths() == 9);
    // The same reordering is again taken for loss.
    out = ld.on_ack_received(ack({{12, 20}, {1, 10}}), t0 + 202ms, true);
    CHECK(pns(out.lost) == Pns{11});
}
