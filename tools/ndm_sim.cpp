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
#include "common/idle_timeout.hpp"
#include "common/logging.hpp"
#include "common/provenance.hpp"
#include "common/printable.hpp"

namespace {

// "32M", "1.5G", "64k", "1000": binary multiples, as iperf3's -n.
std::optional<std::uint64_t> parse_size(const std::string& text) {
    if (text.empty()) return std::nullopt;
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    const std::string suffix = text.substr(used);
    double scale = 1;
    if (suffix.empty()) scale = 1;
    else if (suffix == "K" || suffix == "k") scale = 1024.0;
    else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
    else return std::nullopt;
    const double bytes = value * scale;
    if (!std::isfinite(bytes) || bytes < 1 || bytes > 1e15) return std::nullopt;
    return static_cast<std::uint64_t>(std::llround(bytes));
}

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
            {"reordered", s.reordered}};
}

nlohmann::json to_json(const ndm::CloseInfo& c, bool closed) {
    return {{"closed", closed}, {"code", c.code}, {"reason", ndm::tools::printable(c.reason)}, {"by_peer", c.by_peer}, {"application", c.application}};
}

int fail(const std::string& message) {
    std::cerr << "ndm-sim: error: " << message << '\n';
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    CLI::App app{"ndm-sim: a bulk transfer between two ndm connections over a simulated path, in virtual time"};
    std::string bytes_arg = "32M";
    double time_s = 0, delay_ms = 25, loss_pct = 0, rate_mbps = 50, interval_s = 1, deadline_s = 3600;
    std::size_t queue = 0, packet_size = 1452;
    std::string cc = "reno", cc_options;
    std::uint64_t seed = 1;
    bool json = false, verbose = false;
    double idle_timeout_s = ndm::tools::kDefaultIdleTimeoutSeconds;

    auto* bytes_opt = app.add_option("-n,--bytes", bytes_arg, "Bytes to transfer; suffixes K/M/G (binary)")
                          ->capture_default_str();
    auto* time_opt = app.add_option("-t,--time", time_s, "Send for this many seconds of virtual time instead of -n");
    bytes_opt->excludes(time_opt);
    app.add_option("--delay", delay_ms, "One-way delay in ms, each direction")->capture_default_str();
    app.add_option("--loss", loss_pct, "Random loss in percent, each direction")->capture_default_str();
    app.add_option("--rate", rate_mbps, "Bottleneck rate in Mbit/s, each direction")->capture_default_str();
    app.add_option("--queue", queue, "Bottleneck queue in packets (default: one bandwidth-delay product)");
    app.add_option("--cc", cc, "Congestion controller")->capture_default_str();
    app.add_option("--cc-options", cc_options, "Controller options, key=value[,key=value]");
    app.add_option("-l,--packet-size", packet_size, "Max datagram size in bytes")->capture_default_str();
    app.add_option("--seed", seed, "Seed of the link impairments and the payload")->capture_default_str();
    app.add_option("-i,--interval", interval_s, "Report interval in seconds of virtual time")->capture_default_str();
    app.add_option("--deadline", deadline_s, "Give up after this many seconds of virtual time")->capture_default_str();
    ndm::tools::add_idle_timeout_option(app, idle_timeout_s);
    app.add_flag("--json", json, "Print the results as JSON");
    app.add_flag("-v,--verbose", verbose, "Debug logging");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return fail(e.what());
    }

    const bool by_time = time_opt->count() > 0;
    std::uint64_t bytes = 0;
    if (!by_time) {
        const auto parsed = parse_size(bytes_arg);
        if (!parsed) return fail("--bytes: '" + bytes_arg + "' is not a size like 1000, 64K, 32M or 1G");
        bytes = *parsed;
    }
    if (by_time && !(time_s > 0 && time_s <= 1e6)) return fail("--time must be in (0, 1e6] seconds");
    if (!(delay_ms >= 0 && delay_ms <= 1e6)) return fail("--delay must be in [0, 1e6] ms");
    if (!(loss_pct >= 0 && loss_pct <= 100)) return fail("--loss must be in [0, 100] percent");
    if (!(rate_mbps > 0 && rate_mbps <= 1e6)) return fail("--rate must be in (0, 1e6] Mbit/s");
    if (packet_size < ndm::kMinDatagramSize || packet_size > ndm::kMaxDatagramSize)
        return fail(fmt::format("--packet-size must be in [{}, {}]", ndm::kMinDatagramSize, ndm::kMaxDatagramSize));
    if (!(interval_s > 0 && interval_s <= 1e6)) return fail("--interval must be in (0, 1e6] seconds");
    if (!(deadline_s > 0 && deadline_s <= 1e7)) return fail("--deadline must be in (0, 1e7] seconds");
    if (app.count("--queue") > 0 && queue == 0) return fail("--queue must be at least 1 packet");
    try {  // fail before printing anything, with the registry's list of names
        ndm::cc::make(cc, ndm::cc::Params{packet_size, ndm::Instant{}}, cc_options);
    } catch (const std::invalid_argument& e) {
        return fail(e.what());
    }
    spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);

    const ndm::Duration delay = ndm::from_seconds(delay_ms / 1e3);
    const double rate_bps = rate_mbps * 1e6;
    if (queue == 0) {
        const double bdp_packets = rate_bps * 2 * ndm::to_seconds(delay) / 8 / static_cast<double>(packet_size);
        queue = std::max<std::size_t>(16, static_cast<std::size_t>(std::ceil(bdp_packets)));
    }

    ndm::sim::TransferSpec spec;
    spec.client.cc = cc;
    spec.client.cc_options = cc_options;
    spec.client.max_datagram_size = packet_size;
    spec.client.seed = seed * 2 + 1;
    spec.client.idle_timeout = ndm::tools::idle_timeout_duration(idle_timeout_s);
    spec.server = spec.client;
    spec.server.seed = seed * 2 + 2;
    ndm::sim::SimpleLinkConfig link;
    link.delay = delay;
    link.loss = loss_pct / 100;
    link.rate_bps = rate_bps;
    link.queue_packets = queue;
    spec.client_to_server = link;
    spec.client_to_server.seed = seed * 2;
    spec.server_to_client = link;
    spec.server_to_client.seed = seed * 2 + 1;
    spec.bytes = bytes;
    if (by_time) spec.send_for = ndm::from_seconds(time_s);
    spec.interval = ndm::from_seconds(interval_s);
    spec.deadline = ndm::from_seconds(deadline_s);
    spec.seed = seed;

    if (!json) {
        std::cout << fmt::format("ndm-sim: {} {}, {} Mbit/s, {} ms one-way delay, {}% loss, queue {} packets, "
                                 "datagram {} B, seed {}\n",
                                 by_time ? fmt::format("{} s of", time_s) : bytes_text(static_cast<double>(bytes)),
                                 cc, rate_mbps, delay_ms, loss_pct, queue, packet_size, seed);
        std::cout << "[ ID] Interval           Transfer     Bitrate         Retr\n";
    }
    auto print_row = [&](const ndm::sim::IntervalSample& s) {
        if (json) return;
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
    }
    const double wall = ndm::to_seconds(ndm::steady_now() - wall_start);
    const double simulated = ndm::to_seconds(r.duration);
    const double goodput = bits_per_second(r.bytes_delivered, r.duration);
    const double ratio = wall > 0 ? simulated / wall : 0;

    if (json) {
        nlohmann::json out;
        out["provenance"] = ndm::tools::provenance_json(started);
        out["start"] = {{"bytes", by_time ? 0 : bytes}, {"time", by_time ? time_s : 0.0}, {"delay_ms", delay_ms},
                        {"loss_percent", loss_pct}, {"rate_mbps", rate_mbps}, {"queue_packets", queue},
                        {"cc", cc}, {"packet_size", packet_size}, {"seed", seed}, {"interval", interval_s}};
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
                      {"bits_per_second", goodput},
                      {"retransmits", r.client_stats.packets_retransmitted},
                      {"wall_seconds", wall},
                      {"speed_ratio", ratio},
                      {"steps", r.steps},
                      {"client", to_json(r.client_stats)},
                      {"server", to_json(r.server_stats)},
                      {"client_close", to_json(r.client_close, r.client_closed)},
                      {"server_close", to_json(r.server_close, r.server_closed)},
                      {"links", {{"client_to_server", to_json(r.client_to_server)},
                                 {"server_to_client", to_json(r.server_to_client)}}}};
        std::cout << out.dump(2) << '\n';
    } else {
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
    return r.completed && r.hash_match ? 0 : 1;
}
