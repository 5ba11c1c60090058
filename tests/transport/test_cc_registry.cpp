// The congestion-controller registry, option parsing and typed option getters.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cc/option_values.hpp"
#include "ndm/cc.hpp"

using ndm::cc::Options;
using ndm::cc::parse_options;

namespace {

// A user-defined controller living outside the library: a fixed window set by
// the option "window". Shows that the registry is open to plug-ins.
class Constant final : public ndm::cc::Controller {
public:
    Constant(const ndm::cc::Params& p, const Options& o)
        : window_(ndm::cc::get_uint(o, "window", 10 * p.max_datagram_size,
                                    2 * p.max_datagram_size, 1ull << 32, "constant")) {
        ndm::cc::reject_unknown(o, {"window"}, "constant");
    }
    void on_ack(const ndm::cc::AckEvent&) override {}
    void on_congestion_event(const ndm::cc::CongestionEvent&) override {}
    [[nodiscard]] std::uint64_t cwnd() const override { return window_; }
    [[nodiscard]] std::string_view state() const override { return "fixed"; }
    [[nodiscard]] std::string_view name() const override { return "constant"; }

private:
    std::uint64_t window_;
};

void register_constant(std::string description = "fixed window (test)") {
    ndm::cc::register_controller(
        {"constant", std::move(description), [](const ndm::cc::Params& p, const Options& o) {
             return std::make_unique<Constant>(p, o);
         }});
}

const ndm::cc::Info* find_info(const std::vector<ndm::cc::Info>& infos, std::string_view name) {
    auto it = std::find_if(infos.begin(), infos.end(), [&](const auto& i) { return i.name == name; });
    return it == infos.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("cc registry: reno is built in") {
    const auto infos = ndm::cc::list();
    const auto* reno = find_info(infos, "reno");
    REQUIRE(reno != nullptr);
    CHECK_FALSE(reno->description.empty());
    CHECK(std::is_sorted(infos.begin(), infos.end(),
                         [](const auto& a, const auto& b) { return a.name < b.name; }));

    ndm::cc::Params p;
    p.max_datagram_size = 1200;
    auto cc = ndm::cc::make("reno", p);
    REQUIRE(cc != nullptr);
    CHECK(cc->name() == "reno");
    CHECK(cc->cwnd() == 12000);
    CHECK(cc->state() == "slow_start");
    // Empty and whitespace-only option strings are no options.
    CHECK(ndm::cc::make("reno", p, "")->cwnd() == 12000);
    CHECK(ndm::cc::make("reno", p, "  ")->cwnd() == 12000);
}

TEST_CASE("cc registry: unknown name lists the known ones") {
    std::string known;
    for (const auto& info : ndm::cc::list()) known += (known.empty() ? "" : ", ") + info.name;
    CHECK_THROWS_WITH_AS(ndm::cc::make("foo", {}),
                         ("unknown congestion controller \"foo\" (known: " + known + ")").c_str(),
                         std::invalid_argument);
    CHECK_THROWS_AS(ndm::cc::make("Reno", {}), std::invalid_argument);  // names are case-sensitive
    CHECK_THROWS_AS(ndm::cc::make("", {}), std::invalid_argument);
}

TEST_CASE("cc registry: bad option strings") {
    CHECK_THROWS_WITH_AS(ndm::cc::make("reno", {}, "beta"),
                         "congestion-control option \"beta\": missing \"=\"", std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("reno", {}, "beta=0.6, beta=0.7"),
                         "congestion-control option \"beta\": duplicate key", std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("reno", {}, " =0.7"),
                         "congestion-control option \"=0.7\": empty key", std::invalid_argument);
    // The name is checked before the options.
    CHECK_THROWS_WITH_AS(ndm::cc::make("nope", {}, "beta"),
                         doctest::Contains("unknown congestion controller \"nope\""),
                         std::invalid_argument);
}

TEST_CASE("cc options: parse_options") {
    CHECK(parse_options("").empty());
    CHECK(parse_options(" \t ").empty());
    CHECK(parse_options("beta=0.7") == Options{{"beta", "0.7"}});
    CHECK(parse_options("  beta = 0.7 ,\thystart=off  ") ==
          Options{{"beta", "0.7"}, {"hystart", "off"}});
    CHECK(parse_options("a=b=c") == Options{{"a", "b=c"}});  // split at the first "="
    CHECK(parse_options("a=") == Options{{"a", ""}});         // the getters judge values

    CHECK_THROWS_WITH_AS(parse_options("beta"), "congestion-control option \"beta\": missing \"=\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("a=1, beta ,c=2"),
                         "congestion-control option \"beta\": missing \"=\"", std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("a=1,a=2"), "congestion-control option \"a\": duplicate key",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("a=1, a =2"), "congestion-control option \"a\": duplicate key",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("=1"), "congestion-control option \"=1\": empty key",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("a=1,,b=2"),
                         "congestion-control options \"a=1,,b=2\": empty item (stray \",\")",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(parse_options("a=1,"),
                         "congestion-control options \"a=1,\": empty item (stray \",\")",
                         std::invalid_argument);
    CHECK_THROWS_AS(parse_options(",a=1"), std::invalid_argument);
}

TEST_CASE("cc options: typed getters") {
    const Options o{{"d", "0.25"}, {"bad", "0.5x"}, {"nan", "nan"}, {"inf", "inf"},
                    {"u", "42"},   {"neg", "-1"},   {"on", "ON"},   {"off", "0"},
                    {"yes", "yes"}, {"empty", ""}};
    using ndm::cc::get_bool;
    using ndm::cc::get_double;
    using ndm::cc::get_uint;

    CHECK(get_double(o, "d", 1, 0, 1, "x") == 0.25);
    CHECK(get_double(o, "missing", 0.7, 0, 1, "x") == 0.7);
    CHECK_THROWS_WITH_AS(get_double(o, "d", 1, 0.5, 0.75, "x"),
                         "congestion controller \"x\": option \"d\" must be a number in [0.5, 0.75], "
                         "got \"0.25\"",
                         std::invalid_argument);
    CHECK_THROWS_AS(get_double(o, "bad", 1, 0, 1, "x"), std::invalid_argument);
    CHECK_THROWS_AS(get_double(o, "nan", 1, 0, 1, "x"), std::invalid_argument);
    CHECK_THROWS_AS(get_double(o, "inf", 1, 0, 1e308, "x"), std::invalid_argument);
    CHECK_THROWS_AS(get_double(o, "empty", 1, 0, 1, "x"), std::invalid_argument);

    CHECK(get_uint(o, "u", 1, 0, 100, "x") == 42);
    CHECK(get_uint(o, "missing", 7, 0, 100, "x") == 7);
    CHECK_THROWS_WITH_AS(get_uint(o, "u", 1, 0, 10, "x"),
                         "congestion controller \"x\": option \"u\" must be an integer in [0, 10], "
                         "got \"42\"",
                         std::invalid_argument);
    CHECK_THROWS_AS(get_uint(o, "neg", 1, 0, 10, "x"), std::invalid_argument);
    CHECK_THROWS_AS(get_uint(o, "d", 1, 0, 10, "x"), std::invalid_argument);

    CHECK(get_bool(o, "on", false, "x"));
    CHECK_FALSE(get_bool(o, "off", true, "x"));
    CHECK(get_bool(o, "missing", true, "x"));
    CHECK_THROWS_WITH_AS(get_bool(o, "yes", false, "x"),
                         "congestion controller \"x\": option \"yes\" must be one of on, off, true, "
                         "false, 1, 0, got \"yes\"",
                         std::invalid_argument);

    CHECK_NOTHROW(ndm::cc::reject_unknown(o, {"d", "bad", "nan", "inf", "u", "neg", "on", "off",
                                              "yes", "empty"},
                                          "x"));
    CHECK_THROWS_WITH_AS(ndm::cc::reject_unknown(Options{{"gain", "2"}}, {"beta", "hystart"}, "x"),
                         "congestion controller \"x\": unknown option \"gain\" (known: beta, hystart)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::reject_unknown(Options{{"gain", "2"}}, {}, "x"),
                         "congestion controller \"x\": unknown option \"gain\" (known: none)",
                         std::invalid_argument);
}

TEST_CASE("cc registry: a user-defined controller plugs in from outside") {
    register_constant();
    const auto infos = ndm::cc::list();
    const auto* info = find_info(infos, "constant");
    REQUIRE(info != nullptr);
    CHECK(info->description == "fixed window (test)");
    CHECK(find_info(infos, "reno") != nullptr);

    ndm::cc::Params p;
    p.max_datagram_size = 1200;
    auto cc = ndm::cc::make("constant", p, "window=50000");
    CHECK(cc->name() == "constant");
    CHECK(cc->cwnd() == 50000);
    cc->on_congestion_event({});
    CHECK(cc->cwnd() == 50000);
    CHECK(ndm::cc::make("constant", p)->cwnd() == 12000);

    CHECK_THROWS_WITH_AS(ndm::cc::make("constant", p, "window=100"),
                         "congestion controller \"constant\": option \"window\" must be an integer "
                         "in [2400, 4294967296], got \"100\"",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("constant", p, "window=50000,gain=2"),
                         "congestion controller \"constant\": unknown option \"gain\" (known: window)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(ndm::cc::make("nope", p),
                         doctest::Contains("constant, "), std::invalid_argument);

    // Registering again replaces.
    register_constant("fixed window (replaced)");
    CHECK(find_info(ndm::cc::list(), "constant")->description == "fixed window (replaced)");

    // Invalid registrations are refused.
    CHECK_THROWS_AS(ndm::cc::register_controller({"", "x", [](auto&, auto&) {
                                                      return std::unique_ptr<ndm::cc::Controller>{};
                                                  }}),
                    std::invalid_argument);
    CHECK_THROWS_AS(ndm::cc::register_controller({"nofactory", "x", {}}), std::invalid_argument);
    // A factory that returns nothing is reported, not handed back as nullptr.
    ndm::cc::register_controller(
        {"null-test", "x", [](auto&, auto&) { return std::unique_ptr<ndm::cc::Controller>{}; }});
    CHECK_THROWS_AS(ndm::cc::make("null-test", p), std::logic_error);
}

TEST_CASE("cc registry: concurrent registration and creation") {
    std::atomic<int> made{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t, &made] {
            ndm::cc::Params p;
            for (int i = 0; i < 200; ++i) {
                ndm::cc::register_controller(
                    {"concurrent-" + std::to_string(t), "test",
                     [](const ndm::cc::Params& pp, const Options& o) {
                         return std::make_unique<Constant>(pp, o);
                     }});
                if (ndm::cc::make("reno", p)->cwnd() > 0) ++made;
                (void)ndm::cc::list();
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(made == 800);
    for (int t = 0; t < 4; ++t) {
        CHECK(find_info(ndm::cc::list(), "concurrent-" + std::to_string(t)) != nullptr);
    }
}
