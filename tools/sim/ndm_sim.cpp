// ndm-sim: one bulk transfer between two ndm connections over a simulated
// path, in virtual time. Prints iperf3-style rows per simulated interval and
// a summary; deterministic for a given set of options.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "ndm/cc.hpp"
#include "ndm/sim.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/logging.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"

namespace {

// iperf3's unit_snprintf: three significant digits and an automatic unit.
std::string with_unit(double value, double base, const char* suffix) {
    static const char* const prefixes[] = {"", "K", "M", "G", "T"};
    int i = 0;
    while (value >= base * 0.995 && i < 4) {  // 0.995: "1000 K" reads better as "0.98 M"
        value /= base;
        ++i;
    }
    const char* fmt = value < 9.995 ? "{:4.2f} {}{}" : value < 99.95 ? "{:4.1f} {}{}" : "{:4.0f} {}{}";
    return fmt::format(fmt::runtime(fmt), value, prefixes[i], suffix);
}
std::string bytes_text(double b) { return with_unit(b, 1024, "Bytes"); }
std::string bits_text(double bps) { return with_unit(bps, 1000, "bits/sec"); }

double bits_per_second(std::uint64_t bytes, ndm::Duration d) {
    const double s = ndm::to_seconds(d);
    return s > 0 ? static_cast<double>(bytes) * 8 / s : 0;
}

nlohmann::json to_json(const ndm::ConnectionStats& s) {
    return {{"stream_bytes_sent", s.stream_bytes_sent},
            {"stream_bytes_retransmitted", s.stream_bytes_retransmitted},
            {"stream_bytes_acked", s.stream_bytes_acked},
            {"stream_bytes_received", s.stream_bytes_received},
            {"stream_bytes_delivered", s.stream_bytes_delivered},
            {"bytes_sent", s.bytes_sent},
            {"bytes_received", s.bytes_received},
            {"packets_sent", s.packets_sent},
            {"packets_received", s.packets_received},
            {"packets_dropped", s.packets_dropped},
            {"packets_lost", s.packets_lost},
            {"packets_retransmitted", s.packets_retransmitted},
            {"spurious_losses", s.spurious_losses},
            {"congestion_events", s.congestion_events},
            {"persistent_congestions", s.persistent_congestions},
            {"pto_count", s.pto_count},
            {"ecn", {{"state", std::string(to_string(s.ecn_state))},
                     {"ect0_sent", s.ecn_ect0_sent},
                     {"ect0_received", s.ecn_ect0_received},
                     {"ect1_received", s.ecn_ect1_received},
                     {"ce_received", s.ecn_ce_received},
                     {"ce_reported", s.ecn_ce_reported}}},
            {"cwnd", s.cwnd},
            {"ssthresh", s.ssthresh},
            {"bytes_in_flight", s.bytes_in_flight},
            {"pacing_rate", s.pacing_rate},
            {"smoothed_rtt_ms", ndm::to_seconds(s.smoothed_rtt) * 1e3},
            {"min_rtt_ms", ndm::to_seconds(s.min_rtt) * 1e3},
            {"cc_state", s.cc_state}};
}

nlohmann::json to_json(const ndm::LinkStats& s) {
    return {{"sent", s.sent},
            {"delivered", s.delivered},
            {"dropped_random", s.dropped_random},
            {"dropped_queue", s.dropped_queue},
            {"dropped_outage", s.dropped_outage},
            {"duplicated", s.duplicated},
            {"corrupted", s.corrupted},
            {"reordered", s.reordered},
            {"ce_marked", s.ce_marked}};
}

nlohmann::json to_json(const ndm::CloseInfo& c, bool closed) {
    return {{"closed", closed}, {"code", c.code}, {"reason", ndm::tools::printable(c.reason)}, {"by_peer", c.by_peer}, {"application", c.application}};
}

int fail(const std::string& message) {
    std::cerr << "ndm-sim: error: " << message << '\n';
    return 2;
}

struct Options {
    std::string bytes_arg = "32M";
    double time_s = 0, delay_ms = 25, loss_pct = 0, rate_mbps = 50, interval_s = 1, deadline_s = 3600;
    std::size_t queue = 0, packet_size = 1452;
    std::string cc = "reno", cc_options;
    std::uint64_t seed = 1;
    bool json = false, verbose = false;
    ndm::tools::ConnectionFlags conn;  // --cc-plugin, --idle-timeout, --loss-detection
    // Derived by parse().
    bool by_time = false;
    std::uint64_t bytes = 0;
};

// The command line into `o`, checked; an exit code when the run must not go on.
std::optional<int> parse(int argc, char** argv, Options& o) {
    CLI::App app{"ndm-sim: a bulk transfer between two ndm connections over a simulated path, in virtual time"};
    auto* bytes_opt = app.add_option("-n,--bytes", o.bytes_arg, "Bytes to transfer; suffixes K/M/G/T (binary; at most 1024T)")
                          ->capture_default_str()
                          ->check(ndm::tools::size_in(1, std::uint64_t{1} << 50));
    auto* time_opt = app.add_option("-t,--time", o.time_s, "Send for this many seconds of virtual time instead of -n")
                         ->check(ndm::tools::positive_number(1e6, "seconds"));
    bytes_opt->excludes(time_opt);
    app.add_option("--delay", o.delay_ms, "One-way delay in ms, each direction")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 1e6, "milliseconds"));
    app.add_option("--loss", o.loss_pct, "Random loss in percent, each direction")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 100, "percent"));
    app.add_option("--rate", o.rate_mbps, "Bottleneck rate in Mbit/s, each direction")
        ->capture_default_str()
        ->check(ndm::tools::positive_number(1e6, "Mbit/s"));
    app.add_option("--queue", o.queue, "Bottleneck queue in packets (default: one bandwidth-delay product)")
        ->check(ndm::tools::integer_in(1, 1000000000, "packets"));
    app.add_option("--cc", o.cc, "Congestion controller")->capture_default_str();
    app.add_option("--cc-options", o.cc_options, "Controller options, key=value[,key=value]");
    ndm::tools::add_cc_plugin_option(app, o.conn);
    app.add_option("-l,--packet-size", o.packet_size, "Max datagram size in bytes")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(ndm::kMinDatagramSize, ndm::kMaxDatagramSize, "bytes"));
    app.add_option("--seed", o.seed, "Seed of the link impairments and the payload")->capture_default_str();
    app.add_option("-i,--interval", o.interval_s, "Report interval in seconds of virtual time")
        ->capture_default_str()
        ->check(ndm::tools::positive_number(1e6, "seconds"));
    app.add_option("--deadline", o.deadline_s, "Give up after this many seconds of virtual time")
        ->capture_default_str()
        ->check(ndm::tools::positive_number(1e7, "seconds"));
    ndm::tools::add_idle_timeout_option(app, o.conn);
    ndm::tools::add_loss_detection_option(app, o.conn);
    app.add_flag("--json", o.json, "Print the results as JSON");
    app.add_flag("-V,--verbose", o.verbose,
                 "Debug logging (-V as iperf3; the old -v among other arguments still works, with a warning, and "
                 "alone prints the version)");

    ndm::tools::add_version_flag(app, "ndm-sim");
    ndm::tools::deprecated_verbose_v(argc, argv, "ndm-sim");
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-sim")) return rc;

    o.by_time = time_opt->count() > 0;
    if (!o.by_time) {
        o.bytes = ndm::tools::parse_size(o.bytes_arg);  // checked by size_in
    }
    // The ranges are the options' validators.
    try {  // fail before printing anything, with the registry's list of names
        ndm::tools::load_cc_plugins(o.conn);
        ndm::cc::make(o.cc, ndm::cc::Params{o.packet_size, ndm::Instant{}}, o.cc_options);
    } catch (const std::invalid_argument& e) {
        return fail(e.what());
    }
    return std::nullopt;
}

// The simulated transfer `o` asks for; sets the default queue (one
// bandwidth-delay product, at least 16 packets) into `o`.
ndm::sim::TransferSpec make_spec(Options& o) {
    const ndm::Duration delay = ndm::from_seconds(o.delay_ms / 1e3);
    const double rate_bps = o.rate_mbps * 1e6;
    if (o.queue == 0) {
        const double bdp_packets = rate_bps * 2 * ndm::to_seconds(delay) / 8 / static_cast<double>(o.packet_size);
        o.queue = std::max<std::size_t>(16, static_cast<std::size_t>(std::ceil(bdp_packets)));
    }

    ndm::sim::TransferSpec spec;
    spec.client.cc = o.cc;
    spec.client.cc_options = o.cc_options;
    spec.client.max_datagram_size = o.packet_size;
    spec.client.seed = o.seed * 2 + 1;
    ndm::tools::apply(o.conn, spec.client);
    spec.server = spec.client;
    spec.server.seed = o.seed * 2 + 2;
    ndm::sim::SimpleLinkConfig link;
    link.delay = delay;
    link.loss = o.loss_pct / 100;
    link.rate_bps = rate_bps;
    link.queue_packets = o.queue;
    spec.client_to_server = link;
    spec.client_to_server.seed = o.seed * 2;
    spec.server_to_client = link;
    spec.server_to_client.seed = o.seed * 2 + 1;
    spec.bytes = o.bytes;
    if (o.by_time) spec.send_for = ndm::from_seconds(o.time_s);
    spec.interval = ndm::from_seconds(o.interval_s);
    spec.deadline = ndm::from_seconds(o.deadline_s);
    spec.seed = o.seed;
    return spec;
}

void print_json(const Options& o, const ndm::sim::TransferResult& r, std::chrono::system_clock::time_point started,
                double wall) {
    const double simulated = ndm::to_seconds(r.duration);
    nlohmann::json out;
    out["provenance"] = ndm::tools::provenance_json(started);
    out["start"] = {{"bytes", o.by_time ? 0 : o.bytes}, {"time", o.by_time ? o.time_s : 0.0}, {"delay_ms", o.delay_ms},
                    {"loss_percent", o.loss_pct}, {"rate_mbps", o.rate_mbps}, {"queue_packets", o.queue},
                    {"cc", o.cc}, {"packet_size", o.packet_size}, {"seed", o.seed}, {"interval", o.interval_s}};
    auto& rows = out["intervals"] = nlohmann::json::array();
    for (const auto& s : r.samples) {
        rows.push_back({{"start", ndm::to_seconds(s.begin)}, {"end", ndm::to_seconds(s.end)},
                        {"bytes", s.bytes}, {"bytes_sent", s.bytes_sent}, {"bits_per_second", bits_per_second(s.bytes, s.end - s.begin)},
                        {"retransmits", s.retransmits}, {"packets_lost", s.packets_lost},
                        {"cwnd", s.cwnd}, {"bytes_in_flight", s.bytes_in_flight},
                        {"srtt_ms", ndm::to_seconds(s.srtt) * 1e3}});
    }
    out["end"] = {{"completed", r.completed},
                  {"byte_exact", r.hash_match},
                  {"failure", r.failure},
                  {"bytes_sent", r.bytes_sent},
                  {"bytes_delivered", r.bytes_delivered},
                  {"seconds", simulated},
                  {"bits_per_second", bits_per_second(r.bytes_delivered, r.duration)},
                  {"retransmits", r.client_stats.packets_retransmitted},
                  {"wall_seconds", wall},
                  {"speed_ratio", wall > 0 ? simulated / wall : 0},
                  {"steps", r.steps},
                  {"client", to_json(r.client_stats)},
                  {"server", to_json(r.server_stats)},
                  {"client_close", to_json(r.client_close, r.client_closed)},
                  {"server_close", to_json(r.server_close, r.server_closed)},
                  {"links", {{"client_to_server", to_json(r.client_to_server)},
                             {"server_to_client", to_json(r.server_to_client)}}}};
    std::cout << out.dump(2) << '\n';
}

void print_summary(const ndm::sim::TransferResult& r, double wall) {
    const double simulated = ndm::to_seconds(r.duration);
    const double goodput = bits_per_second(r.bytes_delivered, r.duration);
    const double ratio = wall > 0 ? simulated / wall : 0;
    std::cout << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
    std::cout << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {}  {}  {:3}  receiver\n", 0.0, simulated,
                             bytes_text(static_cast<double>(r.bytes_delivered)), bits_text(goodput),
                             r.client_stats.packets_retransmitted);
    std::cout << fmt::format("bytes {} of {} sent, goodput {:.2f} Mbit/s, {} packets retransmitted, {} lost\n",
                             r.bytes_delivered, r.bytes_sent, goodput / 1e6, r.client_stats.packets_retransmitted,
                             r.client_stats.packets_lost);
    std::cout << fmt::format("byte-exact: {} (hash {:016x} / {:016x})\n", r.hash_match ? "yes" : "NO",
                             r.sender_hash, r.receiver_hash);
    std::cout << fmt::format("simulated {:.2f} s in {:.3f} s wall: {:.1f}x real time ({} events)\n", simulated,
                             wall, ratio, r.steps);
    if (!r.completed) std::cout << "transfer incomplete: " << r.failure << '\n';
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    Options o;
    if (const auto exit_code = parse(argc, argv, o)) return *exit_code;
    spdlog::set_level(o.verbose ? spdlog::level::debug : spdlog::level::warn);
    const ndm::sim::TransferSpec spec = make_spec(o);

    if (!o.json) {
        std::cout << fmt::format("ndm-sim: {} {}, {} Mbit/s, {} ms one-way delay, {}% loss, queue {} packets, "
                                 "datagram {} B, seed {}\n",
                                 o.by_time ? fmt::format("{} s of", o.time_s) : bytes_text(static_cast<double>(o.bytes)),
                                 o.cc, o.rate_mbps, o.delay_ms, o.loss_pct, o.queue, o.packet_size, o.seed);
        std::cout << "[ ID] Interval           Transfer     Bitrate         Retr\n";
    }
    auto print_row = [&](const ndm::sim::IntervalSample& s) {
        if (o.json) return;
        std::cout << fmt::format("[  1] {:6.2f}-{:<6.2f} sec  {}  {}  {:3}  cwnd {}  srtt {:.1f} ms\n",
                                 ndm::to_seconds(s.begin), ndm::to_seconds(s.end),
                                 bytes_text(static_cast<double>(s.bytes)), bits_text(bits_per_second(s.bytes, s.end - s.begin)),
                                 s.retransmits, bytes_text(static_cast<double>(s.cwnd)), ndm::to_seconds(s.srtt) * 1e3);
        std::cout.flush();
    };

    ndm::sim::TransferResult r;
    const auto started = std::chrono::system_clock::now();
    const ndm::Instant wall_start = ndm::steady_now();
    try {
        r = ndm::sim::run_transfer(spec, print_row);
    } catch (const std::invalid_argument& e) {
        return fail(e.what());
    } catch (const std::exception& e) {  // not bad input: a failure of the run
        std::cerr << "ndm-sim: error: " << e.what() << '\n';
        return 1;
    }
    const double wall = ndm::to_seconds(ndm::steady_now() - wall_start);
    if (o.json) {
        print_json(o, r, started, wall);
    } else {
        print_summary(r, wall);
    }
    return r.completed && r.hash_match ? 0 : 1;
}
