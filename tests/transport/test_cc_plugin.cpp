// Controller plugins (ndm/cc_plugin.hpp): a plugin built as a shared object
// (tests/plugin/aimd_plugin.cpp) is loaded, listed and run in virtual time;
// broken ones are refused with one line naming the file and the problem.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ndm/cc.hpp"
#include "ndm/cc_plugin.hpp"
#include "ndm/sim.hpp"

namespace {

std::string refusal(const std::string& path) {
    try {
        ndm::cc::load_plugin(path);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

bool listed(const std::string& name) {
    const auto all = ndm::cc::list();
    return std::any_of(all.begin(), all.end(), [&](const ndm::cc::Info& i) { return i.name == name; });
}

}  // namespace

TEST_CASE("cc plugin: a plugin's controller is registered, listed and runs a transfer in virtual time") {
    const auto names = ndm::cc::load_plugin(NDM_TEST_PLUGIN_AIMD);
    REQUIRE(names == std::vector<std::string>{"plugin-aimd"});
    CHECK(listed("plugin-aimd"));
    ndm::cc::Params params;
    params.max_datagram_size = 1200;
    auto cc = ndm::cc::make("plugin-aimd", params, "increase=2");
    CHECK(cc->cwnd() == 12000);
    CHECK(cc->name() == "plugin-aimd");
    // The plugin's own option check reaches the caller.
    CHECK_THROWS_WITH_AS(ndm::cc::make("plugin-aimd", params, "increase=0"), doctest::Contains("increase must be"),
                         std::invalid_argument);

    ndm::sim::TransferSpec spec;
    spec.client.cc = spec.server.cc = "plugin-aimd";
    spec.bytes = 8 << 20;
    spec.client_to_server.rate_bps = spec.server_to_client.rate_bps = 20e6;
    spec.client_to_server.delay = spec.server_to_client.delay = std::chrono::milliseconds(10);
    spec.client_to_server.queue_packets = 40;  // a small queue: the plugin halves on loss and recovers
    const auto r = ndm::sim::run_transfer(spec);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.client_stats.packets_lost > 0);
    // Loading again registers it again (same name, replaced).
    CHECK(ndm::cc::load_plugin(NDM_TEST_PLUGIN_AIMD) == names);
}

TEST_CASE("cc plugin: broken plugins are refused with one line naming the file and the problem") {
    const std::string missing = refusal("/nonexistent/libnothing.so");
    CHECK(missing.find("controller plugin /nonexistent/libnothing.so: cannot load") == 0);
    CHECK(refusal(NDM_TEST_PLUGIN_BAD_ABI).find("built for controller interface version 42, this ndm has version 1") !=
          std::string::npos);
    CHECK(refusal(NDM_TEST_PLUGIN_THROWS).find("its registrations failed: cannot find my model file") !=
          std::string::npos);
    CHECK(refusal(NDM_TEST_PLUGIN_EMPTY).find("registers no controller") != std::string::npos);
    CHECK(refusal(NDM_TEST_PLUGIN_NO_ENTRY).find("not an ndm controller plugin") != std::string::npos);
    for (const char* p : {NDM_TEST_PLUGIN_BAD_ABI, NDM_TEST_PLUGIN_THROWS, NDM_TEST_PLUGIN_NO_ENTRY}) {
        const std::string why = refusal(p);
        CHECK(why.find('\n') == std::string::npos);
        CHECK(why.find(p) != std::string::npos);
    }
}
