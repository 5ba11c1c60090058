// The profile's blackhole phase, outage=DUR@START: parsing, range
// checks, and the drops in virtual time — nothing enters or leaves the link
// during the phase, counted from the link's first datagram, every drop tagged
// DropReason::blackhole and counted in both statistics.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_emu_util.hpp"
#include "tools/emu/summary.hpp"

using namespace emu_test;
using ndm::emu::DropReason;
using ndm::emu::EmulatedLink;
using ndm::emu::PacketEvent;
using ndm::emu::parse_profile;

TEST_CASE("emu outage: outage=DUR@START parses, repeats, clears and describes itself") {
    const auto p = parse_profile("delay=20ms,outage=10s@5s");
    REQUIRE(p.up.outages.size() == 1);
    CHECK(p.up.outages[0].duration == 10s);
    CHECK(p.up.outages[0].start == 5s);
    CHECK(p.down.outages.size() == 1);  // both directions unless prefixed
    const auto two = parse_profile("outage=500ms@1s,down.outage=2s@3s");
    CHECK(two.up.outages.size() == 1);
    REQUIRE(two.down.outages.size() == 2);
    CHECK(two.down.outages[1].start == 3s);
    CHECK(parse_profile("urban-lte,outage=1s@1s,outage=none").up.outages.empty());
    CHECK(ndm::emu::describe(p.up) == "delay=20ms outage=10s@5s");

    const auto path = (std::filesystem::temp_directory_path() / "ndm_emu_outage_test.json").string();
    std::ofstream(path) << R"({"delay": "5ms", "outage": ["3s@2s", "1s@9s"], "up": {"outage": "1s@20s"}})";
    const auto j = parse_profile(path);
    CHECK(j.down.outages.size() == 2);
    CHECK(j.up.outages.size() == 3);
}

TEST_CASE("emu outage: bad values are one-line errors naming the problem") {
    CHECK(error_of("outage=10s") == "profile: outage: '10s' is not DUR@START (e.g. outage=10s@5s: dark for 10 s from 5 s in)");
    CHECK(error_of("outage=10@5s") == "profile: outage: '10' needs a unit (ns, us, ms, s)");
    CHECK(error_of("outage=10s@-1s") == "profile: outage: -1s must be >= 0");
    CHECK(error_of("outage=0s@5s") == "profile: outage: the duration in '0s@5s' must be > 0");
    CHECK(error_of("outage=2h@1s") == "profile: outage: unknown time unit 'h' (use ns, us, ms, s)");
    CHECK(error_of("outage=4000s@1s") == "profile: outage: 4000s is out of range (at most 3600s)");
    CHECK(error_of("outage=1s@x") == "profile: outage: 'x' is not a number");
    std::string many = "delay=1ms";
    for (int i = 0; i <= static_cast<int>(ndm::emu::kMaxOutages); ++i) many += ",outage=1ms@" + std::to_string(i) + "s";
    CHECK(error_of(many) == "profile: outage: at most 64 phases");
    CHECK(error_of("colour=red").find("trace, outage;") != std::string::npos);  // listed among the known keys
}

TEST_CASE("emu outage: nothing crosses the link during the phase, counted from the first datagram") {
    // A datagram every 10 ms from t = 1 s for 10 s through 20 ms of delay, dark
    // for 3 s from 2 s after the first one: sends in [3 s, 6 s) are dropped on
    // entry, and the two sent in (2.98 s, 3 s) would arrive in the dark: lost in flight.
    EmulatedLink link(config("delay=20ms,outage=3s@2s"), 7);
    std::vector<PacketEvent> drops;
    link.set_observer([&](const PacketEvent& e) {
        if (e.kind == PacketEvent::Kind::dropped) drops.push_back(e);
    });
    const auto out = drive(link, cbr(1000, 10ms, at(1s)), 100);
    const auto& s = link.emu_stats();
    CHECK(s.sent == 1000);
    CHECK(s.drops(DropReason::blackhole) == 302);  // 300 sent dark + 2 in flight at its start
    CHECK(s.total_dropped() == 302);
    CHECK(out.size() == 698);
    CHECK(link.stats().dropped_outage == 302);
    for (const auto& d : out) CHECK((d.at < at(3s) || d.at >= at(6s)));  // no arrival in the dark
    for (const auto& e : drops) {
        CHECK(e.reason == DropReason::blackhole);
        CHECK(e.sent >= at(2980ms));
        CHECK(e.sent < at(6s));
    }
    CHECK(ndm::emu::format_stats(s).find("blackhole 302") != std::string::npos);
}

TEST_CASE("emu outage: the random streams resume where they left off, over several phases") {
    // Loss decisions depend on the position among the datagrams that reach the
    // loss stage: a phase skips its datagrams without drawing, so the losses
    // after it are the no-outage run's, shifted by the skipped datagrams.
    EmulatedLink plain(config("loss=10%"), 3);
    EmulatedLink dark(config("loss=10%,outage=1s@1s,outage=500ms@5s"), 3);
    const auto times = cbr(1000, 10ms);
    const auto a = drive(plain, times, 64);
    const auto b = drive(dark, times, 64);
    CHECK(dark.emu_stats().drops(DropReason::blackhole) == 150);  // [1 s, 2 s) and [5 s, 5.5 s)
    std::vector<bool> plain_kept(times.size(), false), dark_kept(times.size(), false);
    for (const auto& d : a) plain_kept[d.index] = true;
    for (const auto& d : b) dark_kept[d.index] = true;
    // The k-th datagram outside the phases meets the k-th loss decision.
    std::size_t k = 0, mismatches = 0;
    for (std::size_t i = 0; i < times.size(); ++i) {
        const bool in_phase = (i >= 100 && i < 200) || (i >= 500 && i < 550);
        if (in_phase) {
            CHECK_FALSE(dark_kept[i]);
            continue;
        }
        if (dark_kept[i] != plain_kept[k++]) ++mismatches;
    }
    CHECK(mismatches == 0);
    CHECK(b.size() + dark.emu_stats().total_dropped() == 1000);
}

TEST_CASE("emu outage: ndm-send's closing [emu] lines and end.emulator count the blackhole drops") {
    EmulatedLink link(config("outage=1s@0s"), 1);
    (void)drive(link, cbr(10, 200ms), 64);  // 0, 0.2 .. 0.8 s dark; 1.0 .. 1.8 s pass
    const auto& s = link.emu_stats();
    CHECK(ndm::tools::emu_summary_text(s, ndm::emu::EmuStats{}) ==
          "[emu] up: sent 10, delivered 5, dropped 5 (random 0, burst 0, queue_overflow 0, aqm 0, trace_outage 0, "
          "blackhole 5)\n"
          "[emu] down: sent 0, delivered 0, dropped 0 (random 0, burst 0, queue_overflow 0, aqm 0, trace_outage 0, "
          "blackhole 0)\n");
    const auto j = ndm::tools::emu_summary_json(s);
    CHECK(j["dropped"] == 5);
    CHECK(j["drops"]["blackhole"] == 5);
    CHECK(j["drops"].size() == ndm::emu::kDropReasons);
}
