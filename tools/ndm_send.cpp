// ndm-send: the sending half of an iperf3-style throughput test over ndm (the
// receiver is ndm-recv). The test parameters travel in the handshake's
// application params; the receiver's totals and stream hash come back on the
// test stream after our FIN, so the closing lines show both sides and whether
// the data arrived byte-exact. --emu/--profile impair this socket's path
// (egress = up, ingress = down), like netem on the sender's interface.
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cli.hpp"
#include "common/perf_session.hpp"
#include "common/units.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"

using namespace ndm;
using nlohmann::json;

namespace {

struct Options {
    std::string host;
    std::uint16_t port = 5201;
    double seconds = 10;
    std::string bytes;  // -n, iperf3 units
    std::string cc = "cubic";
    double interval = 1;
    std::string emu;
    std::size_t packet_size = 1452;
    bool json = false;
    std::uint64_t seed = 1;
    std::string io = "auto";
};

double secs(Instant a, Instant b) { return to_seconds(b - a); }
double rate(std::uint64_t bytes, double s) { return s > 0 ? bytes * 8.0 / s : 0; }

json sum_json(double b, double e, std::uint64_t bytes, std::optional<std::uint64_t> retr, bool sender) {
    json j = {{"start", b}, {"end", e}, {"seconds", e - b}, {"bytes", bytes}, {"bits_per_second", rate(bytes, e - b)}};
    if (retr) j["retransmits"] = *retr;
    j["sender"] = sender;
    return j;
}

// Everything after argument checking; throws std::runtime_error on a failed test.
int run(const Options& o, const tools::TestParams& params, const std::optional<emu::Profile>& profile) {
    EndpointConfig cfg;
    cfg.backend = parse_io_backend(o.io);
    cfg.connection.cc = o.cc;
    cfg.connection.max_datagram_size = o.packet_size;
    cfg.connection.seed = o.seed * 2 + 1;
    // Fail within seconds, not the library's defaults, when the server is
    // absent or disappears mid-test.
    cfg.connection.handshake_timeout = std::chrono::seconds(5);
    cfg.connection.idle_timeout = std::chrono::seconds(5);
    cfg.connection.application_params = tools::encode(params);
    if (profile) {
        cfg.egress_link = [p = *profile, s = o.seed] { return emu::make_link(p, emu::Direction::up, s); };
        cfg.ingress_link = [p = *profile, s = o.seed] { return emu::make_link(p, emu::Direction::down, s); };
    }
    Endpoint ep(cfg);
    const std::string profile_name = profile ? profile->name : "none";

    if (!o.json) std::cout << fmt::format("Connecting to host {}, port {}\n", o.host, o.port) << std::flush;
    const ConnectionHandle h = ep.connect(o.host, o.port);
    Connection* c = &tools::await_established(ep, h, std::chrono::seconds(6));
    const StreamId id = *c->open_stream();
    const std::size_t mds = c->max_datagram_size();
    if (!o.json) {
        std::cout << fmt::format("[  1] local {} connected to {} port {} ({})\n", ep.local_address(), o.host, o.port,
                                 to_string(ep.backend()))
                  << fmt::format("[  1] controller {}, profile {}, packet size {} bytes\n", o.cc, profile_name, mds)
                  << "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
                  << std::flush;
    }

    tools::PayloadPump pump(o.seed, params.bytes ? params.bytes : std::numeric_limits<std::uint64_t>::max());
    json intervals = json::array();
    const Instant start = steady_now();
    const Instant end = params.bytes ? kNever : start + from_seconds(params.seconds);
    Instant sample_begin = start, next_sample = start + from_seconds(params.interval);
    std::uint64_t prev_sent = 0, prev_retx = 0;
    auto sample = [&](Instant now) {
        const Connection* cc = ep.find(h);
        if (!cc) return;
        const ConnectionStats st = cc->stats(now);
        const double b = secs(start, sample_begin), e = secs(start, now);
        const std::uint64_t bytes = st.stream_bytes_sent - prev_sent, retr = st.packets_retransmitted - prev_retx;
        if (o.json) {
            json s = sum_json(b, e, bytes, retr, true);
            json stream = s;
            stream["socket"] = 1;
            stream["snd_cwnd"] = st.cwnd;
            stream["rtt"] = std::chrono::duration_cast<std::chrono::microseconds>(st.smoothed_rtt).count();
            intervals.push_back({{"streams", json::array({stream})}, {"sum", s}});
        } else {
            std::cout << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}  {:>12}\n", b, e,
                                     tools::format_bytes(bytes), tools::format_bitrate(rate(bytes, e - b)), retr,
                                     tools::format_cwnd(st.cwnd))
                      << std::flush;
        }
        prev_sent = st.stream_bytes_sent;
        prev_retx = st.packets_retransmitted;
        sample_begin = now;
    };
    auto fail_reason = [&] {
        const CloseInfo* ci = ep.close_info(h);
        return ci ? ci->reason : std::string("the connection closed");
    };

    // Send phase: -t sends for a time; -n until the receiver acknowledged every byte.
    for (Instant now = steady_now(); now < end; now = steady_now()) {
        c = ep.connection(h);
        if (!c || c->state() != ConnectionState::established)
            throw std::runtime_error("connection lost during the test: " + fail_reason());
        if (params.bytes && pump.done() && c->stats(now).stream_bytes_acked >= params.bytes) break;
        pump.pump(*c, id, now);
        ep.run_once(std::min({next_sample, end, now + std::chrono::milliseconds(2)}));
        now = steady_now();
        if (now >= next_sample) {
            sample(now);
            next_sample += from_seconds(params.interval);
        }
    }
    if (secs(sample_begin, steady_now()) > params.interval / 10) sample(steady_now());
    const double sender_seconds = secs(start, steady_now());
    c = ep.connection(h);
    if (!c || c->state() != ConnectionState::established)
        throw std::runtime_error("connection lost during the test: " + fail_reason());
    if (!params.bytes) c->finish(id);

    // The receiver answers our FIN with its report on the same stream.
    std::vector<std::uint8_t> report_bytes, buf(4096);
    const bool got = ep.run_until(
        [&] {
            Connection* cc = ep.connection(h);
            if (!cc || cc->is_closed()) return true;
            while (std::size_t n = cc->read(id, buf)) report_bytes.insert(report_bytes.end(), buf.begin(), buf.begin() + n);
            return cc->stream_finished(id);
        },
        std::chrono::seconds(30));
    c = ep.connection(h);
    if (!got || !c || !c->stream_finished(id))
        throw std::runtime_error(got ? "connection lost before the receiver's report: " + fail_reason()
                                     : "no report from the receiver within 30 s after the send phase");
    const tools::ReceiverReport rr = tools::decode_receiver_report(report_bytes);
    const ConnectionStats st = c->stats(steady_now());
    c->close(0, "test complete", steady_now());
    ep.run_until([&] { return ep.find(h) == nullptr || ep.find(h)->is_closed(); }, std::chrono::milliseconds(300));

    const bool exact = rr.bytes == pump.written() && rr.hash == pump.digest();
    std::string error;
    if (rr.bytes != pump.written())
        error = fmt::format("the receiver read {} bytes of {} sent", rr.bytes, pump.written());
    else if (!exact)
        error = "the received data differs from what was sent (hash mismatch)";

    if (o.json) {
        json j;
        j["start"] = {{"connecting_to", {{"host", o.host}, {"port", o.port}}},
                      {"connected", json::array({{{"socket", 1}, {"local_host", ep.local_address()},
                                                  {"remote_host", o.host}, {"remote_port", o.port}}})},
                      {"version", "ndm-send"},
                      {"test_start",
                       {{"protocol", "NDM"}, {"num_streams", 1}, {"blksize", mds}, {"omit", 0},
                        {"duration", params.seconds}, {"bytes", params.bytes}, {"reverse", 0}}},
                      {"congestion_control", o.cc},
                      {"profile", profile_name},
                      {"io", to_string(ep.backend())}};
        j["intervals"] = intervals;
        json sent = sum_json(0, sender_seconds, st.stream_bytes_sent, st.packets_retransmitted, true);
        json received = sum_json(0, rr.seconds, rr.bytes, std::nullopt, true);
        j["end"] = {{"streams", json::array({{{"sender", sent}, {"receiver", received}}})},
                    {"sum_sent", sent},
                    {"sum_received", received},
                    {"sender_congestion", o.cc},
                    {"byte_exact", exact}};
        if (!error.empty()) j["error"] = error;
        std::cout << j.dump(2) << '\n';
    } else {
        std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
                  << "[ ID] Interval           Transfer     Bitrate         Retr\n"
                  << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}             sender\n", 0.0,
                                 sender_seconds, tools::format_bytes(st.stream_bytes_sent),
                                 tools::format_bitrate(rate(st.stream_bytes_sent, sender_seconds)),
                                 st.packets_retransmitted)
                  << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}                   receiver{}\n", 0.0,
                                 rr.seconds, tools::format_bytes(rr.bytes), tools::format_bitrate(rate(rr.bytes, rr.seconds)),
                                 exact ? "  (byte-exact)" : "")
                  << "\nndm-send done.\n";
    }
    if (!error.empty()) {
        std::cerr << "ndm-send: " << error << '\n';
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    std::string profile_name;
    CLI::App app{
        "ndm-send: the sending side of an iperf3-style throughput test over ndm (the receiver is ndm-recv).\n"
        "Prints per-interval Transfer/Bitrate/Retr/Cwnd rows and the closing sender and receiver lines; the\n"
        "receiver's totals and a hash of what it read come back over the connection (byte-exactness check).",
        "ndm-send"};
    app.add_option("-c,--client", o.host, "receiver address (numeric, or localhost)")->required();
    app.add_option("-p,--port", o.port, "receiver UDP port")->capture_default_str();
    auto* t = app.add_option("-t,--time", o.seconds, "seconds to send")->capture_default_str()->check(CLI::Range(0.1, 86400.0));
    auto* n = app.add_option("-n,--bytes", o.bytes, "bytes to send instead of a time (K/M/G suffixes, binary)");
    t->excludes(n);
    app.add_option("-C,--congestion", o.cc, "congestion controller: reno, cubic, ndm, ndm-lkm or a registered name")
        ->capture_default_str();
    app.add_option("-i,--interval", o.interval, "seconds between interval reports")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 60.0));
    auto* e = app.add_option("--emu", o.emu,
                             "impair this socket's path with an emulator spec, e.g. \"delay=50ms,jitter=20ms,loss=5%\" "
                             "(egress = up, ingress = down)");
    auto* p = app.add_option("--profile", profile_name, "impair with an emulator preset (ndm-compare --list-profiles)");
    e->excludes(p);
    app.add_option("-l,--length", o.packet_size, "max datagram size in bytes (1200..65507)")
        ->capture_default_str()
        ->check(CLI::Range(kMinDatagramSize, kMaxDatagramSize));
    app.add_flag("-J,--json", o.json, "print one JSON document (iperf3's start/intervals/end shape) instead of text");
    app.add_option("--seed", o.seed, "payload, connection ID and emulator seed")->capture_default_str();
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& ex) {
        return ndm::tools::exit_on_parse_error(app, ex, "ndm-send");
    }

    tools::TestParams params;
    std::optional<emu::Profile> profile;
    try {  // bad input: one line, exit code 2, before any packet is sent
        (void)parse_io_backend(o.io);
        cc::Params cp;
        cp.max_datagram_size = o.packet_size;
        (void)cc::make(o.cc, cp);
        if (!o.emu.empty()) profile = emu::parse_profile(o.emu);
        if (!profile_name.empty()) profile = emu::parse_profile(profile_name);
        params.cc = o.cc;
        params.packet_size = o.packet_size;
        params.interval = o.interval;
        params.seed = o.seed;
        if (!o.bytes.empty()) {
            params.bytes = tools::parse_size(o.bytes);
            if (params.bytes == 0) throw std::invalid_argument("-n must be at least 1 byte");
            params.seconds = 0;
        } else {
            params.seconds = o.seconds;
        }
    } catch (const std::exception& ex) {
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 2;
    }
    try {
        return run(o, params, profile);
    } catch (const std::exception& ex) {  // connection failures, EndpointError
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 1;
    }
}
