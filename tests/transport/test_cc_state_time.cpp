// ConnectionStats' time per controller state class: a controller's state()
// names are mapped to cc::StateClass once per change (ndm/cc.hpp), so any
// "*slow_start" is slow start and names the library does not know, as a
// user's controller may report, count as other.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "connection_pair.hpp"
#include "ndm/cc.hpp"

namespace {

using ndm::cc::StateClass;
using ndm::cc::state_class;

static_assert(state_class("slow_start") == StateClass::slow_start);
static_assert(state_class("conservative_slow_start") == StateClass::slow_start);
static_assert(state_class("congestion_avoidance") == StateClass::congestion_avoidance);
static_assert(state_class("recovery") == StateClass::recovery);
static_assert(state_class("probe_bw") == StateClass::other);
static_assert(state_class("") == StateClass::other);

// A user's controller whose state the test scripts.
std::string g_state;
class Scripted final : public ndm::cc::Controller {
public:
    void on_ack(const ndm::cc::AckEvent&) override {}
    void on_congestion_event(const ndm::cc::CongestionEvent&) override {}
    [[nodiscard]] std::uint64_t cwnd() const override { return 1u << 20; }
    [[nodiscard]] std::string_view state() const override { return g_state; }
    [[nodiscard]] std::string_view name() const override { return "scripted-states"; }
};

}  // namespace

TEST_CASE("cc state time: every state name counts in its class, unknown names as other") {
    ndm::cc::register_controller({"scripted-states", "state() set by the test", [](auto&, auto&) {
                                      return std::make_unique<Scripted>();
                                  }});
    g_state = "warmup";
    ndm::test::ConnectionPair pair;
    pair.client_cfg.cc = "scripted-states";
    REQUIRE(pair.handshake());
    auto& client = *pair.client;
    const auto id = client.open_stream();
    REQUIRE(id);
    // The client notices a new state on the next ACK; returns when it did.
    auto enter = [&](const std::string& next) {
        pair.now += std::chrono::milliseconds(100);
        g_state = next;
        const std::vector<std::uint8_t> data(100, 1);
        REQUIRE(client.write(*id, data) == data.size());
        REQUIRE(pair.run_until([&] { return client.stats(pair.now).cc_state == next; }));
        return pair.now;
    };
    const auto t_ss = enter("conservative_slow_start");
    const auto t_rec = enter("recovery");
    const auto t_ca = enter("congestion_avoidance");
    const auto t_other = enter("probe_bw");
    const auto end = pair.now + std::chrono::milliseconds(50);
    const auto s = client.stats(end);
    CHECK(s.cc_state == "probe_bw");
    CHECK(s.time_in_slow_start == t_rec - t_ss);
    CHECK(s.time_in_recovery == t_ca - t_rec);
    CHECK(s.time_in_congestion_avoidance == t_other - t_ca);
    // "warmup" before t_ss (at least the 100 ms waited) and "probe_bw" since t_other.
    CHECK(s.time_in_other_states >= (end - t_other) + std::chrono::milliseconds(100));
    CHECK(s.time_in_other_states <= (end - t_other) + (t_ss - ndm::Instant{}));
}
