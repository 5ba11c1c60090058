#include "tools/perf/send_report.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "ndm/cc.hpp"
#include "ndm/version.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"
#include "tools/emu/summary.hpp"
#include "tools/perf/endpoint_summary.hpp"
#include "tools/perf/iperf_output.hpp"

namespace ndm::tools::send {

using nlohmann::json;

namespace {

// iperf3's row label: "[  1]", with --bidir "[  1][TX-C]" / "[  1][RX-C]".
std::string label(const Options& o, const std::string& id, bool rev) {
    return id + (o.bidir ? (rev ? "[RX-C]" : "[TX-C]") : "");
}

// The -J key of a direction's sums: iperf3's --bidir suffixes the server's direction.
std::string sum_key(const Options& o, const std::string& key, bool rev) {
    return o.bidir && rev ? key + "_bidir_reverse" : key;
}

// Why a connection's data was not byte-exact.
std::string inexact_reason(const Flow& f) {
    if (f.recv_total != f.sent_total)
        return fmt::format("connection {}: the receiver read {} bytes of {} sent", f.index + 1, f.recv_total,
                           f.sent_total);
    if (f.mismatch_at != ReceiverReport::kNoMismatch)
        return fmt::format("connection {}: the received data differs from what was sent from byte {} on", f.index + 1,
                           f.mismatch_at);
    return fmt::format("connection {}: the received data differs from what was sent (hash mismatch)", f.index + 1);
}

// -V: the test parameters, the controller and what the handshake settled, as iperf3's -V.
std::string verbose_header(const TestView& t) {
    const Options& o = t.o;
    const cc::Entry entry = cc::parse_entry(o.cc);
    return fmt::format("Starting Test: protocol: NDM, {} streams, {} byte packets, omitting {:g} seconds, {}{}\n"
                       "Controller: {}{}{}\n"
                       "TLS: TLS 1.3, {}, ALPN {}, QUIC version 0x{:08x}{}\n"
                       "Packet protection: {}\n",
                       o.parallel, t.mds, t.base.omit,
                       t.base.bytes ? fmt::format("{} bytes to send", t.base.bytes)
                                    : fmt::format("{:g} second test", t.base.seconds),
                       t.base.bitrate ? fmt::format(", target {}", format_bitrate(static_cast<double>(t.base.bitrate)))
                                      : "",
                       entry.name, entry.options.empty() ? "" : " (" + entry.options + ")",
                       o.reverse ? " on the server (reverse mode)" : "", t.handshake.cipher_suite, t.handshake.alpn,
                       t.handshake.version,
                       std::string(t.handshake.retry ? ", after a Retry" : "") +
                           (t.handshake.resumed ? ", resumed (--session-file)" : ""),
                       t.handshake.packet_protection);
}

// The receiving side's controller: ours in -R, else the server's, from its report.
std::string receiver_cc(const TestView& t) {
    return t.o.reverse ? cc::parse_entry(t.o.cc).name : t.flows.front().receiver_cc;
}

// The server's CPU use: the busiest of its reports.
RemoteCpu remote_cpu(const TestView& t) {
    RemoteCpu r;
    for (const Flow& f : t.flows)
        if (f.remote_cpu.user + f.remote_cpu.system > r.user + r.system) r = f.remote_cpu;
    return r;
}

// iperf3's cpu_utilization_percent.
json cpu_json(const TestView& t) {
    const RemoteCpu remote = remote_cpu(t);
    return {{"host_total", t.cpu.total},
            {"host_user", t.cpu.user},
            {"host_system", t.cpu.system},
            {"remote_total", remote.user + remote.system},
            {"remote_user", remote.user},
            {"remote_system", remote.system}};
}

// The -J document's "start": the connections and the test's parameters.
json start_json(const TestView& t) {
    const Options& o = t.o;
    json connected = json::array();
    for (const Flow& f : t.flows.first(o.parallel))
        connected.push_back({{"socket", f.index + 1}, {"local_host", t.ep.local_address()},
                             {"local_port", t.ep.local_port()}, {"remote_host", o.host}, {"remote_port", o.port}});
    const Provenance prov = provenance(o.started);
    return {{"connecting_to", {{"host", o.host}, {"port", o.port}}},
            {"timestamp", timestamp_json(o.started)},
            {"system_info", prov.host + " " + prov.kernel},
            {"cookie", fmt::format("{:016x}", t.flows.front().params.test_id)},
            {"sock_bufsize", t.base.window},
            {"rcvbuf_actual", t.cfg.connection.initial_max_stream_data},
            {"sndbuf_actual", t.cfg.connection.stream_send_buffer},
            {"target_bitrate", t.base.bitrate},
            {"connected", connected},
            {"version", "ndm-send"},
            {"test_start",
             {{"protocol", "NDM"}, {"num_streams", o.parallel}, {"blksize", t.mds}, {"omit", t.base.omit},
              {"duration", t.base.seconds}, {"bytes", t.base.bytes}, {"blocks", o.blocks},
              {"reverse", o.reverse ? 1 : 0}, {"bidir", o.bidir ? 1 : 0}, {"target_bitrate", t.base.bitrate}}},
            {"congestion_control", o.cc},
            {"profile", t.profile_name},
            {"io", to_string(t.ep.backend())}};
}

// The -J document's "end": each flow's sender and receiver sums, both sides'
// controllers and CPU, the endpoint's counts, each direction's sums.
json end_json(const TestView& t) {
    json streams = json::array();
    for (const Flow& f : t.flows) {
        json s = sum_json(0, f.sent_seconds, f.sent_bytes, f.retransmits, !f.rev);
        json r = sum_json(0, f.recv_seconds, f.recv_bytes, std::nullopt, !f.rev);
        s["socket"] = r["socket"] = f.index + 1;
        if (f.path) {
            s["max_snd_cwnd"] = f.path->max_cwnd;
            s["min_rtt"] = f.path->rtt_min;
            s["max_rtt"] = f.path->rtt_max;
            s["mean_rtt"] = f.path->rtt_mean;
        }
        r["drain_seconds"] = drain_seconds(f.sent_seconds, f.recv_seconds);
        streams.push_back({{"sender", s}, {"receiver", r}, {"byte_exact", f.exact}, {"ecn", f.ecn}});
    }
    json end = {{"streams", streams},
                {"sender_congestion", t.o.cc},
                {"receiver_congestion", receiver_cc(t)},
                // iperf3's names of the same two, for its scripts (docs/ndm-send-json.md).
                {"sender_tcp_congestion", t.o.cc},
                {"receiver_tcp_congestion", receiver_cc(t)},
                {"cpu_utilization_percent", cpu_json(t)},
                {"endpoint", endpoint_summary_json(t.ep.stats())}};
    for (const bool d : directions(t.o)) {
        const Totals tt = totals(t.flows, d);
        json sum_received = sum_json(0, tt.recv_s, tt.recv, std::nullopt, !d);
        sum_received["drain_seconds"] = drain_seconds(tt.sent_s, tt.recv_s);
        end[sum_key(t.o, "sum_sent", d)] = sum_json(0, tt.sent_s, tt.sent, tt.retr, !d);
        end[sum_key(t.o, "sum_received", d)] = sum_received;
    }
    return end;
}

}  // namespace

std::vector<bool> directions(const Options& o) {
    if (o.bidir) return {false, true};
    return {o.reverse};
}

Totals totals(std::span<const Flow> flows, bool rev) {
    Totals t;
    for (const Flow& f : flows) {
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

json ecn_json(const ConnectionStats& st) {
    return {{"state", to_string(st.ecn_state)},
            {"ect0_sent", st.ecn_ect0_sent},
            {"ce_reported_by_peer", st.ecn_ce_reported},
            {"ect0_received", st.ecn_ect0_received},
            {"ect1_received", st.ecn_ect1_received},
            {"ce_received", st.ecn_ce_received}};
}

void print_header(const TestView& t) {
    const Options& o = t.o;
    const bool rev = o.reverse;
    const unsigned n = o.parallel;
    for (const Flow& f : t.flows.first(n))
        std::cout << fmt::format("{} local {} connected to {} port {} ({})\n", id_label(f.index), t.ep.local_address(),
                                 o.host, o.port, to_string(t.ep.backend()));
    std::cout << fmt::format("[  *] controller {}{}, profile {}, packet size {} bytes{}\n", o.cc,
                             rev ? " (on the server)" : "", t.profile_name, t.mds,
                             n > 1 ? fmt::format(", {} parallel connections", n) : "")
              << (o.verbose ? verbose_header(t) : std::string())
              << (rev ? "[ ID] Interval           Transfer     Bitrate\n"
                      : fmt::format("[ ID]{} Interval           Transfer     Bitrate         Retr  Cwnd\n",
                                    o.bidir ? "[Role]" : ""))
              << std::flush;
}

std::string row_text(const Options& o, const std::string& id, bool rev, double b, double e, const SenderRow& r,
                     bool omitted) {
    const char* note = omitted ? "  (omitted)" : "";
    if (rev)
        return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}{}\n", label(o, id, rev), b, e,
                           format_bytes(r.bytes), format_bitrate(rate(r.bytes, e - b)), note);
    // [SUM] rows have no cwnd column, as iperf3's.
    return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}{}{}\n", label(o, id, rev), b, e,
                       format_bytes(r.bytes), format_bitrate(rate(r.bytes, e - b)), r.retr,
                       id == "[SUM]" ? "" : fmt::format("  {:>12}", format_cwnd(r.cwnd)), note);
}

json interval_json(const Options& o, std::span<const Flow> flows, std::span<const SenderRow> rows,
                   const std::array<SenderRow, 2>& sums, double b, double e, bool omitted) {
    json streams = json::array();
    for (std::size_t i = 0; i < flows.size(); ++i) {
        const Flow& f = flows[i];
        const SenderRow& r = rows[i];
        json s = sum_json(b, e, r.bytes, f.rev ? std::nullopt : std::optional(r.retr), !f.rev);
        s["socket"] = f.index + 1;
        s["omitted"] = omitted;
        if (!f.rev) {
            s["snd_cwnd"] = r.cwnd;
            s["rtt"] = std::chrono::duration_cast<std::chrono::microseconds>(r.srtt).count();
            s["rttvar"] = std::chrono::duration_cast<std::chrono::microseconds>(r.rttvar).count();
        }
        streams.push_back(s);
    }
    json record = {{"streams", streams}};
    for (const bool rev : directions(o)) {
        json j = sum_json(b, e, sums[rev].bytes, rev ? std::nullopt : std::optional(sums[rev].retr), !rev);
        j["omitted"] = omitted;
        record[sum_key(o, "sum", rev)] = j;
    }
    return record;
}

void print_json(const TestView& t) {
    json j;
    j["provenance"] = provenance_json(t.o.started);
    j["start"] = start_json(t);
    j["intervals"] = t.intervals;
    j["end"] = end_json(t);
    bool exact = true;
    std::string error;
    for (const bool d : directions(t.o)) {
        const Totals tt = totals(t.flows, d);
        exact = exact && tt.all_exact;
        if (error.empty()) error = tt.error;
    }
    j["end"]["byte_exact"] = exact;
    if (t.path)
        j["end"]["emulator"] = {{"up", emu_summary_json(t.path->egress->link().emu_stats())},
                                {"down", emu_summary_json(t.path->ingress->link().emu_stats())}};
    if (!t.server_output_json.is_null()) j["server_output_json"] = t.server_output_json;
    if (!error.empty()) j["error"] = error;
    if (!t.o.output.title.empty()) j["title"] = t.o.output.title;
    std::cout << j.dump(2) << '\n';
}

void print_closing_text(const TestView& t) {
    const Options& o = t.o;
    auto sender_line = [](const std::string& id, double s, std::uint64_t bytes, std::uint64_t retr) {
        return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}  {:>4}             sender\n", id, 0.0, s,
                           format_bytes(bytes), format_bitrate(rate(bytes, s)), retr);
    };
    auto receiver_line = [](const std::string& id, double sent_s, double s, std::uint64_t bytes, bool exact) {
        return fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}                   receiver{}  ({})\n", id, 0.0, s,
                           format_bytes(bytes), format_bitrate(rate(bytes, s)), exact ? "  (byte-exact)" : "",
                           drain_text(sent_s, s));
    };
    std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
              << fmt::format("[ ID]{} Interval           Transfer     Bitrate         Retr\n", o.bidir ? "[Role]" : "");
    for (const Flow& f : t.flows) {
        const std::string id = label(o, id_label(f.index), f.rev);
        std::cout << sender_line(id, f.sent_seconds, f.sent_bytes, f.retransmits)
                  << receiver_line(id, f.sent_seconds, f.recv_seconds, f.recv_bytes, f.exact);
    }
    for (const bool d : directions(o)) {
        if (o.parallel == 1) break;
        const Totals tt = totals(t.flows, d);
        std::cout << sender_line(label(o, "[SUM]", d), tt.sent_s, tt.sent, tt.retr)
                  << receiver_line(label(o, "[SUM]", d), tt.sent_s, tt.recv_s, tt.recv, tt.all_exact);
    }
    if (t.path) std::cout << emu_summary_text(t.path->egress->link().emu_stats(), t.path->ingress->link().emu_stats());
    if (o.verbose) {  // iperf3 -V's closing lines
        const RemoteCpu remote = remote_cpu(t);
        const bool rev = o.reverse;
        std::cout << fmt::format("CPU Utilization: local/{} {:.1f}% ({:.1f}%u/{:.1f}%s), remote/{} {:.1f}% ({:.1f}%u/{:.1f}%s)\n",
                                 rev ? "receiver" : "sender", t.cpu.total, t.cpu.user, t.cpu.system,
                                 rev ? "sender" : "receiver", remote.user + remote.system, remote.user, remote.system)
                  << fmt::format("snd_congestion {}\nrcv_congestion {}\n", o.cc, receiver_cc(t))
                  << endpoint_summary_text(t.ep.stats());
    }
    if (!t.server_output.empty()) std::cout << "\nServer output:\n" << t.server_output;
    std::cout << "\nndm-send done.\n";
}

}  // namespace ndm::tools::send
