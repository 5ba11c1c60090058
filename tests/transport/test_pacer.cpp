#include <doctest/doctest.h>

#include <cmath>

#include "transport/pacer.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::transport::Pacer;

namespace {
const Instant t0 = Instant{} + 5s;
}

TEST_CASE("Pacer: rate from cwnd and RTT (RFC 9002 §7.7)") {
    CHECK(Pacer::rate_for_window(120'000, 100ms) == doctest::Approx(1.5e6));
    CHECK(Pacer::rate_for_window(120'000, 100ms, 1.0) == doctest::Approx(1.2e6));
    CHECK(Pacer::rate_for_window(120'000, 0ms) == 0);
}

TEST_CASE("Pacer: send quantum = min(max(rate·1 ms, 10·MDS), max(64 KiB, MDS))") {
    Pacer p;
    p.set_rate(1.5e6, 1200);  // 1500 B/ms
    CHECK(p.send_quantum() == 12000);
    p.set_rate(50e6, 1200);   // 50 000 B/ms
    CHECK(p.send_quantum() == 50000);
    p.set_rate(1e9, 1200);
    CHECK(p.send_quantum() == 65536);
    p.set_rate(1e6, 9000);    // jumbo: 10·MDS capped at 64 KiB
    CHECK(p.send_quantum() == 65536);
    p.set_rate(1e6, 70000);
    CHECK(p.send_quantum() == 70000);
}

TEST_CASE("Pacer: unpaced when the rate is 0 or never set") {
    Pacer p;
    CHECK_FALSE(p.paced());
    for (int i = 0; i < 100; ++i) {
        CHECK(p.next_send_time(t0) == t0);
        p.on_sent(t0, 1500);
    }
    p.set_rate(1e6, 1200);
    p.on_sent(t0, 100000);
    CHECK(p.next_send_time(t0) > t0);
    p.set_rate(0, 1200);
    CHECK(p.next_send_time(t0) == t0);
}

TEST_CASE("Pacer: one quantum of burst, then one datagram per bytes/rate") {
    Pacer p;
    p.set_rate(1.2e6, 1200);  // 1200 B/ms → 1 ms per datagram, quantum 12 000
    REQUIRE(p.send_quantum() == 12000);
    Instant now = t0;
    for (int i = 0; i < 10; ++i) {
        REQUIRE(p.next_send_time(now) == now);
        p.on_sent(now, 1200);
    }
    CHECK(p.next_send_time(now) == t0 + 1ms);
    CHECK(p.budget(now) == 0);
    for (int i = 1; i <= 20; ++i) {
        now = p.next_send_time(now);
        CHECK(now == t0 + i * 1ms);
        p.on_sent(now, 1200);
    }
    // After idling, the bucket refills to one quantum, no more.
    now += 1s;
    int burst = 0;
    while (p.next_send_time(now) == now) {
        p.on_sent(now, 1200);
        ++burst;
    }
    CHECK(burst == 10);
}

TEST_CASE("Pacer: a larger send (GSO batch) leaves a deficit that delays the next one") {
    Pacer p;
    p.set_rate(1.2e6, 1200);
    p.on_sent(t0, 12000);  // the whole quantum at once
    CHECK(p.next_send_time(t0) == t0 + 1ms);
    p.on_sent(t0 + 1ms, 12000);  // tokens 1200 − 12 000: one datagram's worth is needed again
    CHECK(p.next_send_time(t0 + 1ms) == t0 + 11ms);
    CHECK(p.budget(t0 + 11ms) == 1200);
}

TEST_CASE("Pacer: no drift, long-run rate within 1 % in virtual time at any timescale") {
    for (double rate : {3e4, 1.2345678e6, 9.87654321e7, 1.25e9, 1.1e10}) {
        CAPTURE(rate);
        Pacer p;
        const std::size_t mds = 1452;
        p.set_rate(rate, mds);
        const double q = static_cast<double>(p.send_quantum());
        Instant now = t0;
        const int n = 20000;
        double worst = 0;
        for (int i = 0; i < n; ++i) {
            now = p.next_send_time(now);
            // Ideal: tokens q + rate·t − i·mds reach one datagram at t.
            const double ideal_ns = std::max(0.0, ((i + 1) * static_cast<double>(mds) - q) / rate * 1e9);
            const double actual_ns = static_cast<double>((now - t0).count());
            worst = std::max(worst, std::abs(actual_ns - ideal_ns));
            p.on_sent(now, mds);
        }
        CHECK(worst <= 1.001);  // each send at most 1 ns late, never accumulating
        const double elapsed = ndm::to_seconds(now - t0);
        const double measured = (n * static_cast<double>(mds) - q) / elapsed;
        CHECK(measured == doctest::Approx(rate).epsilon(0.01));
    }
}
