// ndm-recv: the server of an iperf3-style throughput test over ndm (the client
// is ndm-send). Accepts connections, takes the test parameters from the
// client's handshake and groups the connections of one test (-P) by its test
// id. Forward: reads, prints per-interval receive rows, and at the client's
// FIN sends its totals and the stream hash back on the same stream. Reverse
// (-R): sends with the client's controller for the test time, then reports
// its totals and the hash on a second stream once all data is acknowledged.
#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <csignal>

#include <iostream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cc_plugins.hpp"
#include "common/cli.hpp"
#include "common/idle_timeout.hpp"
#include "common/cpu_meter.hpp"
#include "common/daemon.hpp"
#include "common/logging.hpp"
#include "common/output.hpp"
#include "common/iperf_output.hpp"
#include "common/perf_session.hpp"
#include "common/provenance.hpp"
#include "common/printable.hpp"
#include "common/loss_detection_flag.hpp"
#include "common/tls_flags.hpp"
#include "common/units.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/qlog.hpp"
#include "ndm/workload.hpp"

using namespace ndm;
using nlohmann::json;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

using tools::id_label;
using tools::rate;
using tools::secs;
using tools::sum_json;

// The client's send phase a forward -t test's drain is measured from: -t
// seconds from its start (the sender stops writing then). None in reverse mode
// (we are the sender) and for -n (the sender's phase ends with its last ACK).
std::optional<double> drain_reference(const tools::TestParams& p) {
    if (p.reverse || p.bytes) return std::nullopt;
    return p.seconds;
}

// One connection of a test.
struct Flow {
    ConnectionHandle h = 0;
    tools::TestParams params;
    Instant start{};
    // Forward: what we read.
    workload::StreamHash hash;
    std::uint64_t bytes = 0;
    Instant last_byte{};
    // Reverse: what we send.
    StreamId data = 0;
    std::unique_ptr<tools::PayloadPump> pump;
    Instant send_end = kNever;
    bool fin_sent = false;
    double sent_seconds = 0;
    std::uint64_t sent_bytes = 0, retransmits = 0;
    bool reported = false;  // our report went out (forward: after the client's FIN)
    bool closed = false;
    std::string close_reason;
    std::uint64_t prev_bytes = 0, prev_retx = 0;  // at the last interval boundary
    // At the end of the -O period: forward what we had read, reverse what we had sent.
    std::uint64_t omitted_bytes = 0, omit_sent = 0, omit_retx = 0;

    [[nodiscard]] bool done() const { return params.reverse ? fin_sent : reported; }
};

struct Test {
    std::uint64_t id = 0;
    tools::TestParams params;  // of the first connection (shared settings)
    Instant start{};
    std::chrono::system_clock::time_point wall_start{};  // for the provenance record
    Instant interval_begin{};
    Instant next_report{};
    Instant join_deadline = kNever;  // every -P connection must have arrived by then
    bool intervals_done = false;
    bool omitting = false;  // within the client's -O seconds
    Instant omit_end{};
    std::vector<Flow> flows;
    json intervals = json::array();
    tools::CpuMeter cpu;  // reported to the client, as iperf3's remote CPU

    Flow* find(ConnectionHandle h) {
        for (Flow& f : flows)
            if (f.h == h) return &f;
        return nullptr;
    }
};

struct Server {
    bool json_out = false;
    std::string title;  // -T: a key of each -J document
    std::string own_cc;  // our connections' controller: the receiver's in a forward test
    Endpoint& ep;
    std::optional<Test> test;
    int finished = 0;
    Duration join_timeout = std::chrono::seconds(5);  // main() sets the connections' idle timeout

    // A new connection joins the test it names, or starts one. Everything that
    // can refuse it (parameters, a busy server, its stream) is checked before
    // any test state exists, so a refused or dying connection leaves nothing behind.
    void start(ConnectionHandle h) {
        Connection* c = ep.connection(h);
        if (!c || c->state() != ConnectionState::established) return;  // already closing: its Closed event follows
        const Instant now = steady_now();
        tools::TestParams p;
        try {
            p = tools::decode_test_params(c->peer_application_params());
        } catch (const std::exception& e) {
            c->close(1, e.what(), now);
            std::cerr << "ndm-recv: rejected a connection: " << tools::printable(e.what()) << '\n';
            return;
        }
        if (test && test->id != p.test_id) {  // one test at a time, as iperf3
            c->close(1, "the server is busy running another test", now);
            return;
        }
        if (test) {
            for (const Flow& f : test->flows)
                if (f.params.index == p.index) {
                    c->close(1, "duplicate connection index in the test", now);
                    return;
                }
        }
        Flow f;
        f.h = h;
        f.params = p;
        f.start = f.last_byte = now;
        if (p.reverse) {
            try {
                c->set_congestion_control(p.cc, p.cc_options);  // the sender's controller runs here
            } catch (const std::exception& e) {
                c->close(1, e.what(), now);
                std::cerr << "ndm-recv: rejected a connection: " << tools::printable(e.what()) << '\n';
                return;
            }
            const auto id = c->open_stream();
            if (!id) {
                c->close(1, "no stream available", now);
                return;
            }
            f.data = *id;
            f.pump = std::make_unique<tools::PayloadPump>(p.seed, p.bytes ? p.bytes : std::numeric_limits<std::uint64_t>::max());
            f.pump->pace(p.bitrate, p.burst * tools::kBlockSize);  // the client's -b
            if (!p.bytes) f.send_end = now + from_seconds(p.omit + p.seconds);
        }
        if (!test) begin_test(p, now);
        // Rows in the client's connection order, whatever the handshakes' order.
        auto at = std::find_if(test->flows.begin(), test->flows.end(),
                               [&](const Flow& g) { return g.params.index > p.index; });
        test->flows.insert(at, std::move(f));
    }

    void begin_test(const tools::TestParams& p, Instant now) {
        Test t;
        t.id = p.test_id;
        t.params = p;
        t.start = t.interval_begin = now;
        t.wall_start = std::chrono::system_clock::now();
        t.next_report = now + from_seconds(p.interval);
        t.omitting = p.omit > 0;
        t.omit_end = now + from_seconds(p.omit);
        // All -P connections arrive within one idle timeout, or the test ends.
        t.join_deadline = now + join_timeout;
        test = std::move(t);
        if (!json_out) {
            std::cout << "-----------------------------------------------------------\n"
                      << fmt::format("Accepted connection (controller {}, {} byte packets, {}{}{})\n", p.cc,
                                     p.packet_size,
                                     p.bytes ? tools::format_bytes(p.bytes) : fmt::format("{:g} s", p.seconds),
                                     p.streams > 1 ? fmt::format(", {} parallel connections", p.streams) : "",
                                     p.reverse ? ", reverse mode: sending" : "")
                      << (p.reverse ? "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
                                    : "[ ID] Interval           Transfer     Bitrate\n")
                      << std::flush;
        }
    }

    // A test missing some of its connections past the join deadline ends:
    // the connections it has are closed with the reason.
    void expire(Instant now) {
        if (!test || now < test->join_deadline || test->flows.size() >= test->params.streams) return;
        const std::string why = fmt::format("only {} of {} connections of the test arrived within {:g} s",
                                            test->flows.size(), test->params.streams, to_seconds(join_timeout));
        test->join_deadline = kNever;
        for (Flow& f : test->flows) {
            if (f.closed) continue;
            if (Connection* c = ep.connection(f.h)) c->close(1, why, now);
            f.closed = true;
            f.close_reason = why;
        }
        finish();
    }

    // Reverse: keep the streams topped up; FIN at the end; the report once all is acknowledged.
    void pump(Instant now) {
        if (!test) return;
        for (Flow& f : test->flows) {
            if (!f.params.reverse || f.reported || f.closed) continue;
            Connection* c = ep.connection(f.h);
            if (!c || c->state() != ConnectionState::established) continue;
            if (!f.fin_sent) {
                if (now >= f.send_end) {
                    c->finish(f.data);
                } else {
                    f.pump->pump(*c, f.data, now);
                }
                if (now >= f.send_end || f.pump->done()) {
                    f.fin_sent = true;
                    f.sent_seconds = secs(f.start, now);
                }
            }
            const ConnectionStats st = c->stats(now);
            if (f.fin_sent && st.stream_bytes_acked >= f.pump->written()) {
                const auto rid = c->open_stream();
                if (!rid) {
                    c->close(1, "no stream for the report", now);
                    continue;
                }
                f.sent_bytes = st.stream_bytes_sent - std::min(f.omit_sent, st.stream_bytes_sent);
                f.retransmits = st.packets_retransmitted - std::min(f.omit_retx, st.packets_retransmitted);
                tools::SenderReport r;
                r.bytes = f.pump->written();
                r.seconds = f.sent_seconds;
                r.retransmits = st.packets_retransmitted;
                r.hash = f.pump->digest();
                const tools::CpuPercent cpu = test->cpu.percent();
                r.cpu = {cpu.user, cpu.system};
                r.omitted_bytes = std::min(f.omit_sent, r.bytes);
                r.omitted_retransmits = std::min(f.omit_retx, r.retransmits);
                c->write(*rid, tools::encode(r), true);
                f.reported = true;
            }
        }
    }

    [[nodiscard]] bool sending() const {
        if (!test) return false;
        for (const Flow& f : test->flows)
            if (f.params.reverse && !f.reported && !f.closed) return true;
        return false;
    }

    void interval(Instant now) {
        Test& t = *test;
        const bool rev = t.params.reverse;
        const double b = secs(t.start, t.interval_begin), e = secs(t.start, now);
        json streams = json::array();
        std::uint64_t sum_bytes = 0, sum_retr = 0;
        for (Flow& f : t.flows) {
            std::uint64_t bytes = 0, retr = 0, cwnd = 0;
            if (!rev) {
                bytes = f.bytes - f.prev_bytes;
                f.prev_bytes = f.bytes;
            } else if (const Connection* c = ep.find(f.h)) {
                const ConnectionStats st = c->stats(now);
                bytes = st.stream_bytes_sent - f.prev_bytes;
                retr = st.packets_retransmitted - f.prev_retx;
                cwnd = st.cwnd;
                f.prev_bytes = st.stream_bytes_sent;
                f.prev_retx = st.packets_retransmitted;
            }
            sum_bytes += bytes;
            sum_retr += retr;
            json s = sum_json(b, e, bytes, rev ? std::optional(retr) : std::nullopt, rev);
            s["socket"] = f.params.index + 1;
            s["omitted"] = t.omitting;
            if (rev) s["snd_cwnd"] = cwnd;
            streams.push_back(s);
            if (!json_out) {
                std::cout << fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}", id_label(f.params.index), b, e,
                                         tools::format_bytes(bytes), tools::format_bitrate(rate(bytes, e - b)))
                          << (rev ? fmt::format("  {:>4}  {:>12}", retr, tools::format_cwnd(cwnd)) : "")
                          << (t.omitting ? "  (omitted)" : "") << '\n';
            }
        }
        json sum = sum_json(b, e, sum_bytes, rev ? std::optional(sum_retr) : std::nullopt, rev);
        sum["omitted"] = t.omitting;
        t.intervals.push_back({{"streams", streams}, {"sum", sum}});
        if (!json_out && t.params.streams > 1) {
            std::cout << fmt::format("[SUM] {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}", b, e, tools::format_bytes(sum_bytes),
                                     tools::format_bitrate(rate(sum_bytes, e - b)))
                      << (rev ? fmt::format("  {:>4}", sum_retr) : "") << '\n'
                      << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
        }
        std::cout << std::flush;
        t.interval_begin = now;
    }

    // The end of the client's -O period: its rows were marked; the clock and
    // the totals start again (forward: the report leaves the omitted bytes out).
    void end_omit(Instant now) {
        Test& t = *test;
        interval(now);
        t.omitting = false;
        for (Flow& f : t.flows) {
            f.omitted_bytes = f.bytes;
            if (const Connection* c = ep.find(f.h)) {
                const ConnectionStats st = c->stats(now);
                f.omit_sent = st.stream_bytes_sent;
                f.omit_retx = st.packets_retransmitted;
            }
            f.start = now;
        }
        t.start = t.interval_begin = now;
        t.next_report = now + from_seconds(t.params.interval);
    }

    // Interval rows until every flow is done, then the partial last interval.
    void tick(Instant now) {
        expire(now);
        if (!test || test->intervals_done) return;
        Test& t = *test;
        if (t.omitting && now >= t.omit_end) end_omit(now);
        bool all_done = static_cast<unsigned>(t.flows.size()) == t.params.streams;
        Instant last = t.interval_begin;
        for (const Flow& f : t.flows) {
            all_done = all_done && (f.done() || f.closed);
            last = std::max(last, f.params.reverse ? f.start + from_seconds(f.sent_seconds) : f.last_byte);
        }
        if (all_done) {
            if (secs(t.interval_begin, last) > 0.01) interval(last);
            t.intervals_done = true;
        } else if (now >= t.next_report) {
            interval(now);
            t.next_report += from_seconds(t.params.interval);
        }
    }

    void readable(ConnectionHandle h, StreamId id) {
        if (!test) return;
        Flow* f = test->find(h);
        Connection* c = ep.connection(h);
        if (!f || !c) return;
        tools::drain(*c, id, [&](std::span<const std::uint8_t> data) {
            if (f->params.reverse) return;  // nothing is expected from the client
            f->hash.update(data);
            f->bytes += data.size();
            f->last_byte = steady_now();
        });
        if (!f->params.reverse && c->stream_finished(id) && !f->reported) {
            tools::ReceiverReport r;
            r.bytes = f->bytes;
            r.seconds = std::max(0.0, secs(f->start, f->last_byte));
            r.hash = f->hash.digest();
            r.omitted_bytes = f->omitted_bytes;
            const tools::CpuPercent cpu = test->cpu.percent();
            r.cpu = {cpu.user, cpu.system};
            r.cc = own_cc;
            c->write(id, tools::encode(r), true);
            f->reported = true;
            tick(steady_now());
        }
    }

    // The client closes once it has the reports; anything else is a failure.
    void closed(ConnectionHandle h, const CloseInfo& info) {
        if (!test) return;
        Flow* f = test->find(h);
        if (!f) return;
        f->closed = true;
        f->close_reason = tools::printable(info.reason);  // the peer's words, shown escaped
        for (const Flow& g : test->flows)
            if (!g.closed) return;
        finish();
    }

    void finish() {
        Test& t = *test;
        tick(steady_now());
        const bool rev = t.params.reverse;
        json streams = json::array();
        std::uint64_t sum_bytes = 0, sum_retr = 0;
        double sum_s = 0;
        std::string failure;
        // The receiver of a -t test shows its drain after the client's send
        // phase (-t seconds from its start), as ndm-send's receiver line does.
        const std::optional<double> send_phase = drain_reference(t.params);
        for (const Flow& f : t.flows) {
            const double s = rev ? f.sent_seconds : std::max(0.0, secs(f.start, f.last_byte));
            const std::uint64_t bytes = rev ? f.sent_bytes : f.bytes - f.omitted_bytes;
            sum_bytes += bytes;
            sum_retr += f.retransmits;
            sum_s = std::max(sum_s, s);
            json j = sum_json(0, s, bytes, rev ? std::optional(f.retransmits) : std::nullopt, rev);
            j["socket"] = f.params.index + 1;
            if (send_phase) j["drain_seconds"] = tools::drain_seconds(*send_phase, s);
            streams.push_back({{rev ? "sender" : "receiver", j}});
            if (!f.reported && failure.empty()) failure = f.close_reason;
        }
        if (json_out) {
            json j;
            j["provenance"] = tools::provenance_json(t.wall_start);
            j["start"] = {{"test_start",
                           {{"protocol", "NDM"},
                            {"num_streams", t.params.streams},
                            {"blksize", t.params.packet_size},
                            {"duration", t.params.seconds},
                            {"omit", t.params.omit},
                            {"bytes", t.params.bytes},
                            {"reverse", rev ? 1 : 0}}},
                          {"sender_congestion", t.params.cc}};
            j["intervals"] = t.intervals;
            json sum = sum_json(0, sum_s, sum_bytes, rev ? std::optional(sum_retr) : std::nullopt, rev);
            if (send_phase) sum["drain_seconds"] = tools::drain_seconds(*send_phase, sum_s);
            j["end"] = {{"streams", streams}, {rev ? "sum_sent" : "sum_received", sum}};
            if (!failure.empty()) j["error"] = "client disconnected: " + failure;
            if (!title.empty()) j["title"] = title;
            std::cout << j.dump(2) << '\n';
        } else {
            auto line = [&](const std::string& id, double s, std::uint64_t bytes, std::uint64_t retr) {
                std::cout << fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}", id, 0.0, s, tools::format_bytes(bytes),
                                         tools::format_bitrate(rate(bytes, s)))
                          << (rev ? fmt::format("  {:>4}             sender\n", retr)
                                  : "                  receiver" +
                                        (send_phase ? "  (" + tools::drain_text(*send_phase, s) + ")" : "") + "\n");
            };
            std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
            for (const Flow& f : t.flows)
                line(id_label(f.params.index), rev ? f.sent_seconds : std::max(0.0, secs(f.start, f.last_byte)),
                     rev ? f.sent_bytes : f.bytes - f.omitted_bytes, f.retransmits);
            if (t.flows.size() > 1) line("[SUM]", sum_s, sum_bytes, sum_retr);
            if (!failure.empty()) std::cout << "ndm-recv: the test ended early: " << failure << '\n';
        }
        std::cout << std::flush;
        if (!failure.empty()) std::cerr << "ndm-recv: client disconnected before the end of the test: " << failure << '\n';
        test.reset();
        ++finished;
    }
};

// Once the last connection of a burst is gone, hands the heap's free pages
// back to the kernel. A -P 128 test frees several MB of buffers that glibc
// otherwise keeps, fragmented, for the life of the process: a long-running
// server's RSS would creep with every test although nothing is live
// (bench/load_check.sh: 26 -> 43 MB over 10 000 connections, 19 MB after a trim).
void release_memory_when_idle(const Endpoint& ep, bool& released) {
    if (ep.connection_count() > 0) {
        released = false;
    } else if (!released) {
#ifdef __GLIBC__
        malloc_trim(0);
#endif
        released = true;
    }
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    std::uint16_t port = 5201;
    std::string bind = "::";
    bool one_off = false, json_out = false;
    std::string io = "auto";
    std::string qlog;
    double idle_timeout = ndm::tools::kDefaultIdleTimeoutSeconds;
    CLI::App app{
        "ndm-recv: the server of an iperf3-style throughput test over ndm (the client is ndm-send).\n"
        "Serves one test (of one or more parallel connections) at a time; the client's parameters arrive in the\n"
        "handshake and this side's totals go back to the client at the end of each test. Receives, or sends\n"
        "when the client asks for reverse mode (-R). The closing receiver line of a -t test shows how long\n"
        "after the client's send phase the last byte arrived (the drain; drain_seconds in -J).",
        "ndm-recv"};
    ndm::tools::ServerTlsFlags tls_flags;
    ndm::tools::OutputFlags output_flags;
    bool no_gso = false, no_ecn = false, ipv4 = false, ipv6 = false, daemon = false;
    std::string retry = "auto", pidfile;
    // iperf3 3.12's --help order (general, then server), ndm's own after them.
    app.add_option("-p,--port", port, "UDP port to listen on")->capture_default_str();
    app.add_option("-I,--pidfile", pidfile, "write the process id to FILE, removed at exit");
    app.add_option("-B,--bind", bind, "numeric address to bind (\"::\" = dual-stack, all interfaces)")->capture_default_str();
    app.add_flag("-J,--json", json_out, "print one JSON document per test instead of text");
    ndm::tools::add_output_flags(app, output_flags);
    ndm::tools::add_idle_timeout_option(app, idle_timeout);
    ndm::tools::add_version_flag(app, "ndm-recv");
    app.add_flag("-D,--daemon", daemon, "run in the background; output to --logfile, else discarded (as iperf3's -D)");
    app.add_flag("-1,--one-off", one_off, "exit after one test");
    app.add_flag("-4,--version4", ipv4, "IPv4 only: bind 0.0.0.0 (or -B's IPv4 address)")->excludes(
        app.add_flag("-6,--version6", ipv6, "IPv6: bind :: (or -B's IPv6 address); IPv4-mapped clients are still accepted"));
    app.add_option("--qlog", qlog, "write one qlog file (JSON-SEQ, for qvis) per connection into this directory");
    app.add_option("--io", io, "socket backend: auto, uring or epoll")->capture_default_str();
    ndm::tools::add_server_tls_flags(app, tls_flags);
    ndm::tools::add_no_gso_flag(app, no_gso);
    ndm::tools::add_no_ecn_flag(app, no_ecn);
    ndm::LossDetection loss_detection = ndm::LossDetection::adaptive;  // when this side sends (-R)
    ndm::tools::add_loss_detection_option(app, loss_detection);
    std::vector<std::string> plugins;  // a client may name their controllers (in -R this side runs them)
    ndm::tools::add_cc_plugin_option(app, plugins);
    ndm::tools::add_retry_option(app, retry);
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-recv")) return *rc;

    EndpointConfig cfg;
    ndm::tools::ServerTls tls;
    std::optional<ndm::tools::OutputRedirect> output;  // std::cout's lines go through it until the end of main
    std::optional<ndm::tools::PidFile> pid;
    try {  // bad input: one line, exit code 2, before any socket exists
        output.emplace(json_out ? "" : output_flags.title, output_flags.logfile, output_flags.force_flush);
        ndm::tools::load_cc_plugins(plugins);
        std::string no_host;
        if (!app.count("--bind")) bind.clear();  // -4/-6 choose the any-address then
        ndm::tools::apply_address_family(ipv4, ipv6, no_host, bind);
        if (bind.empty()) bind = "::";
        check_numeric_address(bind, "--bind");
        if (!pidfile.empty()) pid.emplace(pidfile);
        cfg.bind_address = bind;
        cfg.port = port;
        cfg.backend = parse_io_backend(io);
        cfg.accept_connections = true;
        if (!qlog.empty()) (void)qlog::file_observer(qlog);  // creates the directory or names the problem
        cfg.qlog_dir = qlog;
        // The client's -l decides: the effective size is the smaller of both sides'.
        cfg.connection.max_datagram_size = kMaxDatagramSize;
        cfg.connection.idle_timeout = ndm::tools::idle_timeout_duration(idle_timeout);
        tls = ndm::tools::server_tls(tls_flags, bind);
        cfg.connection.tls = tls.options;
        cfg.gso = cfg.gro = !no_gso;
        cfg.connection.ecn = !no_ecn;
        cfg.connection.loss_detection = loss_detection;
        cfg.retry = parse_retry_policy(retry);
    } catch (const std::exception& e) {
        std::cerr << "ndm-recv: " << e.what() << '\n';
        return 2;
    }
    try {
        if (daemon) ndm::tools::daemonize(output_flags.logfile);
        if (pid) pid->write();
        Endpoint ep(cfg);

        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        if (!json_out) {
            std::cout << "-----------------------------------------------------------\n"
                      << fmt::format("Server listening on {} (UDP, {})\n", ep.local_address(), to_string(ep.backend()))
                      << "-----------------------------------------------------------\n";
            if (!tls.self_signed_note.empty()) std::cout << tls.self_signed_note << '\n';
            std::cout << std::flush;
        } else if (!tls.self_signed_note.empty()) {
            std::cerr << tls.self_signed_note << '\n';  // stdout holds only the JSON documents
        }

        Server s{json_out, json_out ? output_flags.title : "", cfg.connection.cc, ep, std::nullopt, 0};
        bool idle_released = true;
        s.join_timeout = cfg.connection.idle_timeout;
        ep.on_event([&](ConnectionHandle h, const Event& ev) {
            if (std::holds_alternative<event::Established>(ev)) s.start(h);
            else if (const auto* r = std::get_if<event::StreamReadable>(&ev)) s.readable(h, r->id);
            else if (const auto* c = std::get_if<event::Closed>(&ev)) s.closed(h, c->info);
        });
        while (!g_stop && !(one_off && s.finished > 0)) {
            Instant now = steady_now();
            s.pump(now);
            // Short waits while sending (the pump refills), else bounded by Ctrl-C's reaction time.
            Instant deadline = now + (s.sending() ? std::chrono::milliseconds(2) : std::chrono::milliseconds(100));
            if (s.test && !s.test->intervals_done) deadline = std::min(deadline, s.test->next_report);
            ep.run_once(deadline);
            while (ep.next_accepted()) {}  // handled through Established events
            s.tick(steady_now());
            release_memory_when_idle(ep, idle_released);
        }
        if (g_stop && s.test) {
            for (const Flow& f : s.test->flows)
                if (Connection* c = ep.connection(f.h)) c->close(0, "the server was interrupted", steady_now());
            ep.run_until([&] { return ep.connection_count() == 0; }, std::chrono::milliseconds(300));
        }
        // What a flood of Initials cost, if there was one (RFC 9000 §8.1).
        if (const EndpointStats st = ep.stats();
            st.retries_sent + st.invalid_tokens + st.half_open_evicted + st.per_address_refused > 0)
            std::cerr << fmt::format("ndm-recv: address validation: {} Retries sent, {} invalid tokens dropped, {} "
                                     "half-open handshakes evicted, {} Initials over the per-address cap dropped\n",
                                     st.retries_sent, st.invalid_tokens, st.half_open_evicted, st.per_address_refused);
        return 0;
    } catch (const std::exception& e) {  // cannot bind, I/O
        std::cerr << "ndm-recv: " << e.what() << '\n';
        return 1;
    }
}
