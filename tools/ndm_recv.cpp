// ndm-recv: the receiving half of an iperf3-style throughput test over ndm
// (the sender is ndm-send). Accepts connections, takes the test parameters
// from the client's handshake, prints per-interval receive rows, and at the
// sender's FIN sends its totals and the stream hash back on the same stream so
// the sender can print the receiver line and check byte-exactness.
#include <csignal>

#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cli.hpp"
#include "common/perf_session.hpp"
#include "common/units.hpp"
#include "ndm/endpoint.hpp"
#include "sim/stream_hash.hpp"

using namespace ndm;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

double secs(Instant a, Instant b) { return to_seconds(b - a); }

struct Test {
    ConnectionHandle h = 0;
    tools::TestParams params;
    std::string peer;  // for the header line
    Instant start{};
    Instant last_byte{};
    std::optional<StreamId> stream;
    sim::StreamHash hash;
    std::uint64_t bytes = 0;
    std::uint64_t interval_bytes = 0;
    Instant interval_begin{};
    Instant next_report{};
    bool reported = false;  // our report went back after the sender's FIN
    nlohmann::json intervals = nlohmann::json::array();
};

struct Server {
    bool json = false;
    Endpoint& ep;
    std::optional<Test> test;
    int finished = 0;

    void row(double b, double e, std::uint64_t bytes, const char* tail = "") const {
        if (json) return;
        const double dt = e - b;
        std::cout << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}{}\n", b, e, tools::format_bytes(bytes),
                                 tools::format_bitrate(dt > 0 ? bytes * 8.0 / dt : 0), tail)
                  << std::flush;
    }

    void start(ConnectionHandle h) {
        Connection* c = ep.connection(h);
        if (!c) return;
        if (test) {  // one test at a time, as iperf3
            c->close(1, "the server is busy running another test", steady_now());
            return;
        }
        tools::TestParams p;
        try {
            p = tools::decode_test_params(c->peer_application_params());
        } catch (const std::exception& e) {
            c->close(1, e.what(), steady_now());
            std::cerr << "ndm-recv: rejected a connection: " << e.what() << '\n';
            return;
        }
        Test t;
        t.h = h;
        t.params = p;
        t.start = t.interval_begin = t.last_byte = steady_now();
        t.next_report = t.start + from_seconds(p.interval);
        test = std::move(t);
        if (!json) {
            std::cout << "-----------------------------------------------------------\n"
                      << fmt::format("Accepted connection (controller {}, {} byte packets, {})\n", p.cc, p.packet_size,
                                     p.bytes ? tools::format_bytes(p.bytes) : fmt::format("{:g} s", p.seconds))
                      << "[ ID] Interval           Transfer     Bitrate\n"
                      << std::flush;
        }
    }

    void interval(Instant now) {
        Test& t = *test;
        const double b = secs(t.start, t.interval_begin), e = secs(t.start, now);
        row(b, e, t.interval_bytes);
        const double dt = e - b;
        t.intervals.push_back({{"streams", nlohmann::json::array()},
                               {"sum",
                                {{"start", b},
                                 {"end", e},
                                 {"seconds", dt},
                                 {"bytes", t.interval_bytes},
                                 {"bits_per_second", dt > 0 ? t.interval_bytes * 8.0 / dt : 0},
                                 {"sender", false}}}});
        t.interval_bytes = 0;
        t.interval_begin = now;
    }

    void readable(ConnectionHandle h, StreamId id) {
        if (!test || test->h != h) return;
        Connection* c = ep.connection(h);
        if (!c) return;
        Test& t = *test;
        t.stream = id;
        std::vector<std::uint8_t> buf(tools::PayloadPump::kChunk);
        while (std::size_t n = c->read(id, buf)) {
            t.hash.update({buf.data(), n});
            t.bytes += n;
            t.interval_bytes += n;
            t.last_byte = steady_now();
        }
        if (c->stream_finished(id) && !t.reported) {
            // The partial last interval, then the totals back to the sender.
            if (secs(t.interval_begin, t.last_byte) > 0.01) interval(t.last_byte);
            tools::ReceiverReport r{t.bytes, secs(t.start, t.last_byte), t.hash.digest()};
            auto blob = tools::encode(r);
            c->write(id, blob, true);
            t.reported = true;
        }
    }

    // The client closes once it has the report; anything else is a failure.
    void closed(ConnectionHandle h, const CloseInfo& info) {
        if (!test || test->h != h) return;
        Test& t = *test;
        const double dur = secs(t.start, t.last_byte);
        const double rate = dur > 0 ? t.bytes * 8.0 / dur : 0;
        const bool ok = t.reported;
        if (json) {
            nlohmann::json j;
            j["start"] = {{"test_start",
                           {{"protocol", "NDM"},
                            {"num_streams", 1},
                            {"blksize", t.params.packet_size},
                            {"duration", t.params.seconds},
                            {"bytes", t.params.bytes},
                            {"reverse", 0}}},
                          {"sender_congestion", t.params.cc}};
            j["intervals"] = t.intervals;
            j["end"] = {{"sum_received",
                         {{"start", 0}, {"end", dur}, {"seconds", dur}, {"bytes", t.bytes}, {"bits_per_second", rate},
                          {"sender", false}}}};
            if (!ok) j["error"] = "client disconnected: " + info.reason;
            std::cout << j.dump(2) << '\n' << std::flush;
        } else {
            std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
            row(0, dur, t.bytes, "                  receiver");
            if (!ok) std::cout << "ndm-recv: the test ended early: " << info.reason << '\n';
            std::cout << std::flush;
        }
        if (!ok) std::cerr << "ndm-recv: client disconnected before the end of the test: " << info.reason << '\n';
        test.reset();
        ++finished;
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::uint16_t port = 5201;
    std::string bind = "::";
    bool one_off = false, json = false;
    std::string io = "auto";
    CLI::App app{
        "ndm-recv: the receiving side of an iperf3-style throughput test over ndm (the sender is ndm-send).\n"
        "Serves one test at a time; the sender's parameters arrive in the handshake and the receiver's totals\n"
        "go back to the sender at the end of each test.",
        "ndm-recv"};
    app.add_option("-p,--port", port, "UDP port to listen on")->capture_default_str();
    app.add_option("-B,--bind", bind, "numeric address to bind (\"::\" = dual-stack, all interfaces)")->capture_default_str();
    app.add_flag("-1,--one-off", one_off, "exit after one test");
    app.add_flag("-J,--json", json, "print one JSON document per test instead of text");
    app.add_option("--io", io, "socket backend: auto, uring or epoll")->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return ndm::tools::exit_on_parse_error(app, e, "ndm-recv");
    }

    try {
        EndpointConfig cfg;
        cfg.bind_address = bind;
        cfg.port = port;
        cfg.backend = parse_io_backend(io);
        cfg.accept_connections = true;
        // The client's -l decides: the effective size is the smaller of both sides'.
        cfg.connection.max_datagram_size = kMaxDatagramSize;
        cfg.connection.idle_timeout = std::chrono::seconds(5);
        Endpoint ep(cfg);

        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        if (!json) {
            std::cout << "-----------------------------------------------------------\n"
                      << fmt::format("Server listening on {} (UDP, {})\n", ep.local_address(), to_string(ep.backend()))
                      << "-----------------------------------------------------------\n"
                      << std::flush;
        }

        Server s{json, ep, std::nullopt, 0};
        ep.on_event([&](ConnectionHandle h, const Event& ev) {
            if (std::holds_alternative<event::Established>(ev)) s.start(h);
            else if (const auto* r = std::get_if<event::StreamReadable>(&ev)) s.readable(h, r->id);
            else if (const auto* c = std::get_if<event::Closed>(&ev)) s.closed(h, c->info);
        });
        while (!g_stop && !(one_off && s.finished > 0)) {
            Instant now = steady_now();
            Instant deadline = now + std::chrono::milliseconds(100);  // bounds the reaction to Ctrl-C
            if (s.test && !s.test->reported) deadline = std::min(deadline, s.test->next_report);
            ep.run_once(deadline);
            while (ep.next_accepted()) {}  // handled through Established events
            now = steady_now();
            if (s.test && !s.test->reported && now >= s.test->next_report) {
                s.interval(now);
                s.test->next_report += from_seconds(s.test->params.interval);
            }
        }
        if (g_stop && s.test) {
            if (Connection* c = ep.connection(s.test->h)) c->close(0, "the server was interrupted", steady_now());
            ep.run_until([&] { return ep.connection_count() == 0; }, std::chrono::milliseconds(300));
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "ndm-recv: " << e.what() << '\n';
        return 2;
    }
}
