// An application that paces its own writes (ndm-send -b RATE): a few bytes
// every 50 µs of virtual time over a 1 Gbit/s, 10 ms path. With the
// connection's coalescing (Connection::set_send_coalescing, bounded by the
// time the rate takes to write two datagrams, as ndm-send sets it) the bytes
// leave in full datagrams, and the receiver gets the rate second by second.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "ndm/workload.hpp"

using namespace std::chrono_literals;

namespace {

struct PacedResult {
    double payload_per_datagram = 0;      // stream bytes / datagrams the client sent while writing
    std::vector<double> rates;            // bits per second the server application got, each second
    bool exact = false;
};

// `seconds` of writes at `bps`, coalesced with `max_hold` (0: off).
PacedResult paced(double bps, ndm::Duration max_hold, int seconds) {
    ndm::sim::SimpleLinkConfig link;
    link.delay = 10ms;
    link.rate_bps = 1e9;
    link.queue_packets = 10'000;
    ndm::sim::Simulator sim(std::make_unique<ndm::sim::SimpleLink>(link), std::make_unique<ndm::sim::SimpleLink>(link),
                            ndm::Instant{} + 1s);
    ndm::ConnectionConfig cc, sc;
    cc.seed = 1;
    sc.seed = 2;
    ndm::Connection& client = sim.connect(cc, sc);
    REQUIRE(sim.run_until([&] { return client.is_established() && sim.server() && sim.server()->is_established(); },
                          sim.now() + 5s));
    const auto id = client.open_stream();
    REQUIRE(id);
    client.set_send_coalescing(max_hold);
    const ndm::workload::Payload payload(7);
    ndm::workload::StreamHash tx, rx;
    std::uint64_t written = 0, received = 0;
    std::vector<std::uint64_t> per_second(static_cast<std::size_t>(seconds) + 1, 0);
    const ndm::Instant t0 = sim.now();
    auto read = [&] {
        ndm::Connection* server = sim.server();
        std::vector<std::uint8_t> buf(64 * 1024);
        while (std::size_t n = server->read(*id, buf)) {
            rx.update(std::span<const std::uint8_t>(buf.data(), n));
            received += n;
            // Seconds of arrival, shifted by the path's 10 ms.
            const auto k = static_cast<std::size_t>(std::max(0.0, ndm::to_seconds(sim.now() - t0 - 10ms)));
            per_second[std::min(k, per_second.size() - 1)] += n;
        }
    };
    const std::uint64_t sent_before = sim.client_to_server_stats().sent;
    std::vector<std::uint8_t> chunk;
    for (ndm::Instant t = t0; t < t0 + std::chrono::seconds(seconds); t += 50us) {
        sim.run_until(t);
        read();
        // The shortfall against the rate, as ndm-send's pump writes it.
        const auto due = static_cast<std::uint64_t>(std::ceil(bps / 8 * ndm::to_seconds(t - t0)));
        if (due > written) {
            chunk.resize(due - written);
            payload.fill(written, chunk);
            if (sim.client()->write(*id, chunk) != chunk.size()) FAIL("the stream refused a write");
            tx.update(chunk);
            written += chunk.size();
            sim.flush();
        }
    }
    PacedResult r;
    const std::uint64_t datagrams = sim.client_to_server_stats().sent - sent_before;
    r.payload_per_datagram = static_cast<double>(written) / static_cast<double>(std::max<std::uint64_t>(datagrams, 1));
    sim.client()->finish(*id);
    sim.flush();
    REQUIRE(sim.run_until(
        [&] {
            read();
            return sim.server()->stream_finished(*id);
        },
        sim.now() + 10s));
    for (int k = 0; k < seconds; ++k) r.rates.push_back(static_cast<double>(per_second[static_cast<std::size_t>(k)]) * 8);
    r.exact = received == written && rx.digest() == tx.digest();
    return r;
}

// ndm-send's bound (tools/perf/perf_session.hpp, write_coalescing): two
// 1452-byte datagrams at the rate, at most 25 ms.
ndm::Duration two_datagrams(double bps) {
    return std::min<ndm::Duration>(ndm::from_seconds(2 * 8 * 1452 / bps), 25ms);
}

}  // namespace

TEST_CASE("sim: paced small writes leave in full datagrams and arrive at the rate, 1-100 Mbit/s") {
    for (const double bps : {1e6, 10e6, 100e6}) {
        const PacedResult r = paced(bps, two_datagrams(bps), 3);
        const double mbps = bps / 1e6;
        MESSAGE(mbps, " Mbit/s: ", r.payload_per_datagram, " payload bytes a datagram");
        CHECK(r.exact);
        CHECK(r.payload_per_datagram >= 1000);
        REQUIRE(r.rates.size() == 3);
        for (const double rate : r.rates) {
            const double got = rate / 1e6;
            INFO("a second's rate ", got, " Mbit/s");
            CHECK(std::abs(rate - bps) <= 0.02 * bps);
        }
    }
}

TEST_CASE("sim: paced small writes without coalescing go a few bytes a datagram") {
    // The case coalescing exists for: at 10 Mbit/s each 50 µs write is 63 bytes.
    const PacedResult r = paced(10e6, ndm::Duration::zero(), 1);
    CHECK(r.exact);
    CHECK(r.payload_per_datagram < 100);
}
