#include "tools/perf/send_client.hpp"

#include <algorithm>
#include <array>
#include <iostream>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ndm/cc.hpp"

#include "tools/cli/interrupt.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/units.hpp"
#include "tools/emu/shared_path.hpp"
#include "tools/perf/cpu_meter.hpp"
#include "tools/perf/iperf_output.hpp"
#include "tools/perf/send_flow.hpp"
#include "tools/perf/send_report.hpp"

namespace ndm::tools::send {

using nlohmann::json;

// path: where the shared emulated path is kept (its stats are printed at the end).
EndpointConfig client_endpoint_config(const Options& o, const std::optional<emu::Profile>& profile,
                                      std::optional<tools::SharedEmuPath>& path) {
    EndpointConfig cfg;
    cfg.backend = parse_io_backend(o.io);
    if (!o.bind.empty()) cfg.bind_address = o.bind;
    cfg.port = o.cport;  // the -P connections share this one socket, so one port
    const cc::Entry entry = cc::parse_entry(o.cc);
    cfg.connection.cc = entry.name;
    cfg.connection.cc_options = entry.options;
    cfg.connection.max_datagram_size = o.packet_size;
    if (!o.window.empty()) {  // -w: checked by its validator; fixed, as a socket buffer iperf3's -w sets
        cfg.connection.initial_max_data = cfg.connection.initial_max_stream_data = tools::parse_size(o.window);
        cfg.connection.autotune_receive_windows = false;
    }
    cfg.connection.seed = o.seed * 2 + 1;
    // Fail within seconds when the server is absent (--connect-timeout);
    // mid-test, survive outages shorter than the idle timeout.
    cfg.connection.handshake_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
    cfg.connection.tls = o.tls;
    cfg.gso = cfg.gro = !o.no_gso;
    cfg.connection.ecn = !o.no_ecn;
    // --idle-timeout, --loss-detection, --ack-ranges, --ack-frequency, --receive-budget
    apply(o.conn, cfg);
    cfg.qlog_dir = o.qlog;
    // The -P connections share one emulated path per direction, as they would share a bottleneck.
    if (profile) path = tools::share_emulated_path(cfg, *profile, o.seed);
    return cfg;
}

namespace {

// Reverse mode: the server's streams (server-initiated bidirectional IDs,
// RFC 9000 §2.1): the first carries the data, the second its report.
constexpr StreamId kReverseData = 1;
constexpr StreamId kReverseReport = 5;
// --get-server-output: the server's first stream in a forward test; in -R
// and --bidir the next one (+4) after kReverseReport.
constexpr StreamId kServerOutput = 1;

// The client of one test, everything after argument checking: connects the
// -P connections, runs the send phase (forward) or the receive phase (-R),
// collects the other side's reports, closes, and prints the text or the -J
// document. Throws std::runtime_error on a failed test, with the -J interval
// records made so far in `intervals`.
class Client {
public:
    Client(const Options& o, const TestParams& base, const std::optional<emu::Profile>& profile, json& intervals)
        : o_(o), base_(base), profile_name_(profile ? profile->name : "none"), intervals_(intervals),
          cfg_(client_endpoint_config(o, profile, path_)), ep_(cfg_), flows_(o.parallel * (o.bidir ? 2 : 1)) {}

    int run() {
        try {
            return run_test();
        } catch (const tools::Interrupted&) {
            // As iperf3's client: the server is told, and is free for the next test.
            close_all("the client was interrupted");
            throw;
        }
    }

private:
    int run_test() {
        connect();
        start_ = sample_begin_ = steady_now();
        next_sample_ = start_ + from_seconds(base_.interval);
        omitting_ = base_.omit > 0;
        omit_end_ = start_ + from_seconds(base_.omit);
        if (!o_.reverse) {
            send_phase();
            collect_receiver_reports();
        } else {
            receive_phase();
        }
        if (base_.server_output != tools::TestParams::ServerOutput::none) collect_server_output();
        close_all("test complete");
        save_session();
        if (o_.json) {
            print_json(view());
        } else {
            print_closing_text(view());
        }
        for (const bool rev : directions(o_))
            if (const Totals t = totals(flows_, rev); !t.error.empty()) {
                std::cerr << "ndm-send: " << t.error << '\n';
                return 1;
            }
        return 0;
    }

    // Opens the connections with the test parameters in their handshakes and
    // waits until all are established; forward, opens each one's data stream.
    void connect() {
        const unsigned n = o_.parallel;
        // A host name is looked up once, so that all -P connections reach
        // the same address; the certificate must carry the name.
        const std::string address =
            resolve_host(o_.host, o_.ipv4 ? AddressFamily::ipv4 : o_.ipv6 ? AddressFamily::ipv6 : AddressFamily::any);
        if (!o_.json) std::cout << fmt::format("Connecting to host {}, port {}\n", o_.host, o_.port) << std::flush;
        if (!o_.json && o_.reverse) std::cout << fmt::format("Reverse mode, remote host {} is sending\n", o_.host) << std::flush;
        // Distinguishes this test's connections from another client's on the server.
        const std::uint64_t test_id = std::random_device{}() * 0x100000000ULL + std::random_device{}();
        if (!o_.session.file.empty())
            ep_.on_event([this](ConnectionHandle, const Event& ev) { (void)kept_.take(ev); });
        for (unsigned i = 0; i < n; ++i) {
            Flow& f = flows_[i];
            f.index = i;
            f.rev = o_.reverse;
            f.params = base_;
            f.params.streams = n;
            f.params.index = i;
            f.params.test_id = test_id;
            f.params.seed = base_.seed + i;  // distinct payloads: a mix-up between connections shows
            ConnectionConfig cc = cfg_.connection;
            cc.application_params = tools::encode(f.params);
            if (cc.tls.server_name.empty())  // the name as given; a literal without brackets
                cc.tls.server_name = address == o_.host || o_.host.front() == '[' ? address : o_.host;
            // --session-file: resumed, and no Retry with its token. No 0-RTT: the
            // test's clock starts once every connection is established.
            if (!o_.session.file.empty()) o_.kept.apply(cc, false);
            f.h = ep_.connect(address, o_.port, cc);
            if (o_.bidir) {  // the server's direction of the same connection
                Flow& r = flows_[n + i];
                r.index = i;
                r.rev = true;
                r.params = f.params;
                r.h = f.h;
            }
        }
        for (unsigned i = 0; i < n; ++i) {
            Flow& f = flows_[i];
            // The handshake timeout (--connect-timeout) ends a handshake that does
            // not complete with its reason; this bound only backs it up.
            Connection& c = tools::await_established(ep_, f.h, cfg_.connection.handshake_timeout + std::chrono::seconds(1));
            mds_ = c.max_datagram_size();
            handshake_ = c.handshake_summary();
            if (!f.rev) {
                const auto id = c.open_stream();
                if (!id) throw std::runtime_error("the receiver allows no stream");
                f.data = *id;
                f.pump = std::make_unique<tools::PayloadPump>(
                    f.params.seed, base_.bytes ? base_.bytes : std::numeric_limits<std::uint64_t>::max());
                f.pump->pace(base_.bitrate, base_.burst * tools::kBlockSize);
                if (o_.send_file) f.pump->send_file(o_.send_file);
                if (base_.check_payload) f.pump->skip_hash();
            }
        }
        for (unsigned i = 0; i < n; ++i) index_of_.emplace(flows_[i].h, i);
        send_look_.assign(n, 1);
        recv_look_.assign(n, 1);
        (void)ep_.take_turned();  // starts the record
        if (!o_.json) print_header(view());
    }

    // Flags the connections that had a turn since the last call for both loops.
    void note_turns() {
        for (const ConnectionHandle h : ep_.take_turned())
            if (const auto it = index_of_.find(h); it != index_of_.end()) send_look_[it->second] = recv_look_[it->second] = 1;
    }

    std::string fail_reason(ConnectionHandle h) const {
        const CloseInfo* ci = ep_.close_info(h);
        return ci ? tools::printable(ci->reason) : std::string("the connection closed");  // the peer's words, escaped
    }

    // A read-only look (Endpoint::find), which does not give the connection a turn.
    const Connection& check_open(const Flow& f, const char* when) const {
        const Connection* c = ep_.find(f.h);
        if (!c || c->state() != ConnectionState::established)
            throw std::runtime_error(fmt::format("connection {} lost {}: {}", f.index + 1, when, fail_reason(f.h)));
        return *c;
    }

    Connection& require_open(const Flow& f, const char* when) {
        (void)check_open(f, when);
        return *ep_.connection(f.h);
    }

    // One flow's numbers over an interval.
    using Row = tools::SenderRow;
    Row measure(Flow& f, Instant now) {
        return tools::flow_interval(!f.rev, ep_.find(f.h), now, f.received, f.prev_bytes, f.prev_retx, f.sampler);
    }

    // One interval row per flow (and [SUM] per direction), or its -J record.
    void sample(Instant now) {
        const double b = secs(start_, sample_begin_), e = secs(start_, now);
        std::vector<Row> rows;
        rows.reserve(flows_.size());
        std::array<Row, 2> sum{};  // by direction
        for (Flow& f : flows_) {
            const Row& r = rows.emplace_back(measure(f, now));
            sum[f.rev].bytes += r.bytes;
            sum[f.rev].retr += r.retr;
            if (!o_.json) std::cout << row_text(o_, id_label(f.index), f.rev, b, e, r, omitting_);
        }
        if (o_.json) {
            intervals_.push_back(interval_json(o_, flows_, rows, sum, b, e, omitting_));
        } else if (o_.parallel > 1) {
            for (const bool rev : directions(o_)) std::cout << row_text(o_, "[SUM]", rev, b, e, sum[rev], omitting_);
            std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
        }
        // As iperf3: rows reach a pipe or a file as the buffer fills, or
        // every interval with --forceflush (a terminal gets every line).
        if (o_.output.force_flush) std::cout << std::flush;
        sample_begin_ = now;
    }

    // iperf3's -O: the omitted period's rows are marked, then the clock and
    // the totals start again from its end.
    void end_omit(Instant now) {
        sample(now);
        omitting_ = false;
        for (Flow& f : flows_) {
            f.omit_received = f.received;
            if (const Connection* c = ep_.find(f.h)) {
                const ConnectionStats st = c->stats(now);
                f.omit_sent = st.stream_bytes_sent;
                f.omit_retx = st.packets_retransmitted;
            }
        }
        start_ = sample_begin_ = now;
        next_sample_ = now + from_seconds(base_.interval);
    }

    void tick(Instant now) {
        if (omitting_ && now >= omit_end_) {
            end_omit(now);
        } else if (now >= next_sample_) {
            sample(now);
            next_sample_ += from_seconds(base_.interval);
        }
    }

    static void read_all(Connection& c, StreamId id, std::vector<std::uint8_t>& into) {
        tools::drain(c, id, [&](std::span<const std::uint8_t> d) { into.insert(into.end(), d.begin(), d.end()); });
    }

    // Forward: keeps each data stream topped up until -t ends, or (-n, -k,
    // -F) until the receiver acknowledged every byte (-F: of the file, if it
    // ends first); then FIN. A flow's pump can want more only once its
    // connection has had a turn (ACKs move its allowance, timers its window),
    // so each pass looks again at those connections alone: with -P 128,
    // polling all of them every pass cost a tenth of the CPU. -b's allowance
    // grows with time instead: then every flow is looked at.
    void send_phase() {
        const Instant end = base_.bytes ? kNever : start_ + from_seconds(base_.omit + base_.seconds);
        const unsigned n = o_.parallel;  // the forward flows are flows_[0, n)
        std::vector<char> acked(n, 0);   // all of a limited stream is
        unsigned acked_count = 0;
        for (Instant now = steady_now(); now < end; now = steady_now()) {
            tools::throw_if_interrupted();
            if (o_.bidir) (void)receive_progress(now);  // the server's direction meanwhile
            note_turns();
            for (unsigned i = 0; i < n; ++i) {
                if (acked[i] || (!send_look_[i] && !base_.bitrate)) continue;
                send_look_[i] = 0;
                Flow& f = flows_[i];
                const Connection& c = check_open(f, "during the test");
                const ConnectionStats st = c.stats(now);
                if (f.pump->limited() && f.pump->done() &&
                    (st.stream_bytes_acked >= f.pump->written() || report_in(f, c))) {
                    acked[i] = 1;
                    ++acked_count;
                    continue;
                }
                // Only a connection that takes more payload is reached through
                // connection(), which gives it a turn in the endpoint's next pass.
                if (f.pump->wants(c, f.data, st, now))
                    f.pump->pump(*ep_.connection(f.h), f.data, st, now);
            }
            if (acked_count == n) break;
            ep_.run_once(std::min({next_sample_, end, now + std::chrono::milliseconds(2)}));
            tick(steady_now());
        }
        if (secs(sample_begin_, steady_now()) > base_.interval / 10) sample(steady_now());
        const double sender_seconds = secs(start_, steady_now());
        for (Flow& f : flows_) {
            if (f.rev) continue;
            f.sent_seconds = sender_seconds;
            if (f.report_done) continue;  // our FIN is in, the stream is over
            // A no-op where the last byte carried the FIN already; an empty -F file gets it here.
            require_open(f, "during the test").finish(f.data);
        }
    }

    // Forward: whether the receiver's report, its answer to our FIN once it
    // has every byte, is in (read into f.report). It ends a limited send
    // phase as the ACK of our last byte does: that ACK may be lost, and the
    // receiver, holding our ACK of its report, is done (ndm-recv -1 exits).
    bool report_in(Flow& f, const Connection& look) {
        if (look.stream_readable(f.data) > 0) read_all(*ep_.connection(f.h), f.data, f.report);
        f.report_done = look.stream_finished(f.data);
        return f.report_done;
    }

    // Forward: each receiver answers our FIN with its report on the same
    // stream (--bidir: and the server's direction completes meanwhile).
    void collect_receiver_reports() {
        const bool got = tools::run_until(ep_,
            [&] {
                bool all = true;
                for (Flow& f : flows_) {
                    if (f.rev || f.report_done) continue;
                    const Connection* c = ep_.find(f.h);
                    if (!c || c->is_closed()) return true;
                    all = report_in(f, *c) && all;
                }
                return (!o_.bidir || receive_progress(steady_now())) && all;
            },
            std::chrono::seconds(30));
        for (Flow& f : flows_) {
            if (f.rev) continue;
            Connection* c = ep_.connection(f.h);
            if (!got || !c || !f.report_done)
                throw std::runtime_error(got ? fmt::format("connection {} lost before the receiver's report: {}",
                                                           f.index + 1, fail_reason(f.h))
                                             : "no report from the receiver within 30 s after the send phase");
            const tools::ReceiverReport rr = tools::decode_receiver_report(f.report);
            const ConnectionStats st = c->stats(steady_now());
            f.ecn = ecn_json(st);
            f.sent_total = f.pump->written();
            f.recv_total = rr.bytes;
            f.sent_bytes = st.stream_bytes_sent - std::min(f.omit_sent, st.stream_bytes_sent);
            f.retransmits = st.packets_retransmitted - std::min(f.omit_retx, st.packets_retransmitted);
            f.recv_bytes = rr.bytes - rr.omitted_bytes;
            f.recv_seconds = rr.seconds;
            f.remote_cpu = rr.cpu;
            f.receiver_cc = rr.cc;
            if (rr.checked_payload != base_.check_payload)
                throw std::runtime_error(fmt::format("connection {}: the receiver checked the data by {}, not as asked",
                                                     f.index + 1, rr.checked_payload ? "payload" : "hash"));
            f.mismatch_at = rr.mismatch_at;
            f.exact = rr.bytes == f.pump->written() &&
                      (rr.checked_payload ? rr.mismatch_at == tools::ReceiverReport::kNoMismatch
                                          : rr.hash == f.pump->digest());
            f.path = f.sampler.result();
        }
        if (o_.bidir) finish_reverse();
    }

    // Reverse: reads and hashes what arrived, and each server's report, on
    // the connections that had a turn since the last look (only they can
    // have more); true once every data stream and report is complete.
    bool receive_progress(Instant now) {
        bool all = true;
        note_turns();
        for (Flow& f : flows_) {
            if (!f.rev) continue;
            if (recv_look_[f.index]) {
                recv_look_[f.index] = 0;
                read_reverse(f, now);
            }
            all = all && f.report_done;
        }
        return all;
    }

    void read_reverse(Flow& f, Instant now) {
        const Connection& look = check_open(f, "during the test");
        // Reached through connection() only with something to read: that
        // gives it another turn (and so another look).
        if (look.stream_readable(kReverseData) > 0 || look.stream_readable(kReverseReport) > 0) {
            Connection& c = *ep_.connection(f.h);
            if (const std::size_t k = tools::drain(c, kReverseData, [&](std::span<const std::uint8_t> d) {
                    f.hash.update(d);
                    if (o_.recv_file) o_.recv_file->write(d);
                })) {
                f.received += k;
                f.last_byte = now;
            }
            read_all(c, kReverseReport, f.report);
        }
        f.data_done = look.stream_finished(kReverseData);
        f.report_done = f.data_done && look.stream_finished(kReverseReport);
    }

    // Reverse: until every server stream and report has arrived.
    void receive_phase() {
        const Instant limit = start_ + from_seconds((base_.bytes ? 3600 : base_.omit + base_.seconds) + 30);
        bool data_done = false;
        for (;;) {
            const Instant now = steady_now();
            const bool complete = receive_progress(now);
            // Once every data stream is read, the last interval ends at the
            // last byte (the reports may take a while longer).
            if (!data_done) {
                if (std::all_of(flows_.begin(), flows_.end(), [](const Flow& f) { return f.data_done; })) {
                    data_done = true;
                    Instant last = start_;
                    for (const Flow& f : flows_) last = std::max(last, f.last_byte);
                    if (secs(sample_begin_, last) > base_.interval / 10) sample(last);
                } else {
                    tick(now);
                }
            }
            if (complete) break;
            tools::throw_if_interrupted();
            if (now >= limit) throw std::runtime_error("the server did not finish within 30 s after the test time");
            ep_.run_once(std::min(next_sample_, now + std::chrono::milliseconds(50)));
        }
        finish_reverse();
    }

    // The closing numbers of the server's direction, from its reports.
    void finish_reverse() {
        for (Flow& f : flows_) {
            if (!f.rev) continue;
            if (const Connection* c = ep_.find(f.h)) f.ecn = ecn_json(c->stats(steady_now()));
            const tools::SenderReport sr = tools::decode_sender_report(f.report);
            f.sent_total = sr.bytes;
            f.recv_total = f.received;
            f.remote_cpu = sr.cpu;
            f.path = sr.path;
            f.sent_bytes = sr.bytes - sr.omitted_bytes;
            f.sent_seconds = sr.seconds;
            f.retransmits = sr.retransmits - sr.omitted_retransmits;
            f.recv_bytes = f.received - f.omit_received;
            f.recv_seconds = std::max(0.0, secs(start_, f.last_byte));
            f.exact = sr.bytes == f.received && sr.hash == f.hash.digest();
        }
    }

    // --get-server-output: the server's text or -J document, on the next
    // stream it opens on the first connection once every report is out.
    void collect_server_output() {
        const Flow& f = flows_.front();
        const StreamId id = o_.reverse || o_.bidir ? kReverseReport + 4 : kServerOutput;
        std::vector<std::uint8_t> got;
        bool finished = false;
        tools::run_until(ep_,
            [&] {
                Connection* c = ep_.connection(f.h);
                if (!c || c->is_closed()) return true;
                read_all(*c, id, got);
                finished = c->stream_finished(id);
                return finished || got.size() > tools::kMaxServerOutput;
            },
            std::chrono::seconds(10));
        if (got.size() > tools::kMaxServerOutput)
            throw std::runtime_error(fmt::format("the server's output exceeds {} bytes", tools::kMaxServerOutput));
        if (!finished) throw std::runtime_error("no server output within 10 s after the test: " + fail_reason(f.h));
        const std::string text(got.begin(), got.end());
        if (!o_.json) {
            server_output_ = tools::printable_lines(text);
            return;
        }
        server_output_json_ = json::parse(text, nullptr, false);
        if (server_output_json_.is_discarded() || !server_output_json_.is_object())
            throw std::runtime_error("the server's output is not a JSON document");
    }

    // --session-file: the newest ticket and token the server gave, for the next run.
    void save_session() {
        if (o_.session.file.empty() || (!kept_.ticket && kept_.token.empty())) return;
        try {
            kept_.save(o_.session.file);
        } catch (const std::runtime_error& e) {
            std::cerr << "ndm-send: " << e.what() << '\n';
        }
    }

    void close_all(const std::string& reason) {
        for (Flow& f : std::span(flows_).first(o_.parallel))  // one flow of each connection
            if (Connection* c = ep_.connection(f.h)) c->close(0, reason, steady_now());
        ep_.run_until(
            [&] {
                for (const Flow& f : flows_)
                    if (ep_.find(f.h) && !ep_.find(f.h)->is_closed()) return false;
                return true;
            },
            std::chrono::milliseconds(300));
    }

    // The test as its report reads it.
    [[nodiscard]] TestView view() const {
        return {o_,       base_,  flows_, ep_,  cfg_, mds_, handshake_, profile_name_, path_, intervals_,
                cpu_.percent(), server_output_, server_output_json_};
    }

    const Options& o_;
    const tools::TestParams& base_;
    const std::string profile_name_;
    json& intervals_;
    std::optional<tools::SharedEmuPath> path_;  // before cfg_: endpoint_config fills it
    const EndpointConfig cfg_;
    Endpoint ep_;
    std::vector<Flow> flows_;
    tools::SessionFile kept_;  // --session-file: what this run's connections were given
    // Which connections had a turn since they were last looked at (note_turns):
    // only those can have new data, acknowledgments or another state. By
    // connection index, one flag for each direction's loop.
    std::unordered_map<ConnectionHandle, unsigned> index_of_;
    std::vector<char> send_look_, recv_look_;
    std::size_t mds_ = 0;  // the negotiated max datagram size
    HandshakeSummary handshake_;
    std::string server_output_;  // --get-server-output, escaped
    json server_output_json_;    // --get-server-output with -J
    Instant start_{}, sample_begin_{}, next_sample_{};
    tools::CpuMeter cpu_;    // from the construction: the test's set-up included, as iperf3's
    bool omitting_ = false;  // within -O's first seconds
    Instant omit_end_{};
};

}  // namespace

int run_client(const Options& o, const TestParams& params, const std::optional<emu::Profile>& profile,
               nlohmann::json& intervals) {
    return Client(o, params, profile, intervals).run();
}

}  // namespace ndm::tools::send
