// Recorded ACK traces (tests/data/ack-traces, format in its README.md):
// the recorder and the file format round-trip exactly; the decisions of
// ndm-cubic and ndm are identical with every SIMD kernel on each trace; reno,
// cubic, bbr, bbr1, ndm-cubic and ndm-lkm keep a sane window and reproduce
// their recorded digests, so a behaviour change is noticed (and, when
// intended, re-recorded).
//
// Regenerate (after a deliberate change, from the source tree's root):
//   NDM_WRITE_ACK_TRACES=1 build/tests/ndm_tests -tc="ack traces: record*"        traces + digests
//   NDM_WRITE_ACK_TRACES=digests build/tests/ndm_tests -tc="ack traces: record*"  digests only
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ack_trace.hpp"
#include "cc/ndm/kernels.hpp"
#include "cc/ndm/ndm_bbr.hpp"
#include "cc/ndm/ndm_controller.hpp"
#include "cc/window.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;
namespace nn = ndm::cc::ndm;
using ndm::Duration;
using ndm::testing::AckTrace;

namespace {

const std::string kDir = std::string(NDM_SOURCE_DIR) + "/tests/data/ack-traces";

// The recorded transfers: client → server bulk data in virtual time, the
// client's controller wrapped by the recorder.
struct TraceSpec {
    std::string name;
    std::string description;
    std::string cc;  // the controller that produced the events
    std::size_t mds;
    Duration duration;
    ndm::sim::TransferSpec (*build)();
};

ndm::sim::TransferSpec emu_spec(const char* profile) {
    ndm::sim::TransferSpec s;
    const auto p = ndm::emu::parse_profile(profile);
    s.client_to_server_factory = [p] { return ndm::emu::make_link(p, ndm::emu::Direction::up, 1); };
    s.server_to_client_factory = [p] { return ndm::emu::make_link(p, ndm::emu::Direction::down, 1); };
    return s;
}

const std::vector<TraceSpec>& trace_specs() {
    static const std::vector<TraceSpec> specs = {
        // Recorded with the controller then named ndm, now ndm-cubic (the same code).
        {"urban-lte-ndm", "emu preset urban-lte, 1452-byte packets, ndm, 10 s, seed 1", "ndm-cubic", 1452, 10s,
         [] { return emu_spec("urban-lte"); }},
        {"droptail-20m-cubic",
         "20 Mbit/s droptail bottleneck (100 packets), 20 ms each way, 1452-byte packets, cubic, 3 s", "cubic", 1452,
         3s,
         [] {
             ndm::sim::TransferSpec s;
             s.client_to_server.rate_bps = 20e6;
             s.client_to_server.queue_packets = 100;
             s.client_to_server.delay = 20ms;
             s.server_to_client.delay = 20ms;
             return s;
         }},
        {"lte-verizon-reno", "emu preset lte-verizon (Mahimahi trace uplink), 1452-byte packets, reno, 5 s, seed 1",
         "reno", 1452, 5s, [] { return emu_spec("lte-verizon"); }},
    };
    return specs;
}

// The controllers whose replays are pinned by digests.txt.
const std::vector<std::string>& digest_controllers() {
    static const std::vector<std::string> names = {"reno", "cubic", "ndm-lkm", "bbr", "bbr1", "ndm-cubic"};
    return names;
}

struct Recorded {
    AckTrace trace;
    std::uint64_t live_digest = 0;  // of the recording controller, live
};

Recorded record(const TraceSpec& spec, Duration duration) {
    ndm::testing::Recording rec;
    rec.inner = std::string(spec.cc);
    const std::string reg = "ack-trace-recorder-" + std::string(spec.name);
    const ndm::testing::ScopedRecorder recorder(reg, rec);
    auto t = spec.build();
    t.client.cc = reg;
    t.client.max_datagram_size = t.server.max_datagram_size = spec.mds;
    t.send_for = duration;
    t.deadline = duration + 30s;
    const auto r = ndm::sim::run_transfer(t);
    REQUIRE_MESSAGE(r.completed, spec.name, ": ", r.failure);
    REQUIRE(r.hash_match);
    REQUIRE(rec.max_datagram_size == spec.mds);
    Recorded out;
    out.trace.name = std::string(spec.name);
    out.trace.description = std::string(spec.description);
    out.trace.max_datagram_size = spec.mds;
    out.trace.events = std::move(rec.events);
    out.live_digest = rec.digest.value();
    return out;
}

ndm::cc::Params params(const AckTrace& t) {
    ndm::cc::Params p;
    p.max_datagram_size = t.max_datagram_size;
    return p;
}

std::string path(const TraceSpec& spec) { return kDir + "/" + std::string(spec.name) + ".ndmt"; }

AckTrace load(const TraceSpec& spec) { return ndm::testing::load_trace(path(spec)); }

// digests.txt: "<trace> <controller> <digest hex>" per line, '#' comments.
std::map<std::string, std::uint64_t> load_digests() {
    std::map<std::string, std::uint64_t> out;
    std::ifstream in(kDir + "/digests.txt");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream l(line);
        std::string trace, cc, hex;
        l >> trace >> cc >> hex;
        out[trace + " " + cc] = std::stoull(hex, nullptr, 16);
    }
    return out;
}

std::uint64_t replay_digest(const AckTrace& t, const std::string& cc, ndm::testing::ReplayResult* result = nullptr) {
    auto c = ndm::cc::make(cc, params(t));
    const auto r = ndm::testing::replay(*c, t);
    if (result) *result = r;
    return r.digest;
}

}  // namespace

TEST_CASE("ack traces: recorder and file format round-trip exactly") {
    // A short recording of each kind: decoded events equal the recorded ones,
    // and replaying them into a fresh controller reproduces the live run.
    for (const auto& spec : trace_specs()) {
        CAPTURE(spec.name);
        const auto rec = record(spec, 500ms);
        REQUIRE(rec.trace.events.size() > 100);
        const auto file = ndm::testing::serialize_trace(rec.trace);
        const auto back = ndm::testing::parse_trace(file, "round-trip");
        CHECK(back.name == rec.trace.name);
        CHECK(back.max_datagram_size == rec.trace.max_datagram_size);
        REQUIRE(back.events.size() == rec.trace.events.size());
        const auto again = ndm::testing::serialize_trace(back);
        CHECK(again == file);
        // The ndm controller uses the process-wide kernel; the recording did too.
        CHECK(replay_digest(back, std::string(spec.cc)) == rec.live_digest);
    }
}

TEST_CASE("ack traces: corrupt files are clear errors") {
    AckTrace t;
    t.name = "tiny";
    t.description = "three events";
    t.max_datagram_size = 1200;
    ndm::cc::PacketSent p;
    p.packet_number = 1;
    p.bytes = 1200;
    p.bytes_in_flight = 1200;
    ndm::cc::AckEvent a;
    a.now = ndm::Instant{} + 10ms;
    a.packets_acked = 1;
    a.bytes_acked = 1200;
    a.prior_bytes_in_flight = 1200;
    a.latest_rtt = a.smoothed_rtt = a.min_rtt = 10ms;
    t.events = {p, a, ndm::cc::SpuriousEvent{a.now}};
    const auto good = ndm::testing::serialize_trace(t);
    CHECK(ndm::testing::parse_trace(good, "x").events.size() == 3);

    auto expect = [](const std::string& file, const char* what) {
        CHECK_THROWS_WITH_AS(ndm::testing::parse_trace(file, "x"), doctest::Contains(what), std::runtime_error);
    };
    auto bad = good;
    bad.replace(0, 15, "ndm-ack-trace 9");
    expect(bad, "unsupported version 9");
    expect(good.substr(0, good.size() - 1), "data section");
    bad = good;
    bad.back() = static_cast<char>(bad.back() ^ 1);
    expect(bad, "checksum");
    expect("hello\n", "ndm-ack-trace");
    expect("", "truncated header");
    // A consistent header around bad data: the decoder names the problem.
    auto with_data = [](const std::string& data) {
        return "ndm-ack-trace 1\nname x\ndescription y\nmds 1200\nevents 1\nfnv1a " +
               std::to_string(ndm::testing::trace_detail::fnv(data)) + "\ndata " + std::to_string(data.size()) +
               "\n" + data;
    };
    expect(with_data("\x07"), "unknown event kind 7");
    expect(with_data("\x01\x80"), "truncated data");
    expect(with_data("\x03\x02\x03\x02"), "2 events, header says 1");
    CHECK_THROWS_WITH_AS(ndm::testing::load_trace("/nonexistent.ndmt"), doctest::Contains("cannot open"),
                         std::runtime_error);
}

TEST_CASE("ack traces: record (NDM_WRITE_ACK_TRACES=1 regenerates the fixtures)") {
    const char* w = std::getenv("NDM_WRITE_ACK_TRACES");
    const std::string mode = w ? w : "";
    if (mode == "1") {
        for (const auto& spec : trace_specs()) {
            const auto rec = record(spec, spec.duration);
            ndm::testing::save_trace(rec.trace, path(spec));
            MESSAGE(spec.name, ": ", rec.trace.events.size(), " events, ",
                    std::filesystem::file_size(path(spec)), " bytes");
        }
    }
    if (mode == "1" || mode == "digests") {
        std::ofstream out(kDir + "/digests.txt", std::ios::trunc);
        out << "# <trace> <controller> <FNV-1a of (cwnd, ssthresh) after every event, hex>\n"
               "# written by NDM_WRITE_ACK_TRACES=1|digests (tests/sim/test_ack_traces.cpp)\n";
        for (const auto& spec : trace_specs()) {
            const auto t = load(spec);
            for (const auto& cc : digest_controllers()) {
                std::ostringstream hex;
                hex << std::hex << replay_digest(t, cc);
                out << spec.name << ' ' << cc << ' ' << hex.str() << '\n';
            }
        }
        REQUIRE(out.good());
    }
    // Whether or not they were just written, the fixtures load and carry
    // every kind of event the controllers react to.
    std::uintmax_t total = 0;
    for (const auto& spec : trace_specs()) {
        CAPTURE(spec.name);
        const auto t = load(spec);
        total += std::filesystem::file_size(path(spec));
        std::size_t kinds[5] = {0, 0, 0, 0, 0};
        for (const auto& ev : t.events) ++kinds[ev.index()];
        MESSAGE(spec.name, ": ", kinds[0], " sent, ", kinds[1], " ACKs, ", kinds[2], " congestion, ", kinds[3],
                " spurious, ", kinds[4], " idle restarts");
        CHECK(t.max_datagram_size == spec.mds);
        CHECK(kinds[0] > 1000);  // sent
        CHECK(kinds[1] > 500);   // ack
        CHECK(kinds[2] > 0);     // congestion
    }
    MESSAGE("ack-trace fixtures: ", total, " bytes");
    CHECK(total < 300 * 1024);
}

TEST_CASE("ack traces: ndm-cubic decisions are identical with every kernel") {
    for (const auto& spec : trace_specs()) {
        CAPTURE(spec.name);
        const auto t = load(spec);
        auto run = [&](nn::Simd simd, nn::NdmController::Counters* counters) {
            ndm::cc::Options o;
            o["simd"] = std::string(nn::simd_name(simd));
            nn::NdmController cc(params(t), o);
            std::vector<std::uint64_t> windows;
            windows.reserve(2 * t.events.size());
            ndm::testing::replay(cc, t, [&](std::size_t) {
                windows.push_back(cc.cwnd());
                windows.push_back(cc.ssthresh());
            });
            *counters = cc.counters();
            return windows;
        };
        nn::NdmController::Counters ref_counters;
        const auto ref = run(nn::Simd::scalar, &ref_counters);
        MESSAGE(spec.name, ": ", t.events.size(), " events; ndm loss decisions: ", ref_counters.forgiven,
                " forgiven, ", ref_counters.congestive, " congestive, ", ref_counters.forced, " forced, ",
                ref_counters.persistent, " persistent");
        CHECK(ref_counters.forgiven + ref_counters.congestive + ref_counters.forced > 0);
        for (const auto simd : nn::supported_simd()) {
            CAPTURE(nn::simd_name(simd));
            nn::NdmController::Counters c;
            const auto got = run(simd, &c);
            REQUIRE(got.size() == ref.size());
            const std::size_t first_diff = ndm::test::first_difference(got, ref);
            CHECK_MESSAGE(first_diff == got.size(), "first difference after event ", first_diff / 2);
            CHECK(c.forgiven == ref_counters.forgiven);
            CHECK(c.congestive == ref_counters.congestive);
            CHECK(c.forced == ref_counters.forced);
            CHECK(c.persistent == ref_counters.persistent);
        }
    }
}

TEST_CASE("ack traces: ndm decisions are identical with every kernel") {
    // The traces carry no per-packet losses (PacketLost), so every loss
    // event reaches the discriminator with its counts only; the verdicts and
    // the BBRv3 underneath must not depend on the kernel either.
    for (const auto& spec : trace_specs()) {
        CAPTURE(spec.name);
        const auto t = load(spec);
        auto run = [&](nn::Simd simd, nn::NdmBbr::Counters* counters) {
            ndm::cc::Options o;
            o["simd"] = std::string(nn::simd_name(simd));
            nn::NdmBbr cc(params(t), o);
            std::vector<std::uint64_t> windows;
            windows.reserve(2 * t.events.size());
            ndm::testing::replay(cc, t, [&](std::size_t) {
                windows.push_back(cc.cwnd());
                windows.push_back(static_cast<std::uint64_t>(cc.pacing_rate().value_or(0)));
            });
            *counters = cc.counters();
            return windows;
        };
        nn::NdmBbr::Counters ref_counters;
        const auto ref = run(nn::Simd::scalar, &ref_counters);
        std::uint64_t events = 0;
        for (const auto c : ref_counters) events += c;
        MESSAGE(spec.name, ": ndm loss verdicts: ", ref_counters[0], " random, ", events - ref_counters[0],
                " congestive");
        CHECK(events > 0);
        for (const auto simd : nn::supported_simd()) {
            CAPTURE(nn::simd_name(simd));
            nn::NdmBbr::Counters c;
            const auto got = run(simd, &c);
            REQUIRE(got.size() == ref.size());
            const std::size_t first_diff = ndm::test::first_difference(got, ref);
            CHECK_MESSAGE(first_diff == got.size(), "first difference after event ", first_diff / 2);
            CHECK(c == ref_counters);
        }
    }
}

TEST_CASE("ack traces: reno, cubic, bbr, bbr1, ndm-cubic and ndm-lkm stay sane and match their digests") {
    const auto digests = load_digests();
    for (const auto& spec : trace_specs()) {
        const auto t = load(spec);
        for (const auto& cc : digest_controllers()) {
            CAPTURE(spec.name);
            CAPTURE(cc);
            ndm::testing::ReplayResult r;
            const auto d = replay_digest(t, cc, &r);
            // Never below the minimum window (RFC 9002 §7.2), never absurd, and
            // the window moved.
            CHECK(r.min_cwnd >= ndm::cc::minimum_window(t.max_datagram_size));
            CHECK(r.max_cwnd <= (64u << 20));
            CHECK(r.max_cwnd > r.min_cwnd);
            const auto it = digests.find(std::string(spec.name) + " " + cc);
            REQUIRE_MESSAGE(it != digests.end(), "no digest recorded (NDM_WRITE_ACK_TRACES=digests writes them)");
            CHECK_MESSAGE(d == it->second,
                          "behaviour changed on a recorded trace; if intended, NDM_WRITE_ACK_TRACES=digests");
        }
    }
}
