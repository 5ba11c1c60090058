// AC-9 (docs/emulator.md, acceptance criteria) and trace replay as Mahimahi does it (Netravali et al., USENIX ATC 2015):
// Mahimahi semantics (1500-byte opportunities, looping offset by the last
// timestamp, byte accounting, no idle credit), trace parsing and outages.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "emu/delivery_trace.hpp"
#include "test_emu_util.hpp"

using namespace emu_test;
using ndm::emu::DropReason;
using ndm::emu::EmulatedLink;
using ndm::emu::Trace;

namespace {

std::string data_dir() { return std::string(NDM_SOURCE_DIR) + "/data/traces/"; }

// Saturates the trace link for `seconds` (a prefill of 300 packets at t = 0,
// then 1500-byte packets every 100 µs = 120 Mbit/s) and checks every 100 ms
// window against the trace's opportunity count.
void check_windows(const std::string& spec, const Trace& trace, int seconds) {
    EmulatedLink link(config(spec.c_str()), 1);
    std::vector<Instant> t(300, Instant{});
    for (auto x : cbr(static_cast<std::size_t>(seconds) * 10000, 100us)) t.push_back(x);
    std::vector<Delivered> out;
    std::vector<std::uint8_t> p = payload(0, 1500);
    for (std::size_t i = 0; i < t.size(); ++i) {
        deliver_until(link, t[i], t, out, false);
        link.send({p}, t[i]);
    }
    const auto end = at(std::chrono::seconds(seconds));
    deliver_until(link, end, t, out, false);
    std::vector<long> got(static_cast<std::size_t>(seconds) * 10, 0);
    for (const auto& d : out)
        if (d.at < end) ++got[static_cast<std::size_t>((d.at - Instant{}) / 100ms)];
    int worst = 0;
    for (std::size_t w = 0; w < got.size(); ++w) {
        const auto lo = ndm::Duration(100ms) * static_cast<std::int64_t>(w);
        // Opportunities in [lo, lo + 100 ms) (count_through is inclusive); those at
        // t = 0 are burned before the first packet arrives at 0, as mm-link does.
        const long expect = static_cast<long>(trace.count_through(lo + 100ms - 1ns)) -
                            static_cast<long>(trace.count_through(w == 0 ? ndm::Duration{0} : lo - 1ns));
        worst = std::max(worst, static_cast<int>(std::abs(got[w] - expect)));
        INFO("window ", w, " got ", got[w], " expected ", expect);
        REQUIRE(std::abs(got[w] - expect) <= 1);
    }
    MESSAGE("trace ", trace.name(), ": ", got.size(), " windows of 100 ms, worst |delivered - opportunities| = ", worst);
}

}  // namespace

TEST_CASE("emu AC-9: delivered per 100 ms window = trace opportunities +- 1 (synthetic and LTE traces)") {
    const Trace square = Trace::load(data_dir() + "square-12-3mbit.trace");
    check_windows("trace=square-12-3mbit.trace,queue=100000pkt", square, 5);
    const Trace verizon = Trace::load(data_dir() + "Verizon-LTE-short.down");
    check_windows("down.trace=Verizon-LTE-short.down,up.trace=Verizon-LTE-short.down,queue=100000pkt", verizon, 20);
    // ../shared's traces too, when this checkout has them.
    const std::string shared = std::string(NDM_SOURCE_DIR) + "/../shared/data/traces/TMobile-LTE-short.up";
    if (std::filesystem::exists(shared)) {
        const Trace tm = Trace::load(shared);
        check_windows("trace=" + shared + ",queue=100000pkt", tm, 10);
    }
}

TEST_CASE("emu AC-9: a loop delivers the line count, wrap-around is offset by the last timestamp") {
    const Trace square = Trace::load(data_dir() + "square-12-3mbit.trace");
    REQUIRE(square.size() == 1250);
    REQUIRE(square.period() == 2000ms);
    EmulatedLink link(config("trace=square-12-3mbit.trace,queue=100000pkt"), 1);
    const auto d = drive(link, std::vector<Instant>(3000, Instant{}), 1500);
    REQUIRE(d.size() == 3000);
    std::size_t first_loop = 0;
    for (const auto& x : d) first_loop += x.at <= at(2000ms);
    CHECK(first_loop == 1250);
    CHECK(d[1249].at == at(2000ms));  // the last line
    CHECK(d[1250].at == at(2001ms));  // loop 2 starts at 2000 + 1 ms
    CHECK(d[2500].at == at(4001ms));
}

TEST_CASE("emu AC-9: no credit while idle, byte accounting shares opportunities") {
    // 12 Mbit/s, idle for 5 s, then 100 packets at once: they leave one per ms.
    EmulatedLink link(config("trace=const-12mbit.trace,queue=1000pkt"), 1);
    std::vector<Instant> t = {Instant{}};
    for (int i = 0; i < 100; ++i) t.push_back(at(5000ms + 300us));
    const auto d = drive(link, t, 1500);
    REQUIRE(d.size() == 101);
    CHECK(d[0].at == at(1ms));
    for (int i = 1; i <= 100; ++i) CHECK(d[i].at == at(5000ms + std::chrono::milliseconds(i)));

    // 500-byte packets: three per 1500-byte opportunity.
    EmulatedLink small(config("trace=const-12mbit.trace,queue=1000pkt"), 1);
    const auto s = drive(small, std::vector<Instant>(30, Instant{}), 500);
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i].at == at(std::chrono::milliseconds(1 + i / 3)));
    // 1000-byte packets span opportunities: 3 packets per 2 ms.
    EmulatedLink mid(config("trace=const-12mbit.trace,queue=1000pkt"), 1);
    const auto m = drive(mid, std::vector<Instant>(30, Instant{}), 1000);
    CHECK(m[0].at == at(1ms));
    CHECK(m[1].at == at(2ms));
    CHECK(m[2].at == at(2ms));
    CHECK(m[29].at == at(20ms));
}

TEST_CASE("emu: queue overflow during a trace outage is tagged trace_outage") {
    // 6 Mbit/s into a 12 Mbit/s trace with a 500 ms hole every 2.5 s.
    EmulatedLink link(config("trace=outage-500ms.trace,queue=50pkt"), 1);
    drive(link, cbr(2400, 2ms), 1500);  // 4.8 s
    const auto& s = link.emu_stats();
    MESSAGE("outage: trace_outage ", s.drops(DropReason::trace_outage), ", queue_overflow ",
            s.drops(DropReason::queue_overflow), ", p99 queue delay ", ms(s.queue_delay.quantile(0.99)), " ms");
    CHECK(s.drops(DropReason::trace_outage) > 100);
    CHECK(s.drops(DropReason::queue_overflow) < 10);  // only while the queue drains after the hole
    CHECK(link.stats().dropped_outage == s.drops(DropReason::trace_outage));
}

TEST_CASE("emu: trace parsing errors name the file and line") {
    CHECK_THROWS_WITH_AS(Trace::parse("1\n2\nx\n", "t.trace"), "t.trace:3: not a non-negative integer: 'x'",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Trace::parse("5\n3\n", "t.trace"), "t.trace:2: timestamp 3 is smaller than the previous 5",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Trace::parse("-1\n", "t.trace"), "t.trace:1: not a non-negative integer: '-1'",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Trace::parse("\n\n", "t.trace"), "t.trace: empty trace (no delivery opportunities)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Trace::parse("0\n0\n", "t.trace"), "t.trace: the last timestamp must be > 0 (Mahimahi loops by it)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(Trace::load("/nonexistent/x.trace"), "cannot read trace '/nonexistent/x.trace': No such file or directory",
                         std::invalid_argument);
    const Trace t = Trace::parse("  1\r\n1\n\n3\n", "ok");
    CHECK(t.size() == 3);
    CHECK(t.count_through(0ms) == 0);
    CHECK(t.count_through(1ms) == 2);
    CHECK(t.count_through(3ms) == 3);
    CHECK(t.count_through(4ms) == 5);  // loop 2: 3 + 1 = 4 ms, twice
    CHECK(t.time_of(3) == 4ms);
    CHECK(t.mean_rate_bps() == doctest::Approx(3 * 1500 * 8 / 0.003));
}

// Datagrams larger than an opportunity. Mahimahi's delivery
// opportunities carry 1500 bytes and its queue holds MTU-sized packets (a 64 KB
// datagram reaches mm-link as ~44 IP fragments), so a datagram needs, and holds
// queue places for, as many 1500-byte packets as it spans.

TEST_CASE("emu trace: a 65507-byte datagram needs 44 opportunities, the next one uses the leftover bytes") {
    EmulatedLink link(config("trace=const-12mbit.trace,queue=1000pkt"), 1);
    const auto d = drive(link, std::vector<Instant>(3, Instant{}), 65507);
    REQUIRE(d.size() == 3);
    CHECK(d[0].at == at(44ms));   // ceil(65507 / 1500) = 44 opportunities, one per ms
    CHECK(d[1].at == at(88ms));   // 131014 bytes: 87.3 opportunities
    CHECK(d[2].at == at(132ms));  // 196521 bytes: 131.01 opportunities
    CHECK(link.emu_stats().queue_delay.max() == 88ms);  // the third waits until the 88th opportunity
}

TEST_CASE("emu trace: a saturated trace link carries the same bytes/s for 1452- and 65507-byte datagrams") {
    const Trace verizon = Trace::load(data_dir() + "Verizon-LTE-short.up");
    auto bytes_per_s = [](std::size_t size) {
        // 2x the trace's mean rate offered for 20 s into a queue that never empties.
        EmulatedLink link(config("trace=Verizon-LTE-short.up,queue=20mb"), 1);
        const double offered_bps = 2 * 6.0e6;
        const auto spacing = ndm::Duration(static_cast<std::int64_t>(static_cast<double>(size) * 8 / offered_bps * 1e9));
        const auto d = drive(link, cbr(static_cast<std::size_t>(20s / spacing), spacing), size);
        std::uint64_t bytes = 0;
        for (const auto& x : d)
            if (x.at <= at(20s)) bytes += size;
        return static_cast<double>(bytes) / 20;
    };
    const double small = bytes_per_s(1452), large = bytes_per_s(65507);
    // What the trace's first 20 s offer (its mean over a whole loop differs).
    const double capacity = static_cast<double>(verizon.count_through(20s)) * 1500 / 20;
    MESSAGE("Verizon-LTE-short.up (", capacity * 8 / 1e6, " Mbit/s in 0-20 s): 1452-byte datagrams ", small * 8 / 1e6,
            " Mbit/s, 65507-byte ", large * 8 / 1e6, " Mbit/s");
    CHECK(large == doctest::Approx(small).epsilon(0.03));
    CHECK(small == doctest::Approx(capacity).epsilon(0.02));
}

TEST_CASE("emu trace: the packet bound counts 1500-byte packets, so 64 KB datagrams cannot bloat the queue") {
    // A burst of 20 datagrams at once into queue=200pkt.
    auto accepted = [](const char* spec, std::size_t size) {
        EmulatedLink link(config(spec), 1);
        drive(link, std::vector<Instant>(20, Instant{}), size);
        return link.emu_stats().delivered;
    };
    CHECK(accepted("trace=const-12mbit.trace,queue=200pkt", 65507) == 4);  // 44 places each: 4 x 44 = 176 <= 200
    CHECK(accepted("trace=const-12mbit.trace,queue=200pkt", 1452) == 20);
    CHECK(accepted("trace=const-12mbit.trace,queue=10pkt", 1452) == 10);
    CHECK(accepted("trace=const-12mbit.trace,queue=10pkt", 3001) == 3);  // 3 places each
    CHECK(accepted("trace=const-12mbit.trace,queue=200pkt,aqm=codel", 65507) == 4);  // CoDel's queue likewise
    // A rate link counts datagrams, as netem on the sending interface does.
    CHECK(accepted("rate=12mbit,queue=10pkt", 65507) == 10);
    // The byte bound counts bytes either way.
    CHECK(accepted("trace=const-12mbit.trace,queue=300kb", 65507) == 4);

    // Saturated with 64 KB datagrams, the queueing delay of queue=200pkt is
    // that of 200 x 1500 bytes (200 ms at 12 Mbit/s), not of 200 x 64 KB (8.7 s).
    EmulatedLink link(config("trace=const-12mbit.trace,queue=200pkt"), 1);
    drive(link, cbr(400, 30ms), 65507);  // 17.5 Mbit/s for 12 s
    const auto& s = link.emu_stats();
    MESSAGE("64 KB datagrams, queue=200pkt: max queue delay ", ms(s.queue_delay.max()), " ms, ",
            s.drops(DropReason::queue_overflow), " dropped");
    CHECK(s.queue_delay.max() <= 200ms);
    CHECK(s.queue_delay.max() >= 100ms);  // three 64 KB datagrams ahead: 131 ms
    CHECK(s.drops(DropReason::queue_overflow) > 80);  // ~120: 400 offered, ~280 fit through 12 Mbit/s
    CHECK(ndm::emu::describe(config("trace=const-12mbit.trace,queue=200pkt")).find("queue=200pkt(1500b each)") !=
          std::string::npos);
}
