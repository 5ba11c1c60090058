// ndm-recv: the server of an iperf3-style throughput test over ndm (the client
// is ndm-send). Accepts connections, takes the test parameters from the
// client's handshake and groups the connections of one test (-P) by its test
// id. Forward: reads, checks each byte against the client's payload (or
// hashes -F's file), prints per-interval receive rows, and at the client's
// FIN sends its totals and the verdict (or hash) back on the same stream. Reverse
// (-R): sends with the client's controller for the test time, then reports
// its totals and the hash on a second stream once all data is acknowledged.
#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <iostream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "ndm/qlog.hpp"
#include "ndm/workload.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/interrupt.hpp"
#include "tools/cli/logging.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/cli/units.hpp"
#include "tools/perf/cpu_meter.hpp"
#include "tools/perf/daemon.hpp"
#include "tools/perf/endpoint_summary.hpp"
#include "tools/perf/iperf_output.hpp"
#include "tools/perf/payload_file.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/recv_report.hpp"
#include "tools/perf/recv_test.hpp"
#include "tools/perf/test_limits.hpp"

using namespace ndm;
using nlohmann::json;

namespace {

using tools::id_label;
using tools::rate;
using tools::secs;
using tools::sum_json;
using tools::recv::Flow;
using tools::recv::Test;

// Probe timeouts in a row without an ACK (RFC 9002 §6.2.1: each twice as
// long as the one before, ~63 PTOs in all) after which a client that has
// our report is taken to have left: about 2 s on loopback, where the
// idle timeout (120 s by default) would otherwise hold the server.
constexpr std::uint64_t kGonePtos = 6;

// How often the test's directions are checked for progress (--rcv-timeout,
// --snd-timeout): reading a sender's stats costs a copy of its counters.
constexpr Duration kWatchPeriod = std::chrono::milliseconds(50);

struct Server {
    bool json_out = false;
    std::string title;  // -T: a key of each -J document
    std::string own_cc;  // our connections' controller: the receiver's in a forward test
    std::string file;    // -F: what we send in -R, where what we receive goes otherwise
    bool force_flush;    // --forceflush: each interval's rows flushed
    Endpoint& ep;
    std::optional<Test> test;
    int finished = 0;
    Duration join_timeout = std::chrono::seconds(5);  // main() sets the connections' idle timeout
    tools::TestLimits limits;  // --rcv-timeout, --snd-timeout, --test-grace, --max-test-time
    bool verbose = false;      // -V: each connection's suite and packet protection

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
        if (const auto why = tools::refuse_test(p, limits); why && !test) {
            c->close(1, *why, now);
            std::cerr << "ndm-recv: rejected a connection: " << *why << '\n';
            return;
        }
        if (test) {
            for (const Flow& f : test->flows)
                if (f.params.index == p.index) {
                    c->close(1, "duplicate connection index in the test", now);
                    return;
                }
        }
        // The client's -w, or the library's default windows (auto-tuned): the
        // handshake advertised only kMinWindow (main()), as the test
        // parameters arrive in the same handshake; MAX_DATA raises it.
        const ConnectionConfig defaults;
        c->set_receive_windows(p.window ? p.window : defaults.initial_max_data,
                               p.window ? p.window : defaults.initial_max_stream_data, p.window == 0);
        std::shared_ptr<const tools::FileSource> source;
        std::unique_ptr<tools::FileSink> sink;
        try {
            if (!file.empty() && (p.streams > 1 || p.bidir))
                throw std::runtime_error("this server's -F takes one connection a test (-P 1), one direction");
            if (!file.empty() && p.reverse) source = std::make_shared<tools::FileSource>(file);
            if (!file.empty() && !p.reverse) sink = std::make_unique<tools::FileSink>(file);
        } catch (const std::exception& e) {
            c->close(1, e.what(), now);
            std::cerr << "ndm-recv: rejected a connection: " << e.what() << '\n';
            return;
        }
        std::vector<Flow> made;
        if (!p.reverse) {
            Flow& f = made.emplace_back(flow(h, p, now));
            f.sink = std::move(sink);
            if (p.check_payload) f.check.emplace(p.seed);
            if (p.datagram) f.dgram = std::make_unique<tools::DatagramReceiver>();
        }
        if (p.reverse || p.bidir) {
            Flow& f = made.emplace_back(flow(h, p, now));
            f.sends = true;
            if (!start_sending(*c, f, now)) return;
            if (source) f.pump->send_file(source);
        }
        const tools::HostPort peer = tools::split_host_port(ep.peer_address(h));
        if (!test) begin_test(p, peer, now);
        // Rows in the client's connection order, whatever the handshakes' order.
        for (Flow& f : made) {
            f.peer = peer;
            auto at = std::find_if(test->flows.begin(), test->flows.end(), [&](const Flow& g) {
                return g.sends > f.sends || (g.sends == f.sends && g.params.index > p.index);
            });
            test->flows.insert(at, std::move(f));
        }
        // iperf3's line for each of its test streams.
        say(fmt::format("{} local {} port {} connected to {} port {}\n", id_label(p.index), test->local.host,
                        test->local.port, peer.host, peer.port));
        if (verbose) {
            const HandshakeSummary hs = c->handshake_summary();
            say(fmt::format("{} TLS 1.3, {}, QUIC version 0x{:08x}, packet protection: {}\n", id_label(p.index),
                            hs.cipher_suite, hs.version, hs.packet_protection));
        }
        if (test->connections() == test->params.streams) header();
        std::cout << std::flush;
    }

    static Flow flow(ConnectionHandle h, const tools::TestParams& p, Instant now) {
        Flow f;
        f.h = h;
        f.params = p;
        f.start = f.last_byte = now;
        f.progress.start(now);
        return f;
    }

    // Reverse or --bidir: the client's controller runs here, on our stream;
    // false when the connection had to be refused (closed with the reason).
    bool start_sending(Connection& c, Flow& f, Instant now) {
        const tools::TestParams& p = f.params;
        try {
            c.set_congestion_control(p.cc, p.cc_options);
        } catch (const std::exception& e) {
            c.close(1, e.what(), now);
            std::cerr << "ndm-recv: rejected a connection: " << tools::printable(e.what()) << '\n';
            return false;
        }
        const auto id = c.open_stream();
        if (!id) {
            c.close(1, "no stream available", now);
            return false;
        }
        f.data = *id;
        f.pump = std::make_unique<tools::PayloadPump>(p.seed, p.bytes ? p.bytes : std::numeric_limits<std::uint64_t>::max());
        f.pump->pace(p.bitrate, p.burst * tools::kBlockSize);  // the client's -b
        if (!p.bytes) f.send_end = now + from_seconds(p.omit + p.seconds);
        return true;
    }

    void begin_test(const tools::TestParams& p, const tools::HostPort& peer, Instant now) {
        Test t;
        t.id = p.test_id;
        t.params = p;
        t.local = tools::split_host_port(ep.local_address());
        t.accepted = peer;
        t.deadline = tools::test_deadline(p, now, limits);
        t.next_watch = now + kWatchPeriod;
        t.start = t.interval_begin = now;
        t.wall_start = std::chrono::system_clock::now();
        t.next_report = now + from_seconds(p.interval);
        t.omitting = p.omit > 0;
        t.omit_end = now + from_seconds(p.omit);
        // All -P connections arrive within one idle timeout, or the test ends.
        t.join_deadline = now + join_timeout;
        test = std::move(t);
        // iperf3's "Accepted connection from HOST, port PORT" (its control
        // connection's; here the first test connection's), then the test.
        say(std::string("-----------------------------------------------------------\n") +
            fmt::format("Accepted connection from {}, port {} (controller {}, {} byte packets, {}{}{})\n", peer.host,
                        peer.port, p.cc, p.packet_size,
                        p.bytes ? tools::format_bytes(p.bytes) : fmt::format("{:g} s", p.seconds),
                        p.streams > 1 ? fmt::format(", {} parallel connections", p.streams) : "",
                        p.reverse ? ", reverse mode: sending" : p.bidir ? ", bidirectional" : ""));
    }

    // The interval rows' header: once every connection is in, or before the
    // first row if one is still missing then.
    void header() {
        Test& t = *test;
        if (t.header_printed) return;
        t.header_printed = true;
        say(t.params.bidir     ? "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n"
            : t.params.reverse  ? "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
            : t.params.datagram ? "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
                                : "[ ID] Interval           Transfer     Bitrate\n");
    }

    // A text line of the test: printed unless -J, and kept for
    // --get-server-output when the client asked for text (up to half of
    // what a client reads, so the closing lines fit after it).
    void say(const std::string& text) {
        if (!json_out) std::cout << text;
        Test& t = *test;
        if (t.params.server_output == tools::TestParams::ServerOutput::text &&
            t.transcript.size() + text.size() <= tools::kMaxServerOutput / 2)
            t.transcript += text;
    }

    // --get-server-output: once every report is out, the test's text (or
    // -J document) goes to the client on a new stream of its first connection.
    void send_output(Instant now) {
        Test& t = *test;
        if (t.params.server_output == tools::TestParams::ServerOutput::none || t.output_sent ||
            t.connections() < t.params.streams)
            return;
        for (const Flow& f : t.flows)
            if (!f.reported) return;
        rows(now);  // the last, partial interval
        const bool as_json = t.params.server_output == tools::TestParams::ServerOutput::json;
        const std::string text = (as_json ? "" : t.transcript) + tools::recv::closing_report(t, "", as_json, title);
        t.output_sent = true;
        Connection* c = ep.connection(t.flows.front().h);
        if (!c || c->state() != ConnectionState::established) return;
        const auto id = c->open_stream();
        if (!id) return;  // the client then reports that no output came
        const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
        c->write(*id, bytes.first(std::min(bytes.size(), c->stream_send_capacity(*id))), true);
        t.output = *id;
    }

    // A test missing some of its connections past the join deadline ends:
    // the connections it has are closed with the reason.
    void expire(Instant now) {
        if (!test || now < test->join_deadline || test->connections() >= test->params.streams) return;
        const std::string why = fmt::format("only {} of {} connections of the test arrived within {:g} s",
                                            test->connections(), test->params.streams, to_seconds(join_timeout));
        test->join_deadline = kNever;
        end_test(why, now);
    }

    // Closes the test's connections still open with `why` (an application
    // error): the client is told, and the endpoint removes each connection
    // after its closing period (RFC 9000 §10.2).
    void close_all(const std::string& why, Instant now) {
        for (Flow& f : test->flows) {
            if (f.closed) continue;
            if (Connection* c = ep.connection(f.h)) {
                note_sent(f, *c, now);
                c->close(1, why, now);
            }
            f.closed = true;
            f.close_reason = why;
        }
    }

    // The server ends the test: its connections close with the reason, the
    // closing lines say so, and the next client is served.
    void end_test(const std::string& why, Instant now) {
        test->ended_by_server = why;
        close_all(why, now);
        finish();
    }

    // A sending flow's totals so far, for a test that ends before its report
    // (the client interrupted, a timeout): what was sent until now, not 0.
    void note_sent(Flow& f, const Connection& c, Instant now) const {
        if (!f.sends || f.reported) return;
        const ConnectionStats st = c.stats(now);
        f.sent_bytes = st.stream_bytes_sent - std::min(f.omit_sent, st.stream_bytes_sent);
        f.retransmits = st.packets_retransmitted - std::min(f.omit_retx, st.packets_retransmitted);
        if (!f.fin_sent) f.sent_seconds = secs(f.start, now);
    }

    // Whatever the client does, the test ends: at its deadline (-O and -t,
    // or --max-test-time, plus --test-grace), or once a direction has made
    // no progress for --rcv-timeout (nothing read) or --snd-timeout (nothing
    // acknowledged, or the client's flow control holding everything back).
    // QUIC's idle timeout cannot do this: a PING a second restarts it.
    void watch(Instant now) {
        if (!test) return;
        Test& t = *test;
        const tools::TestParams& p = t.params;
        if (now >= t.deadline) {
            const std::string phase = p.bytes ? fmt::format("--max-test-time {:g} s", limits.max_test_seconds)
                                              : fmt::format("-t {:g} s", p.seconds);
            end_test(fmt::format("the test was not over {:g} s after its send phase ({}{}): --test-grace",
                                 limits.grace_seconds, p.omit > 0 ? fmt::format("-O {:g} s, ", p.omit) : "", phase),
                     now);
            return;
        }
        if (now < t.next_watch) return;
        t.next_watch = now + kWatchPeriod;
        for (Flow& f : t.flows) {
            if (f.closed || f.reported) continue;
            const Connection* c = ep.find(f.h);
            if (!c || c->state() != ConnectionState::established) continue;
            if (!f.sends) {
                f.progress.note(now, f.bytes, true);
                if (f.progress.stalled(now, limits.rcv_timeout_ms)) {
                    end_test(fmt::format("no data from the client for {} ms (--rcv-timeout)", limits.rcv_timeout_ms), now);
                    return;
                }
                continue;
            }
            const ConnectionStats st = c->stats(now);
            const bool unacked = st.stream_bytes_sent > st.stream_bytes_acked || (f.fin_sent && !c->stream_send_acked(f.data));
            const bool held = !f.fin_sent && !f.pump->done() && c->stream_send_limit(f.data) <= f.pump->written();
            f.progress.note(now, st.stream_bytes_acked, unacked || held);
            if (f.progress.stalled(now, limits.snd_timeout_ms)) {
                end_test(fmt::format("{} for {} ms (--snd-timeout)",
                                     unacked ? "no acknowledgement of the data sent"
                                             : "the client's flow control let nothing more be sent",
                                     limits.snd_timeout_ms),
                         now);
                return;
            }
        }
    }

    // Reverse: keep the streams topped up; FIN at the end; the report once all is acknowledged.
    void pump(Instant now) {
        if (!test) return;
        for (Flow& f : test->flows) {
            if (!f.sends || f.reported || f.closed) continue;
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
            // Every byte and the FIN: at the end of -t the FIN goes alone, and
            // a report acknowledged before it would let the test end (and
            // ndm-recv -1 exit) while the client still waits for it.
            if (f.fin_sent && c->stream_send_acked(f.data)) {
                const ConnectionStats st = c->stats(now);
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
                r.path = f.path.result();
                c->write(*rid, tools::encode(r), true);
                f.reported = true;
                f.report = *rid;
                send_output(now);
            }
        }
    }

    [[nodiscard]] bool sending() const {
        if (!test) return false;
        for (const Flow& f : test->flows)
            if (f.sends && !f.reported && !f.closed) return true;
        return false;
    }

    using Row = tools::SenderRow;
    Row measure(Flow& f, Instant now) const {
        return tools::flow_interval(f.sends, ep.find(f.h), now, f.bytes, f.prev_bytes, f.prev_retx, f.path);
    }

    void interval(Instant now) {
        Test& t = *test;
        header();
        const double b = secs(t.start, t.interval_begin), e = secs(t.start, now);
        json streams = json::array();
        Row sum[2];  // by direction
        std::string extra;  // -u: jitter and lost/total datagrams
        auto text = [&](const std::string& id, bool sends, const Row& r, bool cwnd) {
            say(fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}", tools::recv::label(t.params, id, sends), b, e,
                            tools::format_bytes(r.bytes), tools::format_bitrate(rate(r.bytes, e - b))) +
                (sends ? fmt::format("  {:>4}", r.retr) : "") +
                (sends && cwnd ? fmt::format("  {:>12}", tools::format_cwnd(r.cwnd)) : "") + extra +
                (t.omitting ? "  (omitted)" : "") + '\n');
        };
        for (Flow& f : t.flows) {
            const Row r = measure(f, now);
            const auto dg = f.dgram ? std::optional(f.dgram->take_interval()) : std::nullopt;
            extra = dg ? tools::datagram_row(*dg) : "";
            sum[f.sends].bytes += r.bytes;
            sum[f.sends].retr += r.retr;
            json s = sum_json(b, e, r.bytes, f.sends ? std::optional(r.retr) : std::nullopt, f.sends);
            s["socket"] = f.params.index + 1;
            s["omitted"] = t.omitting;
            if (f.sends) s["snd_cwnd"] = r.cwnd;
            if (dg) tools::datagram_json(s, *dg);
            streams.push_back(s);
            text(id_label(f.params.index), f.sends, r, true);
        }
        json record = {{"streams", streams}};
        for (const bool d : tools::recv::directions(t.params)) {
            json sum_j = sum_json(b, e, sum[d].bytes, d ? std::optional(sum[d].retr) : std::nullopt, d);
            sum_j["omitted"] = t.omitting;
            record[tools::recv::sum_key(t.params, "sum", d)] = sum_j;
            extra.clear();
            if (t.params.streams > 1) text("[SUM]", d, sum[d], false);
        }
        t.intervals.push_back(record);
        if (t.params.streams > 1) say("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
        if (force_flush) std::cout << std::flush;  // as ndm-send's rows
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

    // The main loop's turn: a test missing connections, or one past its
    // limits, ends; the interval rows that are due are printed.
    void tick(Instant now) {
        expire(now);
        watch(now);
        rows(now);
    }

    // Interval rows until every flow is done, then the partial last interval.
    void rows(Instant now) {
        if (!test || test->intervals_done) return;
        Test& t = *test;
        if (t.omitting && now >= t.omit_end) end_omit(now);
        bool all_done = t.connections() == t.params.streams;
        Instant last = t.interval_begin;
        for (const Flow& f : t.flows) {
            all_done = all_done && (f.done() || f.closed);
            last = std::max(last, f.sends ? f.start + from_seconds(f.sent_seconds) : f.last_byte);
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
        Flow* f = test->find(h, false);
        Connection* c = ep.connection(h);
        if (!f || !c) return;  // reverse: nothing is expected from the client
        if (f->dgram && c->stream_readable(id) > 0) {
            c->close(1, "a datagram test's stream carries no data", steady_now());
            return;
        }
        try {
            tools::drain(*c, id, [&](std::span<const std::uint8_t> data) {
                if (f->check) f->check->update(data);
                else f->hash.update(data);
                if (f->sink) f->sink->write(data);
                f->bytes += data.size();
                f->last_byte = steady_now();
            });
        } catch (const std::runtime_error& e) {  // -F's file: disk full, ...
            std::cerr << "ndm-recv: " << e.what() << '\n';
            c->close(1, e.what(), steady_now());
            return;
        }
        if (c->stream_finished(id) && !f->reported) {
            tools::ReceiverReport r;
            r.bytes = f->bytes;
            r.seconds = std::max(0.0, secs(f->start, f->last_byte));
            if (f->check) {
                r.checked_payload = true;
                if (f->check->mismatched()) r.mismatch_at = f->check->first_mismatch();
            } else {
                r.hash = f->hash.digest();
            }
            r.omitted_bytes = f->omitted_bytes;
            const tools::CpuPercent cpu = test->cpu.percent();
            r.cpu = {cpu.user, cpu.system};
            r.cc = f->params.bidir ? f->params.cc : own_cc;  // --bidir: we send too, with the client's
            if (f->dgram) r.datagrams = tools::report_of(f->dgram->total());
            c->write(id, tools::encode(r), true);
            f->reported = true;
            f->report = id;
            rows(steady_now());
            send_output(steady_now());
        }
    }

    // -u: each DATAGRAM as it arrives (counted, its payload is not kept).
    void datagrams(ConnectionHandle h) {
        Flow* f = test ? test->find(h, false) : nullptr;
        Connection* c = ep.connection(h);
        if (!c) return;
        const Instant now = steady_now();
        while (auto d = c->recv_datagram()) {
            if (!f || !f->dgram) continue;  // not a datagram test: dropped, counted by the connection
            f->dgram->on_datagram(*d, now);
            f->bytes = f->dgram->total().bytes;
            f->last_byte = now;
        }
    }

    // The test is over once the client's transport holds every report (and
    // the server output): the client's close follows at once, but if that
    // one datagram is lost the client, gone, never repeats it (RFC 9000
    // §10.2.1 repeats it only in answer to our packets), and the server would
    // refuse new tests until the idle timeout. Connections still open then
    // close on their own; closed() ignores them. Its ACK of a report can be
    // lost as well (with its close and the answers of its closing period):
    // a report still unacknowledged after kGonePtos probe timeouts in a row
    // counts as delivered to a client that has left.
    void finish_if_delivered() {
        if (!test || test->connections() < test->params.streams) return;
        auto acked = [&](ConnectionHandle h, StreamId id) {
            const Connection* c = ep.find(h);
            return c && (c->stream_send_acked(id) || c->stats(steady_now()).ptos_in_a_row >= kGonePtos);
        };
        for (const Flow& f : test->flows)
            if (!f.closed && !(f.reported && acked(f.h, f.report))) return;
        const Test& t = *test;
        if (t.params.server_output != tools::TestParams::ServerOutput::none && !t.flows.front().closed &&
            (!t.output_sent || (t.output && !acked(t.flows.front().h, *t.output))))
            return;
        finish();
    }

    // The client closes once it has the reports; anything else is a failure.
    void closed(ConnectionHandle h, const CloseInfo& info) {
        if (!test) return;
        bool ours = false;
        for (Flow& f : test->flows) {
            if (f.h != h) continue;
            ours = true;
            if (const Connection* c = ep.find(h)) note_sent(f, *c, steady_now());
            f.closed = true;
            f.close_reason = tools::printable(info.reason);  // the peer's words, shown escaped
        }
        if (!ours) return;
        for (const Flow& g : test->flows)
            if (!g.closed) return;
        finish();
    }

    void finish() {
        rows(steady_now());
        std::string failure;
        for (const Flow& f : test->flows)
            if (!f.reported && failure.empty()) failure = f.close_reason;
        std::cout << tools::recv::closing_report(*test, failure, json_out, title) << std::flush;
        if (!test->ended_by_server.empty())
            std::cerr << "ndm-recv: the server ended the test: " << test->ended_by_server << '\n';
        else if (!failure.empty())
            std::cerr << "ndm-recv: client disconnected before the end of the test: " << failure << '\n';
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

// ndm-recv's command line.
struct Options {
    std::uint16_t port = 5201;
    std::string bind = "::";
    bool one_off = false, json_out = false, verbose = false;
    std::string io = "auto";
    std::string qlog;
    std::string file;     // -F
    std::string pidfile;  // -I
    bool daemon = false;  // -D
    bool no_gso = false, no_ecn = false, ipv4 = false, ipv6 = false;
    std::string retry = "auto";
    tools::ServerTlsFlags tls_flags;
    tools::OutputFlags output_flags;  // -T, --logfile, --forceflush
    // --idle-timeout; when this side sends (-R) --loss-detection; --ack-ranges,
    // --no-ack-frequency, --receive-budget; --cc-plugin, as a client may name
    // their controllers (in -R this side runs them).
    tools::ConnectionFlags conn;
    tools::TestLimits limits;  // --rcv-timeout, --snd-timeout, --test-grace, --max-test-time

    Options() { conn.ack_frequency = true; }  // as a client's --ack-frequency asks
};

constexpr const char* kDescription =
    "ndm-recv: the server of an iperf3-style throughput test over ndm (the client is ndm-send).\n"
    "Serves one test (of one or more parallel connections) at a time; the client's parameters arrive in the\n"
    "handshake and this side's totals go back to the client at the end of each test, which is over once the\n"
    "client holds them (or has stayed silent through 6 probe timeouts in a row: it left, its close lost).\n"
    "Whatever a client does, its test ends: after --rcv-timeout without data from it, --snd-timeout without\n"
    "acknowledgement of what this side sends (-R, --bidir), and at the latest --test-grace after its send\n"
    "phase (the client's -O plus -t; -n/-k: --max-test-time). The server then closes the connections with an\n"
    "application error naming the reason, says \"the server ended it\" in its closing lines (-J: \"error\") and\n"
    "serves the next client. Each test shows the client's address as iperf3 does (\"Accepted connection from\n"
    "HOST, port PORT\", \"[  1] local ... connected to ...\"; -J: start.accepted_connection, start.connected);\n"
    "the local address is the one bound (-B): a UDP socket bound to :: does not tell which address a client reached.\n"
    "Receives, or sends when the client asks for reverse mode (-R). The closing receiver line of a -t test\n"
    "shows how long after the client's send phase the last byte arrived (the drain; drain_seconds in -J).\n"
    "A client's -w sets this side's flow-control windows too: the handshake that carries it advertises\n"
    "16 KiB, raised (MAX_DATA, MAX_STREAM_DATA) right after it to -w or the 16/32 MiB auto-tuned defaults.";

// iperf3 3.12's general and server flags, in its --help order.
void add_iperf3_options(CLI::App& app, Options& o) {
    app.add_option("-p,--port", o.port, "UDP port to listen on (0..65535; 0: any free port)")
        ->capture_default_str()
        ->check(tools::port_number(true));
    app.add_option("-I,--pidfile", o.pidfile, "write the process id to FILE, removed at exit");
    app.add_option("-F,--file", o.file,
                   "write what a client sends to this file (created or truncated each test), or send its bytes "
                   "when the client asks for -R (the test ends with the file unless the client's -t/-n end it "
                   "first); one connection a test (-P 1)");
    app.add_option("-B,--bind", o.bind,
                   "numeric address to bind (\"::\" = dual-stack, all interfaces; unlike iperf3's -B, not a host name)")
        ->capture_default_str();
    app.add_flag("-J,--json", o.json_out, "print one JSON document per test instead of text");
    tools::add_output_flags(app, o.output_flags);
    tools::add_idle_timeout_option(app, o.conn);
    tools::add_version_flag(app, "ndm-recv");
    app.add_flag("-D,--daemon", o.daemon, "run in the background; output to --logfile, else discarded (as iperf3's -D)");
    app.add_flag("-1,--one-off", o.one_off, "exit after one test");
    app.add_flag("-V,--verbose", o.verbose,
                 "for each connection, its cipher suite and which library protects its packets (OpenSSL or "
                 "GnuTLS, docs/packet-protection.md); at exit, also print the socket's totals: datagrams sent (in "
                 "how many send calls) and received, service passes and connection turns, and the tests served and "
                 "connections still open (to stderr with -J)");
    app.add_flag("-4,--version4", o.ipv4, "IPv4 only: bind 0.0.0.0 (or -B's IPv4 address)")->excludes(
        app.add_flag("-6,--version6", o.ipv6, "IPv6: bind :: (or -B's IPv6 address); IPv4-mapped clients are still accepted"));
}

// ndm's own flags, after iperf3's.
void add_ndm_options(CLI::App& app, Options& o) {
    app.add_option("--qlog", o.qlog, "write one qlog file (JSON-SEQ, for qvis) per connection into this directory");
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    tools::add_server_tls_flags(app, o.tls_flags);
    tools::add_no_gso_flag(app, o.no_gso);
    tools::add_no_ecn_flag(app, o.no_ecn);
    tools::add_test_connection_flags(app, o.conn, tools::TestSide::server);
    tools::add_retry_option(app, o.retry);
    tools::add_test_limit_options(app, o.limits);
}

// The address to bind, from -B and -4/-6 (bound_explicitly: -B was given).
// Throws std::invalid_argument (bad input) naming the problem.
void choose_bind_address(Options& o, bool bound_explicitly) {
    std::string no_host;
    if (!bound_explicitly) o.bind.clear();  // -4/-6 choose the any-address then
    tools::apply_address_family(o.ipv4, o.ipv6, no_host, o.bind);
    if (o.bind.empty()) o.bind = "::";
    check_numeric_address(o.bind, "--bind");
}

// The listening endpoint's configuration, checked before any socket exists.
// Throws std::invalid_argument (bad input) naming the problem.
EndpointConfig endpoint_config(const Options& o, tools::ServerTls& tls) {
    EndpointConfig cfg;
    cfg.bind_address = o.bind;
    cfg.port = o.port;
    cfg.backend = parse_io_backend(o.io);
    cfg.accept_connections = true;
    if (!o.qlog.empty()) (void)qlog::file_observer(o.qlog);  // creates the directory or names the problem
    cfg.qlog_dir = o.qlog;
    // The client's -l decides: the effective size is the smaller of both sides'.
    cfg.connection.max_datagram_size = kMaxDatagramSize;
    // The client's -w arrives in the handshake that advertises these:
    // start small (about an initial congestion window, so the first
    // flight is not held back), raised after it (Server::start).
    cfg.connection.initial_max_data = cfg.connection.initial_max_stream_data = tools::kMinWindow;
    // ndm-send -u's DATAGRAMs (RFC 9221), of any size a packet holds.
    cfg.connection.max_datagram_frame_size = 65535;
    tls = tools::server_tls(o.tls_flags, o.bind);
    cfg.connection.tls = tls.options;
    cfg.gso = cfg.gro = !o.no_gso;
    cfg.connection.ecn = !o.no_ecn;
    // --idle-timeout, --loss-detection, --ack-ranges, --no-ack-frequency, --receive-budget
    tools::apply(o.conn, cfg);
    cfg.retry = parse_retry_policy(o.retry);
    return cfg;
}

// "Server listening on ..." and a self-signed certificate's fingerprint
// (on standard error with -J: standard output holds only the JSON documents).
void print_listening(const Options& o, const Endpoint& ep, const tools::ServerTls& tls) {
    if (!o.json_out) {
        std::cout << "-----------------------------------------------------------\n"
                  << fmt::format("Server listening on {} (UDP, {})\n", ep.local_address(), to_string(ep.backend()))
                  << "-----------------------------------------------------------\n";
        if (!tls.self_signed_note.empty()) std::cout << tls.self_signed_note << '\n';
        std::cout << std::flush;
    } else if (!tls.self_signed_note.empty()) {
        std::cerr << tls.self_signed_note << '\n';
    }
}

// Serves tests until interrupted (or after one, -1).
void serve(const Options& o, Endpoint& ep, Server& s) {
    bool idle_released = true;
    ep.on_event([&](ConnectionHandle h, const Event& ev) {
        if (std::holds_alternative<event::Established>(ev)) s.start(h);
        else if (const auto* r = std::get_if<event::StreamReadable>(&ev)) s.readable(h, r->id);
        else if (std::holds_alternative<event::DatagramReceived>(ev)) s.datagrams(h);
        else if (const auto* c = std::get_if<event::Closed>(&ev)) s.closed(h, c->info);
    });
    while (!tools::interrupted() && !(o.one_off && s.finished > 0)) {
        Instant now = steady_now();
        s.pump(now);
        // Short waits while sending (the pump refills), else bounded by Ctrl-C's reaction time.
        Instant deadline = now + (s.sending() ? std::chrono::milliseconds(2) : std::chrono::milliseconds(100));
        if (s.test && !s.test->intervals_done) deadline = std::min(deadline, s.test->next_report);
        ep.run_once(deadline);
        while (ep.next_accepted()) {}  // handled through Established events
        s.tick(steady_now());
        s.finish_if_delivered();
        release_memory_when_idle(ep, idle_released);
    }
}

// At exit: what a flood of Initials cost, if there was one (RFC 9000 §8.1),
// -V's totals (open_at_exit: the connections still open when serving
// stopped), and what arrived faster than the server read.
void print_exit_summary(const Options& o, const Endpoint& ep, const Server& s, std::size_t open_at_exit) {
    const EndpointStats st = ep.stats();
    if (st.retries_sent + st.invalid_tokens + st.half_open_evicted + st.per_address_refused > 0)
        std::cerr << fmt::format("ndm-recv: address validation: {} Retries sent, {} invalid tokens dropped, {} "
                                 "half-open handshakes evicted, {} Initials over the per-address cap dropped\n",
                                 st.retries_sent, st.invalid_tokens, st.half_open_evicted, st.per_address_refused);
    if (o.verbose)
        (o.json_out ? std::cerr : std::cout)
            << tools::endpoint_summary_text(st)
            << fmt::format("Server: {} tests served, {} connections open at exit\n", s.finished, open_at_exit)
            << std::flush;
    if (st.receive_drops > 0)
        std::cerr << fmt::format("ndm-recv: the kernel dropped {} receives (datagrams, or whole GSO batches) "
                                 "for a full socket receive buffer (they arrived faster than the server read)\n",
                                 st.receive_drops);
}

// Detaches (-D), writes the pid file (-I), listens and serves; 1 when the
// socket cannot be bound or fails.
int run(const Options& o, const EndpointConfig& cfg, const tools::ServerTls& tls, std::optional<tools::PidFile>& pid) {
    try {
        if (o.daemon) tools::daemonize(o.output_flags.logfile);
        if (pid) pid->write();
        Endpoint ep(cfg);
        tools::catch_interrupts();
        print_listening(o, ep, tls);
        Server s{o.json_out, o.json_out ? o.output_flags.title : "", cfg.connection.cc, o.file,
                 o.output_flags.force_flush, ep, std::nullopt, 0, cfg.connection.idle_timeout, o.limits, o.verbose};
        serve(o, ep, s);
        // -V: what was still open at exit (an ended test's connections are
        // removed after their closing period, RFC 9000 §10.2).
        const std::size_t open_at_exit = ep.connection_count();
        if (tools::interrupted() && s.test) {
            for (const Flow& f : s.test->flows)
                if (Connection* c = ep.connection(f.h)) c->close(0, "the server was interrupted", steady_now());
            ep.run_until([&] { return ep.connection_count() == 0; }, std::chrono::milliseconds(300));
        }
        print_exit_summary(o, ep, s, open_at_exit);
        return 0;
    } catch (const std::exception& e) {  // cannot bind, I/O
        std::cerr << "ndm-recv: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    Options o;
    CLI::App app{kDescription, "ndm-recv"};
    add_iperf3_options(app, o);
    add_ndm_options(app, o);
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-recv")) return *rc;

    EndpointConfig cfg;
    ndm::tools::ServerTls tls;
    std::optional<ndm::tools::OutputRedirect> output;  // std::cout's lines go through it until the end of main
    std::optional<ndm::tools::PidFile> pid;
    try {  // bad input: one line, exit code 2, before any socket exists
        output.emplace(o.json_out ? "" : o.output_flags.title, o.output_flags.logfile, o.output_flags.force_flush);
        ndm::tools::load_cc_plugins(o.conn);
        choose_bind_address(o, app.count("--bind") > 0);
        if (!o.pidfile.empty()) pid.emplace(o.pidfile);
        if (!o.file.empty()) ndm::tools::check_file_path(o.file);
        cfg = endpoint_config(o, tls);
    } catch (const std::exception& e) {
        std::cerr << "ndm-recv: " << e.what() << '\n';
        return 2;
    }
    return run(o, cfg, tls, pid);
}
