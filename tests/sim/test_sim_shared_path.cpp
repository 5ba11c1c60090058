// Several flows over one shared bottleneck in virtual time (run_shared_path)
// and the fairness index the compete mode reports.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/experiment.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;

namespace {

ndm::sim::SharedPathSpec dumbbell(const std::vector<std::string>& controllers, ndm::Duration stagger) {
    ndm::sim::SharedPathSpec spec;
    ndm::sim::SimpleLinkConfig bottleneck;
    bottleneck.delay = 25ms;
    bottleneck.rate_bps = 20e6;
    bottleneck.queue_packets = 86;  // one BDP at 50 ms
    spec.bottleneck = [bottleneck] { return std::make_unique<ndm::sim::SimpleLink>(bottleneck); };
    spec.return_path = [] {
        ndm::sim::SimpleLinkConfig back;
        back.delay = 25ms;
        return std::make_unique<ndm::sim::SimpleLink>(back);
    };
    for (std::size_t i = 0; i < controllers.size(); ++i) {
        ndm::sim::FlowSpec f;
        f.client.cc = controllers[i];
        f.client.seed = 2 * i + 1;
        f.server.seed = 2 * i + 2;
        f.start = stagger * static_cast<int>(i);
        f.seed = i + 1;
        spec.flows.push_back(f);
    }
    spec.send_until = 20s;
    return spec;
}

double goodput_after(const ndm::sim::TransferResult& r, ndm::Duration from, ndm::Duration to) {
    std::uint64_t bytes = 0;
    for (const auto& s : r.samples)
        if (s.begin >= from && s.end <= to) bytes += s.bytes;
    return static_cast<double>(bytes) * 8 / ndm::to_seconds(to - from);
}

}  // namespace

TEST_CASE("shared path: two reno flows share a 20 Mbit/s bottleneck fairly, byte-exact") {
    const auto r = ndm::sim::run_shared_path(dumbbell({"reno", "reno"}, 0s));
    REQUIRE(r.flows.size() == 2);
    std::vector<double> rates;
    for (const auto& f : r.flows) {
        INFO("failure: ", f.failure);
        CHECK(f.completed);
        CHECK(f.hash_match);
        rates.push_back(goodput_after(f, 10s, 20s));
    }
    MESSAGE("goodput over 10-20 s: ", rates[0] / 1e6, " and ", rates[1] / 1e6, " Mbit/s");
    CHECK(rates[0] + rates[1] > 0.9 * 20e6);
    CHECK(rates[0] + rates[1] <= 20e6);
    CHECK(ndm::experiment::jain_index(rates) > 0.9);
    CHECK(r.bottleneck.dropped_queue > 0);  // they did fill the queue
    CHECK(r.misrouted == 0);
}

TEST_CASE("shared path: a late flow starts on time and the run is deterministic") {
    const auto spec = dumbbell({"cubic", "cubic"}, 8s);
    const auto a = ndm::sim::run_shared_path(spec);
    const auto b = ndm::sim::run_shared_path(spec);
    REQUIRE(a.flows.size() == 2);
    CHECK(a.flows[1].completed);
    // Nothing delivered for the second flow before it started.
    for (const auto& s : a.flows[1].samples)
        if (s.end <= 8s) CHECK(s.bytes == 0);
    CHECK(goodput_after(a.flows[1], 10s, 20s) > 2e6);
    CHECK(goodput_after(a.flows[0], 0s, 8s) > 0.8 * 20e6);  // alone at first
    for (std::size_t i = 0; i < 2; ++i) {
        REQUIRE(a.flows[i].samples.size() == b.flows[i].samples.size());
        for (std::size_t k = 0; k < a.flows[i].samples.size(); ++k)
            CHECK(a.flows[i].samples[k].bytes == b.flows[i].samples[k].bytes);
        CHECK(a.flows[i].receiver_hash == b.flows[i].receiver_hash);
    }
}

TEST_CASE("shared path: bad specs are rejected") {
    auto spec = dumbbell({}, 0s);
    CHECK_THROWS_AS(ndm::sim::run_shared_path(spec), std::invalid_argument);
    spec = dumbbell({"reno"}, 0s);
    spec.bottleneck = {};
    CHECK_THROWS_AS(ndm::sim::run_shared_path(spec), std::invalid_argument);
    spec = dumbbell({"reno"}, 0s);
    spec.interval = 0s;
    CHECK_THROWS_AS(ndm::sim::run_shared_path(spec), std::invalid_argument);
}

TEST_CASE("Jain's fairness index") {
    CHECK(ndm::experiment::jain_index({5, 5, 5}) == doctest::Approx(1.0));
    CHECK(ndm::experiment::jain_index({1, 0}) == doctest::Approx(0.5));
    CHECK(ndm::experiment::jain_index({3, 1}) == doctest::Approx(16.0 / 20.0));
    CHECK(ndm::experiment::jain_index({}) == 1.0);
}

TEST_CASE("shared path: 100 flows at once each get a share of the bottleneck, byte-exact") {
    // The event queue over flows (src/sim/flow_heap.hpp) must wake every flow whose
    // datagram arrives: a flow it forgot would stall or fall far behind.
    ndm::sim::SharedPathSpec spec = dumbbell(std::vector<std::string>(100, "reno"), 0s);
    ndm::sim::SimpleLinkConfig bottleneck;
    bottleneck.delay = 20ms;
    bottleneck.rate_bps = 100e6;
    bottleneck.queue_packets = 344;  // one BDP at 40 ms
    spec.bottleneck = [bottleneck] { return std::make_unique<ndm::sim::SimpleLink>(bottleneck); };
    spec.send_until = 6s;
    const auto r = ndm::sim::run_shared_path(spec);
    REQUIRE(r.flows.size() == 100);
    std::vector<double> rates;
    for (const auto& f : r.flows) {
        INFO("failure: ", f.failure);
        CHECK(f.completed);
        CHECK(f.hash_match);
        rates.push_back(goodput_after(f, 2s, 6s));
    }
    double sum = 0;
    for (const double x : rates) sum += x;
    const double least = *std::min_element(rates.begin(), rates.end());
    MESSAGE("100 flows over 2-6 s: ", sum / 1e6, " Mbit/s in all, the least ", least / 1e6,
            ", Jain ", ndm::experiment::jain_index(rates));
    CHECK(sum > 0.9 * 100e6);
    CHECK(least > 0.25 * 1e6);  // a quarter of the fair share
    CHECK(ndm::experiment::jain_index(rates) > 0.8);
    CHECK(r.misrouted == 0);
    // Each delivery steps the flow it is for, no other: one flow needs about
    // 1.5 steps per datagram through the bottleneck, and stepping some flow
    // to pull another's datagram cost one more each.
    const double steps_per_datagram = static_cast<double>(r.steps) / static_cast<double>(r.bottleneck.delivered);
    MESSAGE("steps per datagram: ", steps_per_datagram);
    CHECK(steps_per_datagram < 2.0);
}

TEST_CASE("shared path: beyond 255 flows the two-byte flow tag routes every datagram to its flow") {
    // 300 flows, 1 Mbit/s each for 200 ms: flow 299's datagrams carry tag 0x012b,
    // which a one-byte tag would have sent to flow 43.
    auto spec = dumbbell(std::vector<std::string>(300, "reno"), 0s);
    ndm::sim::SimpleLinkConfig bottleneck;
    bottleneck.delay = 25ms;
    bottleneck.rate_bps = 300e6;
    bottleneck.queue_packets = 1300;  // one BDP at 50 ms
    spec.bottleneck = [bottleneck] { return std::make_unique<ndm::sim::SimpleLink>(bottleneck); };
    spec.send_until = 200ms;
    const auto r = ndm::sim::run_shared_path(spec);
    REQUIRE(r.flows.size() == 300);
    std::size_t exact = 0;
    for (const auto& f : r.flows)
        if (f.completed && f.hash_match && f.bytes_delivered > 0) ++exact;
    CHECK(exact == 300);
    CHECK(r.misrouted == 0);
    CHECK(r.flows.back().bytes_delivered > 0);
    CHECK_THROWS_AS(ndm::sim::run_shared_path([] {
                        ndm::sim::SharedPathSpec s;
                        s.flows.resize(65536);
                        return s;
                    }()),
                    std::invalid_argument);
}
