// ndm-compare: runs several congestion controllers in turn under one
// emulated network profile and prints the seed experiment's tables for them
// (overall results, per-interval tables, comparison summary), writing JSON,
// CSV, a Markdown report and an SVG plot to --out.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/experiment.hpp"
#include "ndm/sim.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/logging.hpp"
#include "tools/cli/output_dir.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/cli/units.hpp"
#include "tools/compare/compete.hpp"
#include "tools/compare/report.hpp"
#include "tools/compare/seed_article.hpp"

using namespace ndm;
namespace fs = std::filesystem;

namespace {

struct Options {
    std::string profile = "urban-lte";
    std::vector<std::string> controllers = {"ndm-lkm", "cubic", "reno"};
    double seconds = 10;
    unsigned repeat = 1;
    bool virtual_time = false;
    std::string packet_preset = "seed";
    std::size_t packet_size = 0;  // 0: from the preset
    double interval = 1;
    std::uint64_t seed = 1;
    std::string out = "ndm-compare-out";
    bool json = false;
    bool quiet = false;
    std::string io = "auto";
    bool compete = false;
    double stagger = 0;
    tools::ConnectionFlags conn;  // --idle-timeout, --loss-detection, --cc-plugin
};

tools::RunResult run_virtual(const Options& o, const emu::Profile& profile, const std::string& cc, unsigned repeat,
                             std::uint64_t seed) {
    experiment::VirtualRunSpec spec;
    spec.cc = cc;
    spec.profile = profile;
    spec.packet_size = o.packet_size;
    spec.seconds = o.seconds;
    spec.interval = o.interval;
    spec.seed = seed;
    spec.repeat = repeat;
    spec.idle_timeout_s = o.conn.idle_timeout_s;
    spec.loss_detection = o.conn.loss_detection;
    const bool progress = !o.quiet && isatty(STDERR_FILENO);
    auto r = experiment::run_virtual(spec, [&](const sim::IntervalSample& s) {
        if (progress) {
            std::cerr << fmt::format("\r  {} (run {}/{}): {:.0f} s simulated ", cc, repeat + 1, o.repeat,
                                     to_seconds(s.end))
                      << std::flush;
        }
    });
    if (progress) std::cerr << "\r\033[K" << std::flush;
    return std::move(r.result);
}

tools::RunResult run_real(const Options& o, const emu::Profile& profile, const std::string& cc, unsigned repeat,
                          std::uint64_t seed) {
    experiment::LiveRunSpec spec;
    spec.cc = cc;
    spec.profile = profile;  // as netem on loopback: both directions, here on the sender's socket path
    spec.packet_size = o.packet_size;
    spec.seconds = o.seconds;
    spec.interval = o.interval;
    spec.seed = seed;
    spec.repeat = repeat;
    spec.backend = parse_io_backend(o.io);
    spec.idle_timeout_s = o.conn.idle_timeout_s;
    spec.loss_detection = o.conn.loss_detection;
    spec.tls = tools::in_process_tls();
    const bool progress = !o.quiet && isatty(STDERR_FILENO);
    if (progress) {
        spec.progress = [&](double t) {
            std::cerr << fmt::format("\r  {} (run {}/{}): {:.0f} of {:.0f} s ", cc, repeat + 1, o.repeat, t, o.seconds)
                      << std::flush;
        };
    }
    auto r = experiment::run_live(spec);
    if (progress) std::cerr << "\r\033[K" << std::flush;
    r.error = tools::printable(r.error);  // a close reason is the peer's text
    return r;
}

void write_file(const fs::path& p, const std::string& content) {
    std::ofstream f(p);
    if (!f) throw std::runtime_error(fmt::format("--out: cannot write {}: {}", p.string(), std::strerror(errno)));
    f << content;
    f.close();
    if (!f) throw std::runtime_error(fmt::format("--out: cannot write {}: {}", p.string(), std::strerror(errno)));
}

int run_compete_mode(const Options& o) {
    tools::CompeteSpec spec;
    spec.start_time = std::chrono::system_clock::now();
    spec.profile = o.profile;
    spec.controllers = o.controllers;
    spec.seconds = o.seconds;
    spec.stagger_s = o.stagger;
    spec.interval_s = o.interval;
    spec.packet_size = o.packet_size;
    spec.idle_timeout_s = o.conn.idle_timeout_s;
    spec.loss_detection = o.conn.loss_detection;
    if (!o.json) {
        std::cout << fmt::format("ndm-compare --compete: {} sharing profile {} ({} byte packets, {:.0f} s, {} run(s), "
                                 "virtual time)\n\n",
                                 fmt::join(o.controllers, ", "), o.profile, o.packet_size, o.seconds, o.repeat);
    }
    const bool progress = !o.quiet && !o.json && isatty(STDERR_FILENO);
    std::vector<tools::CompeteRun> runs;
    for (unsigned rep = 0; rep < o.repeat; ++rep) {
        if (progress) std::cerr << fmt::format("\r  run {}/{} ", rep + 1, o.repeat) << std::flush;
        runs.push_back(tools::run_compete(spec, o.seed + rep));
    }
    if (progress) std::cerr << "\r\033[K" << std::flush;
    const std::string json = tools::compete_json(spec, runs);
    write_file(fs::path(o.out) / "compete.json", json);
    if (o.json) {
        std::cout << json;
    } else {
        tools::print_compete(std::cout, spec, runs, !o.quiet);
        std::cout << fmt::format("\nWrote {}/compete.json\n", o.out);
    }
    bool failed = false;
    for (const auto& r : runs)
        for (const auto& f : r.flows) failed |= !f.error.empty();
    return failed ? 1 : 0;
}

// The controllers in turn under one profile, --repeat times: the tables and
// the four report files (results.json, samples.csv, report.md, plot.svg).
int run_sequential_mode(const Options& o, const emu::Profile& profile) {
    tools::Experiment e;
    e.start_time = std::chrono::system_clock::now();
    e.profile = o.profile;
    e.profile_description = "up: " + emu::describe(profile.up) + "; down: " + emu::describe(profile.down);
    e.packet_size = o.packet_size;
    e.duration_s = o.seconds;
    e.virtual_time = o.virtual_time;
    e.repeats = o.repeat;
    e.seed = o.seed;
    e.controllers = o.controllers;

    if (!o.json) {
        std::cout << fmt::format("ndm-compare: {} under profile {} ({} byte packets, {:.0f} s each, {} run(s), {})\n",
                                 fmt::join(o.controllers, ", "), o.profile, o.packet_size, o.seconds, o.repeat,
                                 o.virtual_time ? "virtual time" : "real sockets");
        std::cout << "  " << e.profile_description << "\n\n";
    }
    for (unsigned rep = 0; rep < o.repeat; ++rep) {
        for (const auto& c : o.controllers) {
            auto r = o.virtual_time ? run_virtual(o, profile, c, rep, o.seed + rep)
                                    : run_real(o, profile, c, rep, o.seed + rep);
            if (!o.json && !o.quiet) {
                tools::print_run(std::cout, r);
                std::cout << '\n';
            }
            e.runs.push_back(std::move(r));
        }
    }

    write_file(fs::path(o.out) / "results.json", tools::to_json(e));
    write_file(fs::path(o.out) / "samples.csv", tools::to_csv(e));
    write_file(fs::path(o.out) / "report.md", tools::to_markdown(e));
    write_file(fs::path(o.out) / "plot.svg", tools::to_svg(e));

    if (o.json) {
        std::cout << tools::to_json(e);
    } else {
        std::cout << "Overall results\n";
        tools::print_overall(std::cout, e);
        std::cout << "\nComparison summary\n";
        tools::print_summary(std::cout, e);
        tools::print_article(std::cout, e);
        std::cout << fmt::format("\nWrote {0}/results.json, {0}/samples.csv, {0}/report.md, {0}/plot.svg\n", o.out);
    }
    bool failed = false;
    for (const auto& r : e.runs) failed |= !r.error.empty();
    return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    Options o;
    CLI::App app{
        "ndm-compare: run congestion controllers in turn under one emulated network profile and print the seed\n"
        "experiment's tables (overall results, per-interval Transfer/Bitrate/Retr/Cwnd, comparison summary).\n"
        "Under the urban-lte profile it shows the published article's figures beside ndm's, with a verdict per\n"
        "controller: with --repeat, whether the article's bitrate lies inside ndm's 95 % confidence interval;\n"
        "a single run is one draw (use --repeat 10 to judge a difference).\n"
        "Writes results.json, samples.csv, report.md and plot.svg to --out.",
        "ndm-compare"};
    app.add_option("--profile", o.profile,
                   "emulator profile: a preset (see --list-profiles), a spec string such as "
                   "\"delay=50ms,jitter=20ms,loss=5%\" (keys: docs/emulator.md; outage=10s@5s adds a blackhole), "
                   "or a JSON file")
        ->capture_default_str();
    app.add_option("--cc", o.controllers,
                   "controllers to compare, comma-separated; options after colons, e.g. ndm:threshold=0.6:queue=2 or ndm-cubic:forgive=4")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("-t,--time", o.seconds, "seconds each controller sends")->capture_default_str()->check(ndm::tools::number_in(0.5, 3600, "seconds"));
    app.add_option("--repeat", o.repeat, "runs per controller (mean and 95 % confidence interval when > 1)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(1, 1000));
    app.add_flag("--virtual", o.virtual_time,
                 "run in deterministic virtual time (the simulator) instead of over real UDP sockets on loopback");
    app.add_option("--io", o.io, "socket backend for real runs: auto, uring or epoll")->capture_default_str();
    app.add_option("--packets", o.packet_preset,
                   "packet size preset: 'seed' = 65507-byte datagrams like the published loopback test, "
                   "'realistic' = 1452 bytes (1500-byte MTU)")
        ->capture_default_str();
    app.add_option("-l,--length", o.packet_size, "max datagram size in bytes (1200..65507); overrides --packets")
        ->check(ndm::tools::integer_in(kMinDatagramSize, kMaxDatagramSize, "bytes"));
    app.add_option("-i,--interval", o.interval, "seconds between interval reports")->capture_default_str()->check(ndm::tools::number_in(0.1, 60, "seconds"));
    app.add_option("--seed", o.seed, "emulator seed of the first run (run k uses seed + k)")->capture_default_str();
    app.add_option("--out", o.out,
                   "directory for results.json, samples.csv, report.md and plot.svg (created with its parents; a "
                   "file in the way or a directory that cannot be written is refused before any run, exit 2)")
        ->capture_default_str();
    app.add_flag("--compete", o.compete,
                 "run the controllers at the same time, one flow each, sharing the profile's bottleneck "
                 "(virtual time): per-flow goodput, Jain's fairness index over the last half, bottleneck "
                 "queueing delay and drops");
    app.add_option("--stagger", o.stagger, "with --compete: flow k starts k·SECONDS after the first")
        ->check(ndm::tools::number_in(0, 3600, "seconds"));
    tools::add_idle_timeout_option(app, o.conn);
    tools::add_loss_detection_option(app, o.conn);
    app.add_flag("-J,--json", o.json, "print the results as JSON on stdout instead of tables");
    app.add_flag("-q,--quiet", o.quiet, "no per-run interval tables and no progress");
    bool list_profiles = false, list_cc = false;
    app.add_flag("--list-profiles", list_profiles, "list the emulator presets and exit");
    app.add_flag("--list-cc", list_cc, "list the congestion controllers (with those of --cc-plugin) and exit");
    tools::add_cc_plugin_option(app, o.conn);

    ndm::tools::add_version_flag(app, "ndm-compare");
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-compare")) return *rc;

    try {
        tools::load_cc_plugins(o.conn);
        if (list_profiles) {
            for (const auto& p : emu::presets()) std::cout << fmt::format("{:<20} {}\n", p.name, p.description);
            return 0;
        }
        if (list_cc) {
            for (const auto& c : cc::list()) std::cout << fmt::format("{:<10} {}\n", c.name, c.description);
            return 0;
        }
        (void)parse_io_backend(o.io);  // validate before running anything
        tools::make_output_dir(o.out, "--out");
        if (o.packet_size == 0) o.packet_size = experiment::packet_size_preset(o.packet_preset);
        emu::Profile profile = emu::parse_profile(o.profile);
        // Fail on a bad controller name before running anything.
        for (const auto& c : o.controllers) {
            cc::Params p;
            p.max_datagram_size = o.packet_size;
            const cc::Entry entry = cc::parse_entry(c);
            (void)cc::make(entry.name, p, entry.options);
        }

        if (o.compete) return run_compete_mode(o);

        return run_sequential_mode(o, profile);
    } catch (const std::exception& ex) {  // bad input: 2; a failed real run, unwritable --out: 1
        return tools::report_failure("ndm-compare", ex);
    }
}
