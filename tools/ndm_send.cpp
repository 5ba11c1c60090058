// ndm-send: the client of an iperf3-style throughput test over ndm (the server
// is ndm-recv). The test parameters travel in each connection's handshake
// application params. Forward (default): we send; the receiver's totals and
// its check of our payload (a hash of -F's file) come back on the test stream
// after our FIN. Reverse (-R): the server sends with the controller we name,
// and reports its totals and hash on a second stream once all data is
// acknowledged. Either way the closing lines show both sides and whether the
// data arrived byte-exact. -P N runs N connections at once (one test on the
// server) with [SUM] rows. --emu and --profile impair this socket's path
// (egress = up, ingress = down), like netem on the client's interface: one
// path, shared by the -P connections.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cc_plugins.hpp"
#include "common/cli.hpp"
#include "common/cpu_meter.hpp"
#include "common/emu_path.hpp"
#include "common/emu_summary.hpp"
#include "common/endpoint_summary.hpp"
#include "common/file_io.hpp"
#include "common/idle_timeout.hpp"
#include "common/interrupt.hpp"
#include "common/logging.hpp"
#include "common/output.hpp"
#include "common/iperf_output.hpp"
#include "common/perf_session.hpp"
#include "common/provenance.hpp"
#include "common/printable.hpp"
#include "common/ack_frequency_flag.hpp"
#include "common/ack_ranges_flag.hpp"
#include "common/loss_detection_flag.hpp"
#include "common/receive_budget_flag.hpp"
#include "common/tls_flags.hpp"
#include "common/units.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/qlog.hpp"
#include "ndm/version.hpp"
#include "ndm/workload.hpp"

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
    unsigned parallel = 1;
    bool reverse = false;
    bool bidir = false;  // --bidir
    std::string window;  // -w
    bool server_output = false;  // --get-server-output
    bool json = false;
    std::string qlog;  // directory
    std::uint64_t seed = 1;
    std::string io = "auto";
    std::chrono::system_clock::time_point started{};  // for the -J provenance record
    double idle_timeout = tools::kDefaultIdleTimeoutSeconds;
    tools::ClientTlsFlags tls_flags;
    TlsOptions tls;  // from tls_flags, checked before any packet is sent
    bool no_gso = false;
    bool no_ecn = false;
    LossDetection loss_detection = LossDetection::adaptive;
    std::size_t ack_ranges = 32;  // --ack-ranges: of the ACKs this side sends (-R, --bidir)
    bool ack_frequency = false;   // --ack-frequency
    std::string receive_budget;   // --receive-budget
    std::vector<std::string> plugins;  // --cc-plugin
    std::string bitrate;  // -b RATE[/BURST]
    bool udp = false;     // -u: refused
    std::uint32_t connect_timeout_ms = 5000;  // --connect-timeout
    double omit = 0;      // -O seconds
    tools::OutputFlags output;  // -T, --logfile, --forceflush
    bool ipv4 = false, ipv6 = false;
    std::string bind;            // -B: local address ("" = any, dual-stack)
    std::uint16_t cport = 0;     // --cport: local port (0 = ephemeral)
    std::uint64_t blocks = 0;    // -k: blocks of tools::kBlockSize
    bool verbose = false;        // -V
    std::string file;            // -F
    // -F's file, opened before any packet is sent: the one we send, or (-R) the one we write.
    std::shared_ptr<const tools::FileSource> send_file;
    std::shared_ptr<tools::FileSink> recv_file;
};

// Reverse mode: the server's streams (server-initiated bidirectional IDs,
// RFC 9000 §2.1): the first carries the data, the second its report.
constexpr StreamId kReverseData = 1;
constexpr StreamId kReverseReport = 5;
// --get-server-output: the server's first stream in a forward test; in -R
// and --bidir the next one (+4) after kReverseReport.
constexpr StreamId kServerOutput = 1;

using tools::id_label;
using tools::rate;
using tools::secs;
using tools::sum_json;

// One connection of the test.
// One direction of one connection: -R and forward tests have one flow a
// connection; --bidir two (the second, `rev`, the server's sending), sharing it.
struct Flow {
    unsigned index = 0;
    bool rev = false;  // the server sends (-R, or --bidir's second flow)
    ConnectionHandle h = 0;
    tools::TestParams params;
    StreamId data = 0;  // forward: our stream (also carries the report back)
    std::unique_ptr<tools::PayloadPump> pump;  // forward
    workload::StreamHash hash;                 // reverse: what we read
    std::uint64_t received = 0;
    Instant last_byte{};
    std::vector<std::uint8_t> report;
    bool data_done = false;    // reverse: the server's data stream, FIN included, is read
    bool report_done = false;  // the other side's report is read (reverse: after all its data)
    std::uint64_t prev_bytes = 0, prev_retx = 0;  // at the last interval boundary
    std::uint64_t omit_sent = 0, omit_retx = 0, omit_received = 0;  // at the end of the -O period
    // Forward: the smoothed RTT (µs) and cwnd at the interval ends, for
    // iperf3's per-stream min/mean/max_rtt and max_snd_cwnd.
    tools::PathSampler sampler;
    std::optional<tools::SenderPath> path;  // at the end: ours, or (-R) from the server's report
    tools::RemoteCpu remote_cpu;  // from the other side's report
    std::string receiver_cc;      // forward: the server's controller, from its report

    // Closing numbers, without the -O period; the totals decide byte-exactness.
    std::uint64_t sent_bytes = 0, retransmits = 0, recv_bytes = 0;
    std::uint64_t sent_total = 0, recv_total = 0;
    double sent_seconds = 0, recv_seconds = 0;
    bool exact = false;
    std::uint64_t mismatch_at = tools::ReceiverReport::kNoMismatch;  // forward, checked payload: the first differing byte
    nlohmann::json ecn;  // this side's ECN counts at the end (RFC 9000 §13.4)
};

// Why a connection's data was not byte-exact.
std::string inexact_reason(const Flow& f) {
    if (f.recv_total != f.sent_total)
        return fmt::format("connection {}: the receiver read {} bytes of {} sent", f.index + 1, f.recv_total,
                           f.sent_total);
    if (f.mismatch_at != tools::ReceiverReport::kNoMismatch)
        return fmt::format("connection {}: the received data differs from what was sent from byte {} on", f.index + 1,
                           f.mismatch_at);
    return fmt::format("connection {}: the received data differs from what was sent (hash mismatch)", f.index + 1);
}

// The closing numbers of all connections and the verdict.
struct Totals {
    std::uint64_t sent = 0, recv = 0, retr = 0;
    double sent_s = 0, recv_s = 0;
    bool all_exact = true;
    std::string error;  // the first connection's failure, empty when all were byte-exact
};

// The client of one test, everything after argument checking: connects the
// -P connections, runs the send phase (forward) or the receive phase (-R),
// collects the other side's reports, closes, and prints the text or the -J
// document. Throws std::runtime_error on a failed test, with the -J interval
// records made so far in `intervals`.
class Client {
public:
    Client(const Options& o, const tools::TestParams& base, const std::optional<emu::Profile>& profile, json& intervals)
        : o_(o), base_(base), profile_name_(profile ? profile->name : "none"), intervals_(intervals),
          cfg_(endpoint_config(o, profile, path_)), ep_(cfg_), flows_(o.parallel * (o.bidir ? 2 : 1)) {}

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
        if (o_.json) {
            print_json();
        } else {
            print_text();
        }
        for (const bool rev : directions())
            if (const Totals t = totals(rev); !t.error.empty()) {
                std::cerr << "ndm-send: " << t.error << '\n';
                return 1;
            }
        return 0;
    }

    // path: where the shared emulated path is kept (its stats are printed at the end).
    static EndpointConfig endpoint_config(const Options& o, const std::optional<emu::Profile>& profile,
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
        cfg.connection.idle_timeout = tools::idle_timeout_duration(o.idle_timeout);
        cfg.connection.tls = o.tls;
        cfg.gso = cfg.gro = !o.no_gso;
        cfg.connection.ecn = !o.no_ecn;
        cfg.connection.loss_detection = o.loss_detection;
        cfg.connection.max_ack_ranges = o.ack_ranges;
        cfg.connection.ack_frequency = o.ack_frequency;
        tools::apply_receive_budget(o.receive_budget, cfg);
        cfg.qlog_dir = o.qlog;
        // The -P connections share one emulated path per direction, as they would share a bottleneck.
        if (profile) path = tools::share_emulated_path(cfg, *profile, o.seed);
        return cfg;
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
        if (!o_.json) print_header();
    }

    // Flags the connections that had a turn since the last call for both loops.
    void note_turns() {
        for (const ConnectionHandle h : ep_.take_turned())
            if (const auto it = index_of_.find(h); it != index_of_.end()) send_look_[it->second] = recv_look_[it->second] = 1;
    }

    void print_header() const {
        const bool rev = o_.reverse;
        const unsigned n = o_.parallel;
        for (const Flow& f : std::span(flows_).first(n))
            std::cout << fmt::format("{} local {} connected to {} port {} ({})\n", id_label(f.index), ep_.local_address(),
                                     o_.host, o_.port, to_string(ep_.backend()));
        std::cout << fmt::format("[  *] controller {}{}, profile {}, packet size {} bytes{}\n", o_.cc,
                                 rev ? " (on the server)" : "", profile_name_, mds_,
                                 n > 1 ? fmt::format(", {} parallel connections", n) : "")
                  << (o_.verbose ? verbose_header() : std::string())
                  << (rev ? "[ ID] Interval           Transfer     Bitrate\n"
                          : fmt::format("[ ID]{} Interval           Transfer     Bitrate         Retr  Cwnd\n",
                                        o_.bidir ? "[Role]" : ""))
                  << std::flush;
    }

    // -V: the test parameters, the controller and what the handshake settled, as iperf3's -V.
    [[nodiscard]] std::string verbose_header() const {
        const cc::Entry entry = cc::parse_entry(o_.cc);
        return fmt::format("Starting Test: protocol: NDM, {} streams, {} byte packets, omitting {:g} seconds, {}{}\n"
                           "Controller: {}{}{}\n"
                           "TLS: TLS 1.3, {}, ALPN {}, QUIC version 0x{:08x}{}\n",
                           o_.parallel, mds_, base_.omit,
                           base_.bytes ? fmt::format("{} bytes to send", base_.bytes)
                                       : fmt::format("{:g} second test", base_.seconds),
                           base_.bitrate ? fmt::format(", target {}", tools::format_bitrate(static_cast<double>(base_.bitrate))) : "",
                           entry.name, entry.options.empty() ? "" : " (" + entry.options + ")",
                           o_.reverse ? " on the server (reverse mode)" : "", handshake_.cipher_suite, handshake_.alpn,
                           handshake_.version, handshake_.retry ? ", after a Retry" : "");
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

    // The directions of this test's flows: false = we send, true = the server sends.
    [[nodiscard]] std::vector<bool> directions() const {
        if (o_.bidir) return {false, true};
        return {o_.reverse};
    }
    // iperf3's row label: "[  1]", with --bidir "[  1][TX-C]" / "[  1][RX-C]".
    [[nodiscard]] std::string label(const std::string& id, bool rev) const {
        return id + (o_.bidir ? (rev ? "[RX-C]" : "[TX-C]") : "");
    }
    // The -J key of a direction's sums: iperf3's --bidir suffixes the server's direction.
    [[nodiscard]] std::string sum_key(const std::string& key, bool rev) const {
        return o_.bidir && rev ? key + "_bidir_reverse" : key;
    }

    // One flow's numbers over an interval.
    using Row = tools::SenderRow;
    Row measure(Flow& f, Instant now) {
        return tools::flow_interval(!f.rev, ep_.find(f.h), now, f.received, f.prev_bytes, f.prev_retx, f.sampler);
    }

    [[nodiscard]] std::string row_text(const std::string& id, bool rev, double b, double e, const Row& r) const {
        if (rev)
            return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}{}\n", label(id, rev), b, e,
                               tools::format_bytes(r.bytes), tools::format_bitrate(rate(r.bytes, e - b)), omitted_note());
        // [SUM] rows have no cwnd column, as iperf3's.
        return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}{}{}\n", label(id, rev), b, e,
                           tools::format_bytes(r.bytes), tools::format_bitrate(rate(r.bytes, e - b)), r.retr,
                           id == "[SUM]" ? "" : fmt::format("  {:>12}", tools::format_cwnd(r.cwnd)), omitted_note());
    }

    // One interval row per flow (and [SUM] per direction), or its -J record.
    void sample(Instant now) {
        const double b = secs(start_, sample_begin_), e = secs(start_, now);
        json streams = json::array();
        Row sum[2];  // by direction
        for (Flow& f : flows_) {
            const Row r = measure(f, now);
            sum[f.rev].bytes += r.bytes;
            sum[f.rev].retr += r.retr;
            if (!o_.json) {
                std::cout << row_text(id_label(f.index), f.rev, b, e, r);
                continue;
            }
            json s = sum_json(b, e, r.bytes, f.rev ? std::nullopt : std::optional(r.retr), !f.rev);
            s["socket"] = f.index + 1;
            s["omitted"] = omitting_;
            if (!f.rev) {
                s["snd_cwnd"] = r.cwnd;
                s["rtt"] = std::chrono::duration_cast<std::chrono::microseconds>(r.srtt).count();
                s["rttvar"] = std::chrono::duration_cast<std::chrono::microseconds>(r.rttvar).count();
            }
            streams.push_back(s);
        }
        json record = {{"streams", streams}};
        for (const bool rev : directions()) {
            if (o_.json) {
                json j = sum_json(b, e, sum[rev].bytes, rev ? std::nullopt : std::optional(sum[rev].retr), !rev);
                j["omitted"] = omitting_;
                record[sum_key("sum", rev)] = j;
            } else if (o_.parallel > 1) {
                std::cout << row_text("[SUM]", rev, b, e, sum[rev]);
            }
        }
        if (o_.json) intervals_.push_back(record);
        if (!o_.json && o_.parallel > 1) std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
        // As iperf3: rows reach a pipe or a file as the buffer fills, or
        // every interval with --forceflush (a terminal gets every line).
        if (o_.output.force_flush) std::cout << std::flush;
        sample_begin_ = now;
    }

    // iperf3's -O: the omitted period's rows are marked, then the clock and
    // the totals start again from its end.
    [[nodiscard]] std::string omitted_note() const { return omitting_ ? "  (omitted)" : ""; }
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

    // The closing numbers of one direction (`rev`: the server's).
    [[nodiscard]] Totals totals(bool rev) const {
        Totals t;
        for (const Flow& f : flows_) {
            if (f.rev != rev) continue;
            t.sent += f.sent_bytes;
            t.recv += f.recv_bytes;
            t.retr += f.retransmits;
            t.sent_s = std::max(t.sent_s, f.sent_seconds);
            t.recv_s = std::max(t.recv_s, f.recv_seconds);
            t.all_exact = t.all_exact && f.exact;
            if (!f.exact && t.error.empty()) t.error = inexact_reason(f);
        }
        return t;
    }

    // The -J document: iperf3's start/intervals/end shape (docs/ndm-send-json.md).
    void print_json() const {
        const bool rev = o_.reverse;
        json j;
        j["provenance"] = tools::provenance_json(o_.started);
        json connected = json::array();
        for (const Flow& f : std::span(flows_).first(o_.parallel))
            connected.push_back({{"socket", f.index + 1}, {"local_host", ep_.local_address()},
                                 {"local_port", ep_.local_port()}, {"remote_host", o_.host}, {"remote_port", o_.port}});
        const Provenance prov = provenance(o_.started);
        j["start"] = {{"connecting_to", {{"host", o_.host}, {"port", o_.port}}},
                      {"timestamp", tools::timestamp_json(o_.started)},
                      {"system_info", prov.host + " " + prov.kernel},
                      {"cookie", fmt::format("{:016x}", flows_.front().params.test_id)},
                      {"sock_bufsize", base_.window},
                      {"rcvbuf_actual", cfg_.connection.initial_max_stream_data},
                      {"sndbuf_actual", cfg_.connection.stream_send_buffer},
                      {"target_bitrate", base_.bitrate},
                      {"connected", connected},
                      {"version", "ndm-send"},
                      {"test_start",
                       {{"protocol", "NDM"}, {"num_streams", o_.parallel}, {"blksize", mds_}, {"omit", base_.omit},
                        {"duration", base_.seconds}, {"bytes", base_.bytes}, {"blocks", o_.blocks},
                        {"reverse", rev ? 1 : 0}, {"bidir", o_.bidir ? 1 : 0}, {"target_bitrate", base_.bitrate}}},
                      {"congestion_control", o_.cc},
                      {"profile", profile_name_},
                      {"io", to_string(ep_.backend())}};
        j["intervals"] = intervals_;
        json streams = json::array();
        for (const Flow& f : flows_) {
            json s = sum_json(0, f.sent_seconds, f.sent_bytes, f.retransmits, !f.rev);
            json r = sum_json(0, f.recv_seconds, f.recv_bytes, std::nullopt, !f.rev);
            s["socket"] = r["socket"] = f.index + 1;
            if (f.path) {
                s["max_snd_cwnd"] = f.path->max_cwnd;
                s["min_rtt"] = f.path->rtt_min;
                s["max_rtt"] = f.path->rtt_max;
                s["mean_rtt"] = f.path->rtt_mean;
            }
            r["drain_seconds"] = tools::drain_seconds(f.sent_seconds, f.recv_seconds);
            streams.push_back({{"sender", s}, {"receiver", r}, {"byte_exact", f.exact}, {"ecn", f.ecn}});
        }
        j["end"] = {{"streams", streams},
                    {"sender_congestion", o_.cc},
                    {"receiver_congestion", receiver_cc()},
                    // iperf3's names of the same two, for its scripts (docs/ndm-send-json.md).
                    {"sender_tcp_congestion", o_.cc},
                    {"receiver_tcp_congestion", receiver_cc()},
                    {"cpu_utilization_percent", cpu_json()},
                    {"endpoint", tools::endpoint_summary_json(ep_.stats())}};
        bool exact = true;
        std::string error;
        for (const bool d : directions()) {
            const Totals t = totals(d);
            json sum_received = sum_json(0, t.recv_s, t.recv, std::nullopt, !d);
            sum_received["drain_seconds"] = tools::drain_seconds(t.sent_s, t.recv_s);
            j["end"][sum_key("sum_sent", d)] = sum_json(0, t.sent_s, t.sent, t.retr, !d);
            j["end"][sum_key("sum_received", d)] = sum_received;
            exact = exact && t.all_exact;
            if (error.empty()) error = t.error;
        }
        j["end"]["byte_exact"] = exact;
        if (path_)
            j["end"]["emulator"] = {{"up", tools::emu_summary_json(path_->egress->link().emu_stats())},
                                    {"down", tools::emu_summary_json(path_->ingress->link().emu_stats())}};
        if (!server_output_json_.is_null()) j["server_output_json"] = server_output_json_;
        if (!error.empty()) j["error"] = error;
        if (!o_.output.title.empty()) j["title"] = o_.output.title;
        std::cout << j.dump(2) << '\n';
    }

    // This side's ECN view of a connection: validation state, the ECT(0)
    // packets it marked, the codepoints it received and the CE marks the peer
    // reported in ACK_ECN frames.
    static json ecn_json(const ConnectionStats& st) {
        return {{"state", to_string(st.ecn_state)},
                {"ect0_sent", st.ecn_ect0_sent},
                {"ce_reported_by_peer", st.ecn_ce_reported},
                {"ect0_received", st.ecn_ect0_received},
                {"ect1_received", st.ecn_ect1_received},
                {"ce_received", st.ecn_ce_received}};
    }

    // The receiving side's controller: ours in -R, else the server's, from its report.
    [[nodiscard]] std::string receiver_cc() const {
        return o_.reverse ? cc::parse_entry(o_.cc).name : flows_.front().receiver_cc;
    }

    // This process over the test, and the server's (the busiest of its reports).
    struct Cpu {
        tools::CpuPercent host;
        tools::RemoteCpu remote;
    };
    [[nodiscard]] Cpu cpu() const {
        Cpu c{cpu_.percent(), {}};
        for (const Flow& f : flows_)
            if (f.remote_cpu.user + f.remote_cpu.system > c.remote.user + c.remote.system) c.remote = f.remote_cpu;
        return c;
    }

    // iperf3's cpu_utilization_percent.
    [[nodiscard]] json cpu_json() const {
        const Cpu c = cpu();
        return {{"host_total", c.host.total},
                {"host_user", c.host.user},
                {"host_system", c.host.system},
                {"remote_total", c.remote.user + c.remote.system},
                {"remote_user", c.remote.user},
                {"remote_system", c.remote.system}};
    }

    // The closing sender and receiver lines, as iperf3's.
    void print_text() const {
        auto sender_line = [](const std::string& id, double s, std::uint64_t bytes, std::uint64_t retr) {
            return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}             sender\n", id, 0.0, s,
                               tools::format_bytes(bytes), tools::format_bitrate(rate(bytes, s)), retr);
        };
        auto receiver_line = [](const std::string& id, double sent_s, double s, std::uint64_t bytes, bool exact) {
            return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}                   receiver{}  ({})\n", id, 0.0, s,
                               tools::format_bytes(bytes), tools::format_bitrate(rate(bytes, s)),
                               exact ? "  (byte-exact)" : "", tools::drain_text(sent_s, s));
        };
        std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
                  << fmt::format("[ ID]{} Interval           Transfer     Bitrate         Retr\n", o_.bidir ? "[Role]" : "");
        for (const Flow& f : flows_) {
            const std::string id = label(id_label(f.index), f.rev);
            std::cout << sender_line(id, f.sent_seconds, f.sent_bytes, f.retransmits)
                      << receiver_line(id, f.sent_seconds, f.recv_seconds, f.recv_bytes, f.exact);
        }
        for (const bool d : directions()) {
            if (o_.parallel == 1) break;
            const Totals t = totals(d);
            std::cout << sender_line(label("[SUM]", d), t.sent_s, t.sent, t.retr)
                      << receiver_line(label("[SUM]", d), t.sent_s, t.recv_s, t.recv, t.all_exact);
        }
        if (path_) std::cout << tools::emu_summary_text(path_->egress->link().emu_stats(), path_->ingress->link().emu_stats());
        if (o_.verbose) {  // iperf3 -V's closing lines
            const Cpu c = cpu();
            const bool rev = o_.reverse;
            std::cout << fmt::format("CPU Utilization: local/{} {:.1f}% ({:.1f}%u/{:.1f}%s), remote/{} {:.1f}% ({:.1f}%u/{:.1f}%s)\n",
                                     rev ? "receiver" : "sender", c.host.total, c.host.user, c.host.system,
                                     rev ? "sender" : "receiver", c.remote.user + c.remote.system, c.remote.user,
                                     c.remote.system)
                      << fmt::format("snd_congestion {}\nrcv_congestion {}\n", o_.cc, receiver_cc())
                      << tools::endpoint_summary_text(ep_.stats());
        }
        if (!server_output_.empty()) std::cout << "\nServer output:\n" << server_output_;
        std::cout << "\nndm-send done.\n";
    }

    const Options& o_;
    const tools::TestParams& base_;
    const std::string profile_name_;
    json& intervals_;
    std::optional<tools::SharedEmuPath> path_;  // before cfg_: endpoint_config fills it
    const EndpointConfig cfg_;
    Endpoint ep_;
    std::vector<Flow> flows_;
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

// The flags in iperf3 3.12's --help order (general, then client), ndm's own after them.
void add_options(CLI::App& app, Options& o, std::string& profile_name) {
    app.add_option("-p,--port", o.port, "server UDP port (1..65535)")
        ->capture_default_str()
        ->check(tools::port_number(false));
    app.add_option("--cport", o.cport, "local UDP port (0..65535; default 0: ephemeral); the -P connections share it, "
                                       "as they share one socket")
        ->check(tools::port_number(true));
    app.add_option("-i,--interval", o.interval, "seconds between interval reports")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0.1, 60, "seconds"));
    app.add_option("-F,--file", o.file,
                   "send this file's bytes instead of generated data (the test ends with the file unless -t/-n/-k "
                   "end it first; a regular file: a FIFO or device is refused, as lost bytes are read again at "
                   "their offset); with -R, write what is received to it (created or truncated; a FIFO is written "
                   "once a reader opens it, waited for up to --connect-timeout). One connection (-P 1) and one "
                   "direction only, as the file has one offset");
    app.add_option("-B,--bind", o.bind,
                   "numeric local address to send from (default: any, dual-stack; unlike iperf3's -B, not a host name)");
    app.add_flag("-V,--verbose", o.verbose,
                 "also print the test parameters, controller and TLS parameters at the start, both sides' CPU "
                 "use and controllers at the end (as iperf3's -V), and this socket's totals (datagrams sent in how many "
                 "send calls, received; service passes)");
    app.add_flag("-J,--json", o.json, "print one JSON document (iperf3's start/intervals/end shape) instead of text");
    tools::add_output_flags(app, o.output);
    tools::add_idle_timeout_option(app, o.idle_timeout);
    tools::add_version_flag(app, "ndm-send");
    app.add_option("-c,--client", o.host,
                   "server: a host name (looked up once; the first address is used, with -4/-6 the first of that "
                   "family: QUIC cannot fall back to the next as iperf3's TCP connect does; one that does not "
                   "resolve exits 1) or a numeric IPv4/IPv6 address")
        ->required();
    app.add_flag("-u,--udp", o.udp, "not available: ndm is a reliable transport (see the message)");
    app.add_option("--connect-timeout", o.connect_timeout_ms,
                   "milliseconds the handshake may take, Retries and lost Initials included, before the test "
                   "fails (100..600000; iperf3's default is the kernel's TCP connect timeout)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(100, 600000, "milliseconds"));
    app.add_option("-b,--bitrate", o.bitrate,
                   "target bitrate per connection in bits/s, K/M/G/T decimal as iperf3's (e.g. 20M), optionally "
                   "/BURST: write BURST blocks of 128 KiB at a time; the application paces its writes, so the "
                   "flow is application-limited (default: unlimited, as iperf3's TCP)");
    auto* t = app.add_option("-t,--time", o.seconds, "seconds to send")
                  ->capture_default_str()
                  ->check(ndm::tools::number_in(0.1, 86400, "seconds"));
    auto* n = app.add_option("-n,--bytes", o.bytes, "bytes to send instead of a time (K/M/G/T suffixes, binary; at most 1024T)")
                  ->check(tools::size_in(1, tools::kMaxTestBytes));
    t->excludes(n);
    auto* k = app.add_option("-k,--blockcount", o.blocks,
                             "blocks to send instead of a time; an ndm block is 128 KiB (iperf3's TCP default "
                             "length; ndm's -l is the datagram size, not a block)")
                  ->check(ndm::tools::integer_in(1, tools::kMaxTestBytes / tools::kBlockSize, "blocks of 128 KiB"));
    k->excludes(t);
    k->excludes(n);
    app.add_option("-l,--length", o.packet_size, "max datagram size in bytes (1200..65507)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(kMinDatagramSize, kMaxDatagramSize, "bytes"));
    app.add_option("-P,--parallel", o.parallel, "parallel connections (1..128), one test on the server")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(1, tools::kMaxParallel));
    auto* rev = app.add_flag("-R,--reverse", o.reverse, "reverse mode: the server sends (with -C's controller), we receive");
    app.add_flag("--bidir", o.bidir,
                 "both directions at once: each connection carries our stream and the server's (QUIC streams "
                 "are bidirectional, so --bidir needs no second connection, unlike iperf3's); both senders run "
                 "-C's controller; rows tagged [TX-C]/[RX-C]")
        ->excludes(rev);
    app.add_option("-w,--window", o.window,
                   "flow-control window (K/M/G binary, 16K..1G): the connection's and each stream's receive "
                   "window (initial_max_data, initial_max_stream_data), fixed (no auto-tuning, as a socket buffer "
                   "iperf3's -w sets), on both sides. The server applies it after the handshake with "
                   "MAX_DATA/MAX_STREAM_DATA: its first flight's credit is 16 KiB (default: 16 MiB a stream, 32 MiB "
                   "a connection, auto-tuned up to 4x)")
        ->check(tools::size_in(tools::kMinWindow, tools::kMaxWindow));
    app.add_flag("-4,--version4", o.ipv4, "IPv4 only: the server address must be IPv4")->excludes(
        app.add_flag("-6,--version6", o.ipv6, "IPv6 only: the server address must be IPv6"));
    auto* omit = app.add_option("-O,--omit", o.omit,
                                "omit the first N seconds from the totals (sent in addition to -t, rows marked "
                                "(omitted)), e.g. to leave out slow start; with -t only, not -n")
                     ->check(ndm::tools::number_in(0, tools::kMaxOmit, "seconds"));
    omit->excludes(n);
    omit->excludes(k);
    app.add_option("-C,--congestion", o.cc,
                   "congestion controller of the sending side: reno, cubic, bbr, bbr1, ndm, ndm-cubic, ndm-lkm or a registered "
                   "name, with options after colons, e.g. bbr:beta=0.8:headroom=0.1 (in -R the server runs it)")
        ->capture_default_str();
    app.add_flag("--get-server-output", o.server_output,
                 "print the server's output (its rows and closing lines; with -J its document, as "
                 "server_output_json) after ours");
    auto* e = app.add_option("--emu", o.emu,
                             "impair this socket's path with an emulator spec, e.g. \"delay=50ms,jitter=20ms,loss=5%\" "
                             "(egress = up, ingress = down; keys: docs/emulator.md, e.g. outage=3s@2s for a 3 s "
                             "blackhole 2 s in); the -P connections share this one path per direction, "
                             "as they would share a bottleneck (-P 2 with rate=20mbit: 20 Mbit/s together)");
    auto* p = app.add_option("--profile", profile_name, "impair with an emulator preset (ndm-compare --list-profiles)");
    e->excludes(p);
    app.add_option("--qlog", o.qlog, "write one qlog file (JSON-SEQ, for qvis) per connection into this directory");
    app.add_option("--seed", o.seed, "payload, connection ID and emulator seed")->capture_default_str();
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    tools::add_client_tls_flags(app, o.tls_flags);
    tools::add_no_gso_flag(app, o.no_gso);
    tools::add_no_ecn_flag(app, o.no_ecn);
    tools::add_loss_detection_option(app, o.loss_detection);
    tools::add_ack_ranges_option(app, o.ack_ranges);
    tools::add_ack_frequency_flag(app, o.ack_frequency);
    tools::add_receive_budget_option(app, o.receive_budget);
    tools::add_cc_plugin_option(app, o.plugins);  // ndm-recv needs it too: it checks the name, and in -R runs it
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    Options o;
    std::string profile_name;
    CLI::App app{
        "ndm-send: the client of an iperf3-style throughput test over ndm (the server is ndm-recv).\n"
        "Prints per-interval Transfer/Bitrate/Retr/Cwnd rows and the closing sender and receiver lines; the\n"
        "other side's totals and its check of the data come back over the connection (byte-exactness: the\n"
        "receiver compares the generated payload with its generator, or a hash of -F's file or -R's data).\n"
        "Exit status: 0 when the test completed byte-exact; 1 when it failed or was interrupted (Ctrl-C or\n"
        "SIGTERM close the connections with a reason, so ndm-recv ends the test at once); 2 for bad input.",
        "ndm-send"};
    add_options(app, o, profile_name);
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-send")) return *rc;
    if (o.udp) {
        std::cerr << "ndm-send: -u: ndm is a reliable transport (QUIC streams deliver every byte, in order), so "
                     "there is no UDP test; for an app-limited flow use -b RATE, for loss use --emu loss=N%, "
                     "for a raw UDP test use iperf3 -u\n";
        return 2;
    }

    tools::TestParams params;
    params.omit = o.omit;
    std::optional<emu::Profile> profile;
    std::optional<tools::OutputRedirect> output;  // std::cout's lines go through it until the end of main
    try {  // bad input: one line, exit code 2, before any packet is sent
        output.emplace(o.json ? "" : o.output.title, o.output.logfile, o.output.force_flush);
        (void)parse_io_backend(o.io);
        tools::apply_address_family(o.ipv4, o.ipv6, o.host, o.bind);
        check_host(o.host, "--client");
        if (!o.bind.empty()) check_numeric_address(o.bind, "--bind");
        tools::load_cc_plugins(o.plugins);
        cc::Params cp;
        cp.max_datagram_size = o.packet_size;
        const cc::Entry entry = cc::parse_entry(o.cc);
        (void)cc::make(entry.name, cp, entry.options);
        if (!o.emu.empty()) profile = emu::parse_profile(o.emu);
        if (!profile_name.empty()) profile = emu::parse_profile(profile_name);
        if (!o.qlog.empty()) (void)qlog::file_observer(o.qlog);  // creates the directory or names the problem
        o.tls = tools::client_tls(o.tls_flags);
        params.cc = entry.name;
        params.cc_options = entry.options;
        params.packet_size = o.packet_size;
        params.interval = o.interval;
        params.seed = o.seed;
        params.reverse = o.reverse;
        params.bidir = o.bidir;
        // Our stream is the generated payload unless -F sends a file: the
        // receiver checks it against the generator, we hash nothing.
        params.check_payload = !o.reverse && o.file.empty();
        if (!o.window.empty()) params.window = tools::parse_size(o.window);
        if (o.server_output)
            params.server_output = o.json ? tools::TestParams::ServerOutput::json : tools::TestParams::ServerOutput::text;
        if (!o.bitrate.empty()) {
            const tools::Bitrate b = tools::parse_bitrate(o.bitrate);
            params.bitrate = b.bits_per_second;
            params.burst = b.burst;
        }
        if (o.blocks) {
            params.bytes = o.blocks * tools::kBlockSize;  // within kMaxTestBytes: checked by -k's range
            params.seconds = 0;
        } else if (!o.bytes.empty()) {
            params.bytes = tools::parse_size(o.bytes);  // within 1..kMaxTestBytes: checked by size_in
            params.seconds = 0;
        } else {
            params.seconds = o.seconds;
        }
        params.streams = o.parallel;
        if (!o.file.empty()) {
            if (o.parallel > 1) throw std::invalid_argument("-F sends or writes one file: use it with -P 1");
            if (o.bidir) throw std::invalid_argument("-F sends or writes one file: not with --bidir");
            if (o.reverse) {
                // A FIFO is written once its reader opens it: waited for as
                // long as a handshake may take, and said.
                const Duration wait = std::chrono::milliseconds(o.connect_timeout_ms);
                try {
                    o.recv_file = std::make_shared<tools::FileSink>(o.file, wait, [&] {
                        std::cerr << fmt::format("ndm-send: -F {}: waiting up to {:g} s (--connect-timeout) for a reader "
                                                 "to open the FIFO\n",
                                                 o.file, to_seconds(wait))
                                  << std::flush;
                    });
                } catch (const std::runtime_error& e) {  // no reader came: a runtime failure
                    std::cerr << "ndm-send: " << e.what() << '\n';
                    return 1;
                }
            } else {
                o.send_file = std::make_shared<tools::FileSource>(o.file);
            }
        }
        tools::validate(params);  // the bounds ndm-recv applies to what arrives in the hello
    } catch (const std::exception& ex) {
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 2;
    }
    o.started = std::chrono::system_clock::now();
    tools::catch_interrupts();
    json intervals = json::array();
    try {
        return Client(o, params, profile, intervals).run();
    } catch (const std::exception& ex) {  // connection failures, EndpointError
        // -J: a document still, with an "error" key as iperf3's (docs/ndm-send-json.md).
        if (o.json) {
            json doc = tools::failure_json(tools::provenance_json(o.started), intervals, ex.what());
            if (!o.output.title.empty()) doc["title"] = o.output.title;
            std::cout << doc.dump(2) << '\n';
        }
        std::cerr << "ndm-send: " << ex.what() << '\n';
        return 1;
    }
}
