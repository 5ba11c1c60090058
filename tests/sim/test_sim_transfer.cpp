// End-to-end transfers between two real Connections in virtual time
// (src/sim): ≥ 32 MB byte-exact under each impairment, and determinism.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <algorithm>

#include "cc_test_util.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "ndm/workload.hpp"
#include "sim_spec.hpp"

using namespace std::chrono_literals;
using ndm::sim::SimpleLinkConfig;
using ndm::sim::TransferResult;
using ndm::sim::TransferSpec;

namespace {

constexpr std::uint64_t k32MB = 32u << 20;

using ndm::test::at;

// 100 Mbit/s, 10 ms one way, a queue of about one bandwidth-delay product.
TransferSpec base_spec(std::uint64_t bytes = k32MB) { return ndm::test::hundred_mbit_spec(bytes); }

void both(TransferSpec& spec, void (*set)(SimpleLinkConfig&)) {
    set(spec.client_to_server);
    set(spec.server_to_client);
}

void check_complete(const TransferResult& r, std::uint64_t bytes) {
    INFO("failure: ", r.failure, "; virtual ", ndm::to_seconds(r.duration), " s; delivered ", r.bytes_delivered,
         "; client close ", r.client_close.code, " ", r.client_close.reason, "; server close ", r.server_close.code,
         " ", r.server_close.reason);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.bytes_sent == bytes);
    CHECK(r.bytes_delivered == bytes);
    CHECK(r.sender_hash == r.receiver_hash);
    CHECK(r.client_stats.stream_bytes_sent >= bytes);
    MESSAGE("virtual ", ndm::to_seconds(r.duration), " s, goodput ",
            static_cast<double>(bytes) * 8 / ndm::to_seconds(r.duration) / 1e6, " Mbit/s, retransmitted ",
            r.client_stats.packets_retransmitted, ", lost ", r.client_stats.packets_lost, ", events ", r.steps);
}

// The 32 MB transfer of base_spec() with `set` impairing both directions,
// checked complete and byte-exact.
TransferResult impaired_transfer(void (*set)(SimpleLinkConfig&)) {
    auto spec = base_spec();
    both(spec, set);
    auto r = ndm::sim::run_transfer(spec);
    check_complete(r, k32MB);
    return r;
}

}  // namespace

TEST_CASE("sim: stream hash ignores chunking and catches any single-bit flip") {
    std::vector<std::uint8_t> data(4099);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 131 + 7);
    ndm::workload::StreamHash whole;
    whole.update(data);
    for (std::size_t step : {1u, 3u, 8u, 13u, 1000u}) {
        ndm::workload::StreamHash parts;
        for (std::size_t i = 0; i < data.size(); i += step)
            parts.update(std::span(data).subspan(i, std::min(step, data.size() - i)));
        CHECK(parts.digest() == whole.digest());
    }
    for (std::size_t bit = 0; bit < data.size() * 8; bit += 37) {
        auto copy = data;
        copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        ndm::workload::StreamHash h;
        h.update(copy);
        CHECK(h.digest() != whole.digest());
    }
    ndm::workload::StreamHash shorter;  // a truncated stream differs too
    shorter.update(std::span(data).first(data.size() - 1));
    CHECK(shorter.digest() != whole.digest());
}

TEST_CASE("sim: simulator starts idle and creates the server on the first datagram") {
    auto spec = base_spec();
    ndm::sim::Simulator sim(std::make_unique<ndm::sim::SimpleLink>(spec.client_to_server),
                            std::make_unique<ndm::sim::SimpleLink>(spec.server_to_client), at(1s));
    CHECK(sim.now() == at(1s));
    CHECK_FALSE(sim.step());  // nothing scheduled before connect
    sim.connect(spec.client, spec.server);
    CHECK(sim.client() != nullptr);
    CHECK(sim.server() == nullptr);
    CHECK(sim.client_to_server_stats().sent >= 1);
    // The hello arrives after serialization (≤ 1 ms at 100 Mbit/s) plus 10 ms.
    CHECK(sim.next_event_time() > at(1s));
    CHECK(sim.next_event_time() <= at(1s + 11ms));
    sim.run_until(at(1s + 5ms));
    CHECK(sim.now() == at(1s + 5ms));
    CHECK(sim.server() == nullptr);  // the first datagram is still in flight
    const bool up = sim.run_until(
        [&] { return sim.client()->is_established() && sim.server() && sim.server()->is_established(); }, at(2s));
    CHECK(up);
    REQUIRE(sim.server() != nullptr);
    CHECK(sim.now() >= at(1s + 20ms));  // at least one round trip
}

TEST_CASE("sim: 32 MB byte-exact, no impairment") {
    const auto r = ndm::sim::run_transfer(base_spec());
    check_complete(r, k32MB);
    CHECK(r.client_to_server.dropped_random == 0);
    // One flow on an otherwise idle 100 Mbit/s path should get most of it.
    CHECK(ndm::to_seconds(r.duration) < 32.0 * 8 * 1.048576 / 100 * 2);
    CHECK(r.samples.size() >= 3);
    std::uint64_t sum = 0, sent = 0;
    for (const auto& s : r.samples) {
        sum += s.bytes;
        sent += s.bytes_sent;
    }
    CHECK(sum == k32MB);
    CHECK(sent == r.client_stats.stream_bytes_sent);
}

TEST_CASE("sim: 32 MB byte-exact, 5% loss each way") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) { l.loss = 0.05; });
    CHECK(r.client_to_server.dropped_random > 0);
    CHECK(r.server_to_client.dropped_random > 0);
    CHECK(r.client_stats.packets_retransmitted > 0);
}

TEST_CASE("sim: 32 MB byte-exact, reordering") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) {
        l.reorder = 0.05;
        l.reorder_extra_delay = 3ms;
    });
    CHECK(r.client_to_server.reordered > 0);
}

TEST_CASE("sim: 32 MB byte-exact, duplication") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) { l.duplicate = 0.05; });
    CHECK(r.client_to_server.duplicated > 0);
}

TEST_CASE("sim: 32 MB byte-exact, single-bit corruption") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) { l.corrupt = 0.02; });
    CHECK(r.client_to_server.corrupted > 0);
    // Every corrupted datagram must fail the integrity check, none be accepted.
    CHECK(r.server_stats.packets_dropped >= r.client_to_server.corrupted);
}

TEST_CASE("sim: 32 MB byte-exact, 20% loss each way") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) { l.loss = 0.20; });
    CHECK(r.client_to_server.dropped_random > 0);
}

TEST_CASE("sim: 32 MB byte-exact across a 3 s blackhole of both directions") {
    const auto r = impaired_transfer([](SimpleLinkConfig& l) { l.outages = {{at(1s), at(4s)}}; });
    CHECK(r.client_to_server.dropped_outage > 0);
    CHECK(r.server_to_client.dropped_outage > 0);
    CHECK(r.duration > 4s);
}

TEST_CASE("sim: the same spec gives identical results") {
    auto spec = base_spec(8u << 20);
    both(spec, [](SimpleLinkConfig& l) {
        l.loss = 0.03;
        l.reorder = 0.02;
        l.reorder_extra_delay = 2ms;
        l.duplicate = 0.01;
    });
    const auto a = ndm::sim::run_transfer(spec);
    const auto b = ndm::sim::run_transfer(spec);
    check_complete(a, 8u << 20);
    CHECK(a.duration == b.duration);
    CHECK(a.steps == b.steps);
    CHECK(a.receiver_hash == b.receiver_hash);
    CHECK(a.client_stats.packets_sent == b.client_stats.packets_sent);
    CHECK(a.client_stats.packets_lost == b.client_stats.packets_lost);
    CHECK(a.client_stats.packets_retransmitted == b.client_stats.packets_retransmitted);
    CHECK(a.client_stats.cwnd == b.client_stats.cwnd);
    CHECK(a.client_stats.smoothed_rtt == b.client_stats.smoothed_rtt);
    CHECK(a.server_stats.packets_received == b.server_stats.packets_received);
    CHECK(a.client_to_server.dropped_random == b.client_to_server.dropped_random);
    CHECK(a.server_to_client.delivered == b.server_to_client.delivered);
    REQUIRE(a.samples.size() == b.samples.size());
    for (std::size_t i = 0; i < a.samples.size(); ++i) {
        CHECK(a.samples[i].bytes == b.samples[i].bytes);
        CHECK(a.samples[i].cwnd == b.samples[i].cwnd);
        CHECK(a.samples[i].srtt == b.samples[i].srtt);
    }
}

TEST_CASE("sim: send for a fixed virtual time") {
    auto spec = base_spec();
    spec.send_for = 3s;
    const auto r = ndm::sim::run_transfer(spec);
    INFO("failure: ", r.failure);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.bytes_delivered > 0);
    CHECK(r.duration >= 3s);
    CHECK(r.duration < 3500ms);  // only about two windows were queued ahead at the end
}
