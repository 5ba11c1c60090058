// Delivery-rate estimation (src/transport/delivery_rate,
// draft-cheng-iccrg-delivery-rate-estimation-02, Linux's tcp_rate.c): the
// sample of a steady flow is its rate; ACK compression and send bursts do not
// inflate it; short intervals are not trusted; app-limited phases are marked
// and end; lost and in-flight-at-send travel with the sample; an idle period
// does not dilute the next sample. Then the connection: every AckEvent
// carries a sample, and on a 10 Mbit/s bottleneck the samples measure it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <vector>

#include "ack_trace.hpp"
#include "connection_pair.hpp"
#include "ndm/sim.hpp"
#include "transport/delivery_rate.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using transport::DeliveryRate;
using transport::RateSnapshot;

namespace {

const Instant t0 = Instant{} + 10s;
constexpr std::uint64_t kSize = 1000;

struct Sent {
    Instant time;
    RateSnapshot snap;
};

// A sender and the packets it has in flight, acknowledged in send order.
struct Flow {
    DeliveryRate dr;
    std::deque<Sent> in_flight;
    std::uint64_t bytes_in_flight = 0;

    void send(Instant now) {
        in_flight.push_back({now, dr.on_packet_sent(now, bytes_in_flight, kSize)});
        bytes_in_flight += kSize;
    }
    // Acknowledges the n oldest packets in one ACK at `now`.
    cc::RateSample ack(std::size_t n, Instant now, Duration min_rtt = 0ms) {
        for (std::size_t i = 0; i < n; ++i) {
            dr.on_packet_acked(in_flight.front().snap, in_flight.front().time, kSize, now);
            in_flight.pop_front();
            bytes_in_flight -= kSize;
        }
        return dr.take_sample(min_rtt);
    }
};

}  // namespace

TEST_CASE("delivery rate: a steady flow's samples are its rate") {
    // One packet a millisecond, each acknowledged 51.5 ms after it left.
    Flow f;
    std::vector<cc::RateSample> samples;
    for (int ms = 0; ms < 400; ++ms) {
        const Instant now = t0 + std::chrono::milliseconds(ms);
        f.send(now);
        if (ms >= 51) samples.push_back(f.ack(1, now + 500us, 50ms));
    }
    REQUIRE(samples.size() > 300);
    for (std::size_t i = 100; i < samples.size(); ++i) {
        CAPTURE(i);
        const auto& s = samples[i];
        REQUIRE(s.valid);
        CHECK(s.delivery_rate == doctest::Approx(1e6).epsilon(0.01));  // 1000 bytes per ms
        CHECK(s.rtt == 51500us);
        CHECK(s.newly_acked == kSize);
        CHECK(s.tx_in_flight == 52 * kSize);  // sent with 51 others in flight
        CHECK_FALSE(s.is_app_limited);
        CHECK(s.total_delivered == s.prior_delivered + s.delivered);
    }
}

TEST_CASE("delivery rate: ACK compression and send bursts do not inflate the rate") {
    SUBCASE("eleven packets' ACKs arrive at once, 2 ms after the last left") {
        Flow f;
        f.send(t0);
        f.send(t0 + 1ms);  // keeps the flow busy
        f.ack(1, t0 + 50ms);
        for (int i = 0; i < 10; ++i) f.send(t0 + 50ms + std::chrono::milliseconds(i));
        const auto s = f.ack(11, t0 + 61ms);
        REQUIRE(s.valid);
        CHECK(s.delivered == 11 * kSize);
        // Their ACKs span 11 ms since the delivery before them, but they
        // left over 59 ms since the send that delivery answered: the rate
        // is the send rate, not the compressed ACKs' (11000 B / 11 ms).
        CHECK(s.interval == 59ms);
        CHECK(s.delivery_rate == doctest::Approx(11.0 * kSize / 0.059));
    }
    SUBCASE("a burst sent at once, acknowledged at the path's pace") {
        Flow f;
        for (int i = 0; i < 10; ++i) f.send(t0);
        cc::RateSample last;
        for (int i = 0; i < 10; ++i) last = f.ack(1, t0 + 50ms + std::chrono::milliseconds(i * 2), 40ms);
        REQUIRE(last.valid);
        // 10 packets over the 68 ms since the burst's delivery point (t0):
        // the ACK interval, not the zero send interval, sets the rate.
        CHECK(last.interval == 68ms);
        CHECK(last.delivery_rate == doctest::Approx(10.0 * kSize / 0.068));
    }
}

TEST_CASE("delivery rate: an interval shorter than min_rtt is not a valid sample") {
    Flow f;
    f.send(t0);
    const auto s = f.ack(1, t0 + 30ms, 40ms);
    CHECK_FALSE(s.valid);
    CHECK(s.delivery_rate == 0);
    CHECK(s.delivered == kSize);  // the rest of the sample still holds
    CHECK(s.interval == 30ms);
    Flow g;
    g.send(t0);
    CHECK(g.ack(1, t0 + 30ms, 0ms).valid);  // no min_rtt known yet: trusted
    const auto none = g.dr.take_sample(0ms);  // nothing newly acknowledged
    CHECK_FALSE(none.valid);
    CHECK(none.total_delivered == kSize);
}

TEST_CASE("delivery rate: packets sent while app-limited are marked until that much is delivered (draft 3.4)") {
    Flow f;
    for (int i = 0; i < 4; ++i) f.send(t0 + std::chrono::milliseconds(i));
    f.dr.on_app_limited(f.bytes_in_flight);  // nothing more to send: the phase ends once these 4 are delivered
    CHECK(f.dr.app_limited());
    f.send(t0 + 10ms);  // sent while app-limited
    for (int i = 0; i < 4; ++i) CHECK_FALSE(f.ack(1, t0 + 50ms + std::chrono::milliseconds(i), 40ms).is_app_limited);
    // Delivered is now exactly the mark: the phase lasts until it is passed.
    CHECK(f.dr.app_limited());
    f.send(t0 + 55ms);
    const auto s = f.ack(1, t0 + 60ms, 40ms);
    CHECK(s.is_app_limited);
    CHECK_FALSE(f.dr.app_limited());
    f.send(t0 + 61ms);
    CHECK(f.ack(1, t0 + 101ms, 40ms).is_app_limited);  // sent before the phase ended, on the ACK that ended it
    f.send(t0 + 102ms);
    CHECK_FALSE(f.ack(1, t0 + 150ms, 40ms).is_app_limited);
}

TEST_CASE("delivery rate: the sample carries what was lost since its packet left and what was in flight") {
    Flow f;
    f.send(t0);
    f.send(t0 + 1ms);
    f.dr.on_packets_lost(3 * kSize);  // lost before the third packet left
    f.send(t0 + 2ms);
    CHECK(f.ack(2, t0 + 50ms, 40ms).newly_lost == 3 * kSize);
    f.dr.on_packets_lost(2 * kSize);  // declared between the two samples
    const auto s = f.ack(1, t0 + 52ms, 40ms);
    CHECK(s.tx_in_flight == 3 * kSize);
    CHECK(s.lost == 2 * kSize);  // only what was declared after it left
    CHECK(s.newly_lost == 2 * kSize);
    CHECK(f.dr.lost() == 5 * kSize);
}

TEST_CASE("delivery rate: after an idle period the next sample starts at its own send") {
    Flow f;
    f.send(t0);
    f.ack(1, t0 + 50ms, 40ms);
    // Idle for 10 s, then one packet: its sample spans its own 50 ms flight,
    // not the 10 s since the last delivery.
    f.send(t0 + 10s);
    const auto s = f.ack(1, t0 + 10s + 50ms, 40ms);
    REQUIRE(s.valid);
    CHECK(s.interval == 50ms);
    CHECK(s.delivered == kSize);
    CHECK(s.delivery_rate == doctest::Approx(kSize / 0.05));
}

TEST_CASE("delivery rate: a connection's AckEvents measure a 10 Mbit/s bottleneck") {
    ndm::testing::Recording rec;
    rec.inner = "cubic";
    const ndm::testing::ScopedRecorder recorder("delivery-rate-recorder", rec);
    sim::TransferSpec t;
    t.client.cc = "delivery-rate-recorder";
    t.client_to_server.rate_bps = 10e6;
    t.client_to_server.delay = 20ms;
    t.client_to_server.queue_packets = 100;
    t.server_to_client.delay = 20ms;
    t.send_for = 8s;
    t.deadline = 30s;
    const auto r = sim::run_transfer(t);
    REQUIRE(r.completed);
    std::size_t acks = 0, valid = 0, app_limited = 0;
    double max_rate = 0;
    std::vector<double> rates;
    std::uint64_t prev_total = 0;
    for (const auto& e : rec.events) {
        const auto* a = std::get_if<cc::AckEvent>(&e);
        if (!a) continue;
        ++acks;
        CHECK(a->rate.newly_acked == a->bytes_acked);
        CHECK(a->rate.total_delivered > prev_total);  // delivered only grows
        prev_total = a->rate.total_delivered;
        if (a->rate.is_app_limited) ++app_limited;
        if (!a->rate.valid) continue;
        ++valid;
        max_rate = std::max(max_rate, a->rate.delivery_rate);
        if (a->now - t.start > 2s) rates.push_back(a->rate.delivery_rate);
    }
    REQUIRE(acks > 1000);
    CHECK(valid > acks * 9 / 10);
    CHECK(app_limited < acks / 10);  // a bulk sender has data to send all the time but its last round
    REQUIRE(!rates.empty());
    std::sort(rates.begin(), rates.end());
    const double link = 10e6 / 8;  // bytes per second, datagrams on the wire
    MESSAGE("median sample ", rates[rates.size() / 2] * 8 / 1e6, " Mbit/s, max ", max_rate * 8 / 1e6, " Mbit/s");
    CHECK(rates[rates.size() / 2] == doctest::Approx(link).epsilon(0.05));
    CHECK(max_rate < link * 1.10);
}

TEST_CASE("delivery rate: a sender that runs out of data marks its samples app-limited (draft 3.4)") {
    ndm::testing::Recording rec;
    rec.inner = "reno";
    const ndm::testing::ScopedRecorder recorder("app-limited-recorder", rec);
    test::ConnectionPair p;
    p.client_cfg.cc = "app-limited-recorder";
    REQUIRE(p.handshake());
    const auto s = p.client->open_stream();
    REQUIRE(s);
    const std::size_t before_data = rec.events.size();
    std::vector<std::uint8_t> chunk(3000, 7), buf(4096);
    std::uint64_t read = 0;
    for (int round = 1; round <= 5; ++round) {
        // Three packets' worth, far below a 10-packet window, then nothing.
        REQUIRE(p.client->write(*s, chunk) == chunk.size());
        REQUIRE(p.run_until([&] {
            while (std::size_t n = p.server->read(*s, buf)) read += n;
            return read == 3000u * static_cast<std::uint64_t>(round) &&
                   p.client->stats(p.now).bytes_in_flight == 0;
        }));
        p.now += 50ms;
    }
    std::size_t data_acks = 0, marked = 0;
    for (std::size_t i = before_data; i < rec.events.size(); ++i) {
        const auto* a = std::get_if<cc::AckEvent>(&rec.events[i]);
        if (!a) continue;
        ++data_acks;
        if (a->rate.is_app_limited) ++marked;
    }
    CHECK(data_acks >= 5);
    CHECK(marked == data_acks);
}
