#include "tools/perf/recv_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"
#include "tools/perf/iperf_output.hpp"

namespace ndm::tools::recv {

using nlohmann::json;

std::string label(const TestParams& p, const std::string& id, bool sends) {
    return id + (p.bidir ? (sends ? "[TX-S]" : "[RX-S]") : "");
}

std::vector<bool> directions(const TestParams& p) {
    if (p.bidir) return {false, true};
    return {p.reverse};
}

std::string sum_key(const TestParams& p, const std::string& key, bool sends) {
    return p.bidir && sends ? key + "_bidir_reverse" : key;
}

std::optional<double> drain_reference(const TestParams& p) {
    if (p.reverse || p.bytes) return std::nullopt;
    return p.seconds;
}

namespace {

// One direction's closing numbers.
struct Sum {
    std::uint64_t bytes = 0, retr = 0;
    double seconds = 0;
};
double closing_seconds(const Flow& f) {
    return f.sends ? f.sent_seconds : std::max(0.0, secs(f.start, f.last_byte));
}
std::uint64_t closing_bytes(const Flow& f) { return f.sends ? f.sent_bytes : f.bytes - f.omitted_bytes; }

}  // namespace

std::string closing_report(const Test& t, const std::string& failure, bool as_json, const std::string& title) {
    // The receiver of a -t test shows its drain after the client's send
    // phase (-t seconds from its start), as ndm-send's receiver line does.
    const std::optional<double> send_phase = drain_reference(t.params);
    json streams = json::array();
    Sum sum[2];  // by direction
    std::string text = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
    auto line = [&](const std::string& id, bool sends, double s, std::uint64_t bytes, std::uint64_t retr) {
        text += fmt::format("{} {:6.2f}-{:<6.2f} sec  {:>12}  {:>15}", label(t.params, id, sends), 0.0, s,
                            format_bytes(bytes), format_bitrate(rate(bytes, s))) +
                (sends ? fmt::format("  {:>4}             sender\n", retr)
                       : "                  receiver" +
                             (send_phase ? "  (" + drain_text(*send_phase, s) + ")" : "") + "\n");
    };
    for (const Flow& f : t.flows) {
        const double s = closing_seconds(f);
        const std::uint64_t bytes = closing_bytes(f);
        sum[f.sends].bytes += bytes;
        sum[f.sends].retr += f.retransmits;
        sum[f.sends].seconds = std::max(sum[f.sends].seconds, s);
        json j = sum_json(0, s, bytes, f.sends ? std::optional(f.retransmits) : std::nullopt, f.sends);
        j["socket"] = f.params.index + 1;
        if (send_phase && !f.sends) j["drain_seconds"] = drain_seconds(*send_phase, s);
        if (f.dgram) datagram_json(j, f.dgram->total());
        streams.push_back({{f.sends ? "sender" : "receiver", j}});
        line(id_label(f.params.index), f.sends, s, bytes, f.retransmits);
        if (const DatagramCounts* d = f.dgram ? &f.dgram->total() : nullptr)  // -u: iperf3's Jitter Lost/Total
            text += fmt::format("{} datagrams: jitter {:.3f} ms, lost/total {} by sequence gaps, {} out of order, "
                                "{} duplicates, {} malformed\n",
                                id_label(f.params.index), d->jitter_ms, loss_text(d->lost(), d->expected),
                                d->out_of_order, d->duplicates, d->malformed);
    }
    json end = {{"streams", streams}};
    for (const bool d : directions(t.params)) {
        json j = sum_json(0, sum[d].seconds, sum[d].bytes, d ? std::optional(sum[d].retr) : std::nullopt, d);
        if (send_phase && !d) j["drain_seconds"] = drain_seconds(*send_phase, sum[d].seconds);
        end[sum_key(t.params, d ? "sum_sent" : "sum_received", d)] = j;
        if (t.params.streams > 1) line("[SUM]", d, sum[d].seconds, sum[d].bytes, sum[d].retr);
    }
    // Why the test ended before its reports: the server ended it, or the client's close.
    const bool by_server = !t.ended_by_server.empty();
    if (!as_json) {
        if (by_server) return text + "ndm-recv: the test ended early: the server ended it: " + t.ended_by_server + "\n";
        return text + (failure.empty() ? "" : "ndm-recv: the test ended early: " + failure + "\n");
    }
    const std::string error = by_server         ? "the server ended the test: " + t.ended_by_server
                              : failure.empty() ? ""
                                                : "client disconnected: " + failure;
    json j;
    j["provenance"] = provenance_json(t.wall_start);
    j["start"] = {{"test_start",
                   {{"protocol", "NDM"},
                    {"num_streams", t.params.streams},
                    {"blksize", t.params.packet_size},
                    {"duration", t.params.seconds},
                    {"omit", t.params.omit},
                    {"bytes", t.params.bytes},
                    {"reverse", t.params.reverse ? 1 : 0},
                    {"bidir", t.params.bidir ? 1 : 0}}},
                  {"sender_congestion", t.params.cc}};
    // iperf3's server keys: the client's address, and each connection's ends.
    json connected = json::array();
    for (const Flow& f : t.flows) {
        if (t.params.bidir && f.sends) continue;  // one entry a connection
        connected.push_back({{"socket", f.params.index + 1}, {"local_host", t.local.host},
                             {"local_port", t.local.port}, {"remote_host", f.peer.host},
                             {"remote_port", f.peer.port}});
    }
    j["start"]["connected"] = connected;
    j["start"]["accepted_connection"] = {{"host", t.accepted.host}, {"port", t.accepted.port}};
    j["intervals"] = t.intervals;
    j["end"] = end;
    if (!error.empty()) j["error"] = error;
    if (!title.empty()) j["title"] = title;
    return j.dump(2) + "\n";
}

}  // namespace ndm::recv
