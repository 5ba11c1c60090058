// The tools' test protocol pieces (-P/-R parameters, sender report) and the
// server-side controller switch they rely on.
#include <doctest/doctest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "connection_pair.hpp"
#include "ndm/cc.hpp"
#include "tools/perf/perf_session.hpp"

using namespace ndm;

namespace {
// A fixed window with a recognisable state name.
class FixedWindow final : public cc::Controller {
public:
    explicit FixedWindow(std::size_t mds) : cwnd_(20 * mds) {}
    void on_ack(const cc::AckEvent&) override {}
    void on_congestion_event(const cc::CongestionEvent&) override {}
    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::string_view state() const override { return "fixed_for_test"; }
    [[nodiscard]] std::string_view name() const override { return "perf-session-fixed"; }

private:
    std::uint64_t cwnd_;
};
}  // namespace

TEST_CASE("perf session: parallel and reverse parameters round-trip, bad counts are rejected") {
    tools::TestParams p;
    p.cc = "reno";
    p.streams = 4;
    p.index = 3;
    p.test_id = 0xfeedface12345678ULL;
    p.reverse = true;
    p.bitrate = 20'000'000;
    p.burst = 10;
    p.omit = 2;
    p.check_payload = true;  // the client's direction only: none in reverse
    const auto q = tools::decode_test_params(tools::encode(p));
    CHECK_FALSE(q.check_payload);
    p.reverse = false;
    CHECK(tools::decode_test_params(tools::encode(p)).check_payload);
    p.reverse = true;
    CHECK(q.bitrate == 20'000'000);
    CHECK(q.burst == 10);
    CHECK(q.omit == 2);
    CHECK(q.streams == 4);
    CHECK(q.index == 3);
    CHECK(q.test_id == p.test_id);
    CHECK(q.reverse);
    p.index = 4;  // outside 0..streams-1
    CHECK_THROWS_AS(tools::decode_test_params(tools::encode(p)), std::invalid_argument);
    p.streams = tools::kMaxParallel + 1;
    p.index = 0;
    CHECK_THROWS_AS(tools::decode_test_params(tools::encode(p)), std::invalid_argument);

    tools::SenderReport r;
    r.bytes = 12345;
    r.seconds = 2.5;
    r.retransmits = 7;
    r.hash = 0xabcdef;
    r.omitted_bytes = 100;
    r.omitted_retransmits = 3;
    const auto s = tools::decode_sender_report(tools::encode(r));
    CHECK(s.omitted_bytes == 100);
    CHECK(s.omitted_retransmits == 3);
    CHECK(s.bytes == 12345);
    CHECK(s.seconds == 2.5);
    CHECK(s.retransmits == 7);
    CHECK(s.hash == 0xabcdef);
    const std::vector<std::uint8_t> junk{'x'};
    CHECK_THROWS_AS(tools::decode_sender_report(junk), std::invalid_argument);
}

namespace {
// A test request as a client would send it, with `edit` applied to the JSON:
// hostile values the encoder (typed) cannot produce.
std::vector<std::uint8_t> request(const std::function<void(nlohmann::json&)>& edit) {
    tools::TestParams p;
    p.cc = "cubic";
    const auto good = tools::encode(p);
    auto j = nlohmann::json::parse(good.begin(), good.end());
    edit(j);
    const std::string s = j.dump();
    return {s.begin(), s.end()};
}

std::string refusal(const std::vector<std::uint8_t>& blob) {
    try {
        (void)tools::decode_test_params(blob);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("perf session: every test parameter from the network is bounded") {
    using J = nlohmann::json;
    CHECK(refusal(request([](J&) {})).empty());
    struct Case {
        const char* key;
        J value;
        const char* why;  // part of the message
    };
    const Case bad[] = {
        // interval: 1e-300 printed ~630 000 rows in 5 s, 1e10 and 9.2233715e9 overflowed now + interval.
        {"interval", 1e-300, "interval 1e-300 s outside 0.1..60"},
        {"interval", 1e10, "interval 1e+10 s outside 0.1..60"},
        {"interval", 9.2233715e9, "interval"},
        {"interval", 0.09, "interval"},
        {"interval", 60.5, "interval"},
        {"interval", -1, "interval"},
        {"interval", "1", "interval is missing or not a number"},
        {"seconds", 0, "seconds 0 s outside 0.1..86400"},
        {"seconds", 86401, "seconds"},
        {"seconds", 9.2233715e9, "seconds"},
        {"seconds", nullptr, "seconds is missing or not a number"},
        {"packet_size", 1199, "packet_size 1199 outside 1200..65507"},
        {"packet_size", 65508, "packet_size"},
        {"packet_size", -1, "packet_size is not a non-negative integer"},
        {"packet_size", 1e300, "packet_size is not a non-negative integer"},  // float → size_t was UB
        {"packet_size", 1452.5, "packet_size is not a non-negative integer"},
        {"bytes", (std::uint64_t{1} << 50) + 1, "bytes"},
        {"bytes", -5, "bytes is not a non-negative integer"},
        {"seed", 1.5, "seed is not a non-negative integer"},
        {"seed", -1, "seed"},
        // streams/index were read as unsigned: 2^32 + 2 wrapped to 2.
        {"streams", (std::uint64_t{1} << 32) + 2, "streams"},
        {"streams", 0, "streams"},
        {"streams", 129, "streams"},
        {"index", (std::uint64_t{1} << 32), "index"},
        {"index", 1, "index 1 not below streams 1"},
        {"test_id", -3, "test_id"},
        {"cc", "no-such-cc", "cc \"no-such-cc\" is not a known controller"},
        {"cc", "\x1b[2J", "cc \"\x1b[2J\" is not a known controller"},  // raw: printing sites escape
        {"cc", 7, "cc is missing or not a string"},
        {"reverse", 1, "reverse is not a boolean"},
        {"magic", "ndm-perf/0", "not an ndm-send test request"},
        // A client whose payload or hash differ would see its correct data reported as corrupt.
        {"workload", 1, "test payload format is version 1, this server's is 4"},
        {"workload", 3, "version 3"},
        {"workload", 5, "version 5"},
        {"workload", -1, "workload is not a non-negative integer"},
        {"check", "crc", "check is not \"payload\" or \"hash\""},
        {"check", true, "check is not"},
        // -b and -O: the server paces and times its sending by them in -R.
        {"bitrate", std::uint64_t{10'000'000'000'001}, "bitrate"},
        {"bitrate", -1, "bitrate is not a non-negative integer"},
        {"bitrate", 2e7, "bitrate is not a non-negative integer"},
        {"burst", 1001, "burst"},
        {"burst", std::uint64_t{1} << 32, "burst"},
        {"omit", 600.5, "omit 600.5 s outside 0..600"},
        {"omit", -1, "omit"},
        {"omit", "2", "omit is missing or not a number"},
    };
    for (const auto& c : bad) {
        CAPTURE(c.key);
        CAPTURE(c.value.dump());
        const std::string why = refusal(request([&](J& j) { j[c.key] = c.value; }));
        CHECK_MESSAGE(why.find(c.why) != std::string::npos, why);
    }
    CHECK(refusal(request([](J& j) { j.erase("interval"); })).find("interval") != std::string::npos);
    // Clients from before the field used format 1.
    CHECK(refusal(request([](J& j) { j.erase("workload"); })).find("version 1") != std::string::npos);
    // -O with a byte budget has no meaning (the omitted period is a time).
    CHECK(refusal(request([](J& j) {
              j["bytes"] = 1000;
              j["seconds"] = 0;
              j["omit"] = 2;
          })).find("omit applies to timed tests only") != std::string::npos);
    // A byte budget replaces the time (seconds 0); within bounds it is accepted.
    const auto q = tools::decode_test_params(request([](J& j) {
        j["bytes"] = std::uint64_t{1} << 50;
        j["seconds"] = 0;
        j["interval"] = 60;
        j["packet_size"] = 65507;
        j["streams"] = 128;
        j["index"] = 127;
        j["seed"] = UINT64_MAX;
    }));
    CHECK(q.bytes == std::uint64_t{1} << 50);
    CHECK(q.streams == 128);
    CHECK(q.index == 127);
    CHECK(q.seed == UINT64_MAX);
    // validate() is what ndm-send applies to its own flags.
    tools::TestParams p;
    p.cc = "reno";
    CHECK_NOTHROW(tools::validate(p));
    p.interval = 0.05;
    CHECK_THROWS_AS(tools::validate(p), std::invalid_argument);
}

TEST_CASE("perf session: reports from the peer are type- and range-checked") {
    auto blob = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
    CHECK(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1.5,"hash":9})")).bytes == 5);
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":-5,"seconds":1.5,"hash":9})")), std::invalid_argument);
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":1e300,"seconds":1.5,"hash":9})")), std::invalid_argument);
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":-1,"hash":9})")), std::invalid_argument);
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1e300,"hash":9})")), std::invalid_argument);
    CHECK_THROWS_AS(tools::decode_sender_report(blob(R"({"bytes":5,"seconds":1,"retransmits":-1,"hash":9})")),
                    std::invalid_argument);
    CHECK_THROWS_AS(tools::decode_sender_report(blob(R"({"bytes":5,"seconds":1,"hash":9})")), std::invalid_argument);
    // CPU use and the receiver's controller name: bounded, a known name.
    const auto rr = tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1,"hash":9,"cpu_user":12.5,"cpu_system":3,"cc":"reno"})"));
    CHECK(rr.cpu.user == 12.5);
    CHECK(rr.cpu.system == 3);
    CHECK(rr.cc == "reno");
    for (const char* bad : {R"("cpu_user":-1)", R"("cpu_system":1e300)", R"("cpu_user":"5")", R"("cc":"[2J")", R"("cc":7)"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(tools::decode_receiver_report(blob(std::string(R"({"bytes":5,"seconds":1,"hash":9,)") + bad + "}")),
                        std::invalid_argument);
    }
    CHECK_THROWS_AS(tools::decode_sender_report(blob(R"({"bytes":5,"seconds":1,"retransmits":2,"hash":9,"cpu_system":102401})")),
                    std::invalid_argument);
    // The payload check (format 3): where the first differing byte was, one of those read.
    tools::ReceiverReport checked;
    checked.bytes = 1000;
    checked.checked_payload = true;
    auto back = tools::decode_receiver_report(tools::encode(checked));
    CHECK(back.checked_payload);
    CHECK(back.mismatch_at == tools::ReceiverReport::kNoMismatch);
    checked.mismatch_at = 999;
    CHECK(tools::decode_receiver_report(tools::encode(checked)).mismatch_at == 999);
    CHECK_FALSE(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1,"hash":9})")).checked_payload);
    for (const char* bad : {R"("check":"payload","mismatch_at":5)", R"("check":"hash","mismatch_at":1)",
                            R"("mismatch_at":0)", R"("check":"payload","mismatch_at":-1)", R"("check":"crc")"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(tools::decode_receiver_report(blob(std::string(R"({"bytes":5,"seconds":1,"hash":9,)") + bad + "}")),
                        std::invalid_argument);
    }
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":0,"seconds":1,"hash":9,"check":"payload","mismatch_at":0})")),
                    std::invalid_argument);
    // -O: the omitted part of a total is at most the total.
    CHECK(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1,"hash":9,"omitted_bytes":5})")).omitted_bytes == 5);
    CHECK_THROWS_AS(tools::decode_receiver_report(blob(R"({"bytes":5,"seconds":1,"hash":9,"omitted_bytes":6})")),
                    std::invalid_argument);
    CHECK_THROWS_AS(
        tools::decode_sender_report(blob(R"({"bytes":5,"seconds":1,"retransmits":2,"hash":9,"omitted_retransmits":3})")),
        std::invalid_argument);
    CHECK_THROWS_AS(
        tools::decode_sender_report(blob(R"({"bytes":5,"seconds":1,"retransmits":2,"hash":9,"omitted_bytes":-1})")),
        std::invalid_argument);
}

TEST_CASE("connection: set_congestion_control swaps the controller after the handshake") {
    test::ConnectionPair cp;
    cp.client_cfg.cc = "reno";
    cp.server_cfg.cc = "reno";
    REQUIRE(cp.handshake());
    CHECK_THROWS_AS(cp.server->set_congestion_control("no-such-controller"), std::invalid_argument);
    CHECK(cp.server->stats(cp.now).cc_state == "slow_start");  // still reno
    cc::register_controller({"perf-session-fixed", "test", [](const cc::Params& p, const cc::Options&) {
                                 return std::make_unique<FixedWindow>(p.max_datagram_size);
                             }});
    cp.server->set_congestion_control("perf-session-fixed");
    CHECK(cp.server->stats(cp.now).cc_state == "fixed_for_test");
    CHECK(cp.server->stats(cp.now).cwnd == 20 * cp.server->max_datagram_size());
    // The server sends with the new controller: a transfer completes.
    const StreamId id = *cp.server->open_stream();
    std::vector<std::uint8_t> data(200000, 7);
    REQUIRE(cp.server->write(id, data, true) == data.size());
    std::vector<std::uint8_t> buf(65536);
    std::size_t got = 0;
    REQUIRE(cp.run_until([&] {
        while (std::size_t n = cp.client->read(id, buf)) got += n;
        return cp.client->stream_finished(id);
    }));
    CHECK(got == data.size());
    CHECK(cp.server->stats(cp.now).cc_state == "fixed_for_test");
}

TEST_CASE("perf session: a server opens no file a client names in its controller options") {
    using J = nlohmann::json;
    // In -R the server would run ndm with the client's model= path: /dev/zero
    // hung the server, any other path probes what exists there.
    for (const char* path : {"/dev/zero", "/etc/passwd", "/no/such/file"}) {
        CAPTURE(path);
        const std::string why = refusal(request([&](J& j) {
            j["cc"] = "ndm";
            j["cc_options"] = std::string("model=") + path;
            j["reverse"] = true;
        }));
        CHECK_MESSAGE(why.find("model= names a file") != std::string::npos, why);
        CHECK(why.find(path) == std::string::npos);  // nothing said about the path itself
    }
    // The built-in model is not a file: accepted in -R.
    CHECK(refusal(request([](J& j) {
              j["cc"] = "ndm";
              j["cc_options"] = "model=default,beta=0.8";
              j["reverse"] = true;
          })).empty());
    // Forward, the model is the client's own file: the server neither opens nor
    // refuses it (a path that exists nowhere on the server is fine).
    CHECK(refusal(request([](J& j) {
              j["cc"] = "ndm";
              j["cc_options"] = "model=/no/such/file";
          })).empty());
    // ndm-send refuses -R with a model file before it connects.
    tools::TestParams p;
    p.cc = "ndm";
    p.cc_options = "model=/no/such/file";
    p.reverse = true;
    CHECK_THROWS_WITH_AS(tools::validate(p), doctest::Contains("model=default"), std::invalid_argument);
}

TEST_CASE("perf session: -b RATE[/BURST] as iperf3 reads it, one-line errors") {
    CHECK(tools::parse_bitrate("20M").bits_per_second == 20'000'000);
    CHECK(tools::parse_bitrate("20M").burst == 0);
    CHECK(tools::parse_bitrate("1.5G/10").bits_per_second == 1'500'000'000);
    CHECK(tools::parse_bitrate("1.5G/10").burst == 10);
    CHECK(tools::parse_bitrate("500k").bits_per_second == 500'000);
    CHECK_THROWS_WITH(tools::parse_bitrate("0"), doctest::Contains("outside 1.."));
    CHECK_THROWS_WITH(tools::parse_bitrate("fast"), doctest::Contains("bad rate \"fast\""));
    CHECK_THROWS_WITH(tools::parse_bitrate("20M/0"), doctest::Contains("burst \"0\""));
    CHECK_THROWS_WITH(tools::parse_bitrate("20M/1001"), doctest::Contains("1..1000"));
    CHECK_THROWS_WITH(tools::parse_bitrate("20M/x"), doctest::Contains("burst"));
    CHECK_THROWS_WITH(tools::parse_bitrate("11T"), doctest::Contains("outside"));
}

TEST_CASE("perf session: a paced pump writes what the rate allows, no more (application-limited)") {
    test::ConnectionPair pair;
    REQUIRE(pair.handshake());
    Connection& c = *pair.client;
    const StreamId id = *c.open_stream();
    tools::PayloadPump pump(1);
    pump.pace(8'000'000, 0);  // 1 MB/s
    const Instant t0 = pair.now;
    pump.pump(c, id, t0);
    CHECK(pump.written() == 0);  // nothing is due at the first instant
    pump.pump(c, id, t0 + std::chrono::milliseconds(10));
    CHECK(pump.written() == 10'000);  // 10 ms at 1 MB/s
    pump.pump(c, id, t0 + std::chrono::milliseconds(10));
    CHECK(pump.written() == 10'000);  // ahead of the rate: waits
    tools::PayloadPump burst(1);  // a stream of its own: a pump's offsets are its stream's
    const StreamId burst_id = *c.open_stream();
    burst.pace(8'000'000, tools::kBlockSize);
    burst.pump(c, burst_id, t0);
    // 128 KiB at 1 MB/s: half of it is due after 65.5 ms.
    burst.pump(c, burst_id, t0 + std::chrono::milliseconds(65));
    CHECK(burst.written() == 0);  // less than half a burst behind: waits
    burst.pump(c, burst_id, t0 + std::chrono::milliseconds(66));
    CHECK(burst.written() == tools::kBlockSize);  // then one whole block at once
    burst.pump(c, burst_id, t0 + std::chrono::milliseconds(150));
    CHECK(burst.written() == tools::kBlockSize);  // ahead, or behind by less than half a block: nothing more
    burst.pump(c, burst_id, t0 + std::chrono::milliseconds(196));
    CHECK(burst.written() == tools::kBlockSize);
    burst.pump(c, burst_id, t0 + std::chrono::milliseconds(197));  // 1.5 blocks due
    CHECK(burst.written() == 2 * tools::kBlockSize);
}

TEST_CASE("perf session: -b's bound on holding a write short of a datagram") {
    using std::chrono::microseconds;
    CHECK(tools::write_coalescing(0, 1452) == Duration::zero());
    // Two 1452-byte datagrams at the rate: 23.2 ms at 1 Mbit/s, 2.32 ms at 10, 0.232 ms at 100.
    CHECK(std::chrono::duration_cast<microseconds>(tools::write_coalescing(1'000'000, 1452)).count() == 23232);
    CHECK(std::chrono::duration_cast<microseconds>(tools::write_coalescing(10'000'000, 1452)).count() == 2323);
    CHECK(std::chrono::duration_cast<microseconds>(tools::write_coalescing(100'000'000, 1452)).count() == 232);
    CHECK(tools::write_coalescing(100'000, 1452) == std::chrono::milliseconds(25));  // capped
}

TEST_CASE("perf session: --bidir, -w, --get-server-output and the server's RTTs round-trip, bounded") {
    tools::TestParams p;
    p.cc = "cubic";
    p.bidir = true;
    p.window = 64 * 1024;
    p.server_output = tools::TestParams::ServerOutput::json;
    const tools::TestParams q = tools::decode_test_params(tools::encode(p));
    CHECK(q.bidir);
    CHECK(q.window == 64 * 1024);
    CHECK(q.server_output == tools::TestParams::ServerOutput::json);
    auto with = [&](const char* key, nlohmann::json value) {
        const auto bytes = tools::encode(p);
        nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end());
        j[key] = std::move(value);
        const std::string s = j.dump();
        return std::vector<std::uint8_t>(s.begin(), s.end());
    };
    for (const auto& [key, bad] : std::vector<std::pair<const char*, nlohmann::json>>{
             {"window", 1024}, {"window", (std::uint64_t{1} << 30) + 1}, {"window", -1}, {"server_output", 3},
             {"bidir", "yes"}, {"reverse", true}}) {
        CAPTURE(key);
        CHECK_THROWS_AS(tools::decode_test_params(with(key, bad)), std::invalid_argument);
    }
    tools::SenderReport r;
    r.bytes = 5;
    r.path = tools::SenderPath{100, 200, 300, 4000};
    const tools::SenderReport back = tools::decode_sender_report(tools::encode(r));
    REQUIRE(back.path);
    CHECK(back.path->rtt_mean == 200);
    CHECK(back.path->max_cwnd == 4000);
    auto blob = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
    const std::string head = R"({"bytes":5,"seconds":1,"retransmits":0,"hash":9,)";
    for (const char* bad : {R"("rtt_min":300,"rtt_mean":200,"rtt_max":100,"max_cwnd":1)",
                            R"("rtt_min":1,"rtt_mean":2,"rtt_max":600000001,"max_cwnd":1)",
                            R"("rtt_min":-1,"rtt_mean":2,"rtt_max":3,"max_cwnd":1)", R"("rtt_min":1)"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(tools::decode_sender_report(blob(head + bad + "}")), std::invalid_argument);
    }
}
