// Profiles: spec strings, units, presets, JSON files, and one-line errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "emu/delivery_trace.hpp"
#include "test_emu_util.hpp"

using namespace emu_test;
using ndm::emu::parse_profile;

namespace {

std::string temp_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("ndm_emu_test_" + name);
    std::ofstream(path) << text;
    return path.string();
}
}  // namespace

TEST_CASE("emu profile: compact spec with units, both directions or one") {
    const auto p = parse_profile("delay=50ms,jitter=1500us,loss=5%,rate=20mbit,queue=100pkt,up.delay=2s,down.loss=0.01");
    CHECK(p.up.delay.delay == 2s);
    CHECK(p.down.delay.delay == 50ms);
    CHECK(p.up.delay.jitter == 1500us);
    CHECK(p.up.loss.kind == ndm::emu::LossKind::bernoulli);
    CHECK(p.up.loss.p == doctest::Approx(0.05));
    CHECK(p.down.loss.p == doctest::Approx(0.01));
    CHECK(p.up.queue.rate_bps == doctest::Approx(20e6));
    CHECK(p.up.queue.packets == 100);
    CHECK(p.up.queue.bytes == 0);
    CHECK(p.up.delay.ordering == ndm::emu::Ordering::in_order);  // jitter never reorders unless asked
    CHECK(parse_profile("rate=1gbit,queue=64kib").up.queue.bytes == 65536);
    CHECK(parse_profile("rate=1gbit,queue=64kib").up.queue.packets == 0);
    CHECK(parse_profile("rate=2mbps").up.queue.rate_bps == doctest::Approx(16e6));  // tc: bps = bytes/s
    CHECK(parse_profile("rate=100kbit,queue=10pkt/20kb").up.queue.bytes == 20000);
    const auto g = parse_profile("gemodel=2%").up.loss;  // tc defaults: r = 1 − p, 1−h = 1, 1−k = 0
    CHECK(g.r == doctest::Approx(0.98));
    CHECK(g.loss_bad == 1);
    CHECK(g.loss_good == 0);
    const auto s = parse_profile("lossstate=1%").up.loss;
    CHECK(s.p31 == doctest::Approx(0.99));
    CHECK(s.p23 == 1);
    CHECK(parse_profile("delay=10ms,reorder=25%,gap=5").up.delay.gap == 5);
    CHECK(parse_profile("rate=10mbit,aqm=codel,codel-target=10ms").up.queue.discipline ==
          ndm::emu::QueueDiscipline::codel);
    CHECK(ndm::emu::describe(parse_profile("delay=50ms,jitter=20ms,order=iid,loss=5%").up) ==
          "delay=50ms jitter=20ms(uniform,iid) loss=5%");
}

TEST_CASE("emu profile: presets, with overrides") {
    for (const auto& pr : ndm::emu::presets()) {
        INFO(pr.name);
        CHECK_NOTHROW((void)parse_profile(pr.name));
        CHECK_FALSE(pr.description.empty());
    }
    const auto u = parse_profile("urban-lte");
    CHECK(u.up.delay.delay == 50ms);
    CHECK(u.down.delay.jitter == 20ms);
    CHECK(u.up.delay.distribution == ndm::emu::Distribution::uniform);
    CHECK(u.up.delay.ordering == ndm::emu::Ordering::iid);  // as netem did in the seed experiment
    CHECK(u.down.loss.p == doctest::Approx(0.05));
    CHECK(parse_profile("urban-lte-inorder").up.delay.ordering == ndm::emu::Ordering::in_order);
    const auto v = parse_profile("lte-verizon");
    REQUIRE(v.up.trace.trace);
    REQUIRE(v.down.trace.trace);
    CHECK(v.up.trace.trace->name().find("Verizon-LTE-short.up") != std::string::npos);
    CHECK(v.down.trace.trace->mean_rate_bps() == doctest::Approx(5.03e6).epsilon(0.01));
    const auto o = parse_profile("urban-lte,loss=1%,up.delay=5ms");
    CHECK(o.up.loss.p == doctest::Approx(0.01));
    CHECK(o.up.delay.delay == 5ms);
    CHECK(o.down.delay.delay == 50ms);
    CHECK(parse_profile("satellite").down.queue.rate_bps == doctest::Approx(20e6));
    CHECK(parse_profile("lte-tmobile,rate=10mbit").up.trace.trace == nullptr);  // a rate replaces the trace
}

TEST_CASE("emu profile: one-line errors name the problem") {
    CHECK(error_of("delay=50ms,colour=red").rfind("profile: unknown key 'colour' (known: delay,", 0) == 0);
    CHECK(error_of("delay=50") == "profile: delay: '50' needs a unit (ns, us, ms, s)");
    CHECK(error_of("delay=50min") == "profile: delay: unknown time unit 'min' (use ns, us, ms, s)");
    CHECK(error_of("delay=-5ms") == "profile: delay: -5ms must be >= 0");
    CHECK(error_of("loss=5") == "profile: loss: 5 is out of range [0, 1] (write 5% for a percentage)");
    CHECK(error_of("loss=150%") == "profile: loss: 150% is out of range [0, 1]");
    CHECK(error_of("loss=abc") == "profile: loss: 'abc' is not a number");
    CHECK(error_of("rate=20") ==
          "profile: rate: '20' needs a unit (bit, kbit, mbit, gbit; bps/kbps/mbps = bytes/s as in tc)");
    CHECK(error_of("rate=20furlongs").rfind("profile: rate: unknown rate unit 'furlongs'", 0) == 0);
    CHECK(error_of("rate=10mbit,queue=0pkt") == "profile: queue: '0pkt' must be a whole number >= 1");
    CHECK(error_of("rate=10mbit,queue=100").rfind("profile: queue: '100' needs a unit", 0) == 0);
    CHECK(error_of("gap=5,delay=1ms") == "profile: up: gap needs reorder (netem refuses gap alone)");
    CHECK(error_of("reorder=5%") ==
          "profile: up: reorder needs a delay (netem: reordering not possible without some delay)");
    CHECK(error_of("gemodel=1%/2%/3%/4%/5%") == "profile: gemodel: at most 4 values separated by '/'");
    CHECK(error_of("lossstate=70%/50%/0%/100%/50%") == "profile: up: loss: 4-state p13 + p14 must be <= 1");
    CHECK(error_of("distribution=cauchy").rfind("profile: distribution: unknown 'cauchy'", 0) == 0);
    CHECK(error_of("trace=/nonexistent/x.trace") == "profile: trace: cannot read trace '/nonexistent/x.trace': no such file");
    CHECK(error_of("trace=nosuch.trace").rfind("profile: trace: cannot read trace 'nosuch.trace': no such file (searched ", 0) == 0);
    // rate and trace are exclusive: the later key wins (so presets can be overridden).
    CHECK(parse_profile("rate=5mbit,trace=const-12mbit.trace").up.queue.rate_bps == 0);
    CHECK(error_of("no-such-preset").rfind("profile: unknown preset 'no-such-preset' (presets: none, urban-lte,", 0) == 0);
    CHECK(error_of("delay=5ms,oops") == "profile: 'oops' is not key=value");
    CHECK(error_of("") == "profile: empty profile (give a preset name, key=value list or a .json file)");
    const std::string bad = temp_file("bad.trace", "1\n2\nzz\n");
    CHECK(error_of("trace=" + bad) == "profile: trace: " + bad + ":3: not a non-negative integer: 'zz'");
    for (const char* spec : {"delay=50", "loss=5", "colour=red", "trace=nosuch.trace"})
        CHECK(error_of(spec).find('\n') == std::string::npos);
}

TEST_CASE("emu profile: JSON files") {
    const std::string path = temp_file("p.json", R"({
        "name": "my-lte", "preset": "urban-lte-inorder", "loss": 0.01,
        "up": {"rate": "5mbit", "queue": "50pkt"}, "down": {"trace": "const-12mbit.trace", "queue": "100pkt"}
    })");
    const auto p = parse_profile(path);
    CHECK(p.name == "my-lte");
    CHECK(p.up.loss.p == doctest::Approx(0.01));
    CHECK(p.up.delay.delay == 50ms);
    CHECK(p.up.queue.rate_bps == doctest::Approx(5e6));
    REQUIRE(p.down.trace.trace);
    CHECK(p.down.trace.trace->size() == 1);
    const std::string unknown = temp_file("u.json", R"({"delay": "5ms", "jitterr": "1ms"})");
    CHECK(error_of(unknown).rfind("profile: " + unknown + ": unknown key 'jitterr'", 0) == 0);
    const std::string typed = temp_file("t.json", R"({"delay": true})");
    CHECK(error_of(typed) == "profile: " + typed + ": delay: expected a string or a number, got boolean");
}

TEST_CASE("emu profile: a JSON value of the wrong type is refused, naming the key and the type expected") {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"loss": [1, 5]})", "loss: expected a string or a number, got array (only outage takes an array, one phase an element)"},
        {R"({"up": {"delay": ["5ms"]}})", "up.delay: expected a string or a number, got array (only outage takes an array, one phase an element)"},
        {R"({"delay": {"ms": 5}})", "delay: expected a string or a number, got object"},
        {R"({"rate": null})", "rate: expected a string or a number, got null"},
        {R"({"outage": ["1s@2s", [3]]})", "outage: expected a string or a number, got array"},
        {R"({"outage": [true]})", "outage: expected a string or a number, got boolean"},
        {R"({"name": 7})", "name: expected a string, got number"},
        {R"({"description": ["a"]})", "description: expected a string, got array"},
        {R"({"preset": 3})", "preset: expected a string, got number"},
        {R"({"down": [1]})", "down: expected an object, got array"},
    };
    for (const auto& [text, want] : cases) {
        const std::string f = temp_file("typed.json", text);
        CAPTURE(text);
        CHECK(error_of(f) == "profile: " + f + ": " + want);
    }
    // The one repeatable key takes an array, per direction too.
    const auto p = parse_profile(temp_file("outages.json", R"({"outage": ["3s@2s", "1s@9s"], "up": {"outage": ["1s@20s"]}})"));
    CHECK(p.up.outages.size() == 3);
    CHECK(p.down.outages.size() == 2);
}

TEST_CASE("emu profile: a JSON file that cannot be read or parsed") {
    const std::string broken = temp_file("b.json", "{\"delay\": ");
    CHECK(error_of(broken).rfind("profile: " + broken + ": invalid JSON: ", 0) == 0);
    CHECK(error_of(broken).find('\n') == std::string::npos);
    CHECK(error_of("/nonexistent/p.json") == "profile: cannot read '/nonexistent/p.json': No such file or directory");
}
