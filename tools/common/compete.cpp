#include "common/compete.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cc_entry.hpp"
#include "common/emu_path.hpp"
#include "common/provenance.hpp"
#include "common/units.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/sim.hpp"

namespace ndm::tools {

double jain_index(const std::vector<double>& x) {
    double sum = 0, sq = 0;
    for (double v : x) {
        sum += v;
        sq += v * v;
    }
    if (x.empty() || sq <= 0) return 1.0;
    return sum * sum / (static_cast<double>(x.size()) * sq);
}

CompeteRun run_compete(const CompeteSpec& spec, std::uint64_t seed) {
    const emu::Profile profile = emu::parse_profile(spec.profile);
    sim::SharedPathSpec s;
    std::shared_ptr<emu::EmulatedLink> bottleneck;
    s.bottleneck = [&] {
        bottleneck = emu::make_link(profile, emu::Direction::up, seed);
        return std::make_unique<EmuLinkRef>(bottleneck);
    };
    // Each flow's ACK path draws its own impairments.
    std::uint64_t returns = 0;
    s.return_path = [&] { return emu::make_link(profile, emu::Direction::down, seed * 1000 + returns++); };
    for (std::size_t i = 0; i < spec.controllers.size(); ++i) {
        const CcEntry e = parse_cc_entry(spec.controllers[i]);
        cc::Params p;
        p.max_datagram_size = spec.packet_size;
        (void)cc::make(e.name, p, e.options);  // a bad name or option fails before anything runs
        sim::FlowSpec f;
        f.client.cc = e.name;
        f.client.cc_options = e.options;
        f.client.max_datagram_size = f.server.max_datagram_size = spec.packet_size;
        f.client.idle_timeout = f.server.idle_timeout = from_seconds(spec.idle_timeout_s);
        f.client.loss_detection = spec.loss_detection;
        f.client.seed = seed * 100 + 2 * i + 1;
        f.server.seed = seed * 100 + 2 * i + 2;
        f.start = from_seconds(spec.stagger_s * static_cast<double>(i));
        f.seed = seed + i;
        s.flows.push_back(f);
    }
    s.send_until = from_seconds(spec.seconds);
    s.interval = from_seconds(spec.interval_s);
    s.deadline = from_seconds(spec.seconds + std::max(60.0, 2 * spec.idle_timeout_s));
    const sim::SharedPathResult r = sim::run_shared_path(s);

    CompeteRun run;
    run.seed = seed;
    run.interval_s = spec.interval_s;
    const double half = spec.seconds / 2;
    std::vector<double> last_half;
    for (std::size_t i = 0; i < r.flows.size(); ++i) {
        const sim::TransferResult& t = r.flows[i];
        CompeteFlow f;
        f.controller = spec.controllers[i];
        f.start_s = spec.stagger_s * static_cast<double>(i);
        double bytes = 0, half_bytes = 0;
        for (const auto& smp : t.samples) {
            const double b = to_seconds(smp.begin), e = to_seconds(smp.end);
            if (b >= spec.seconds - 1e-9) break;  // after sending stopped: draining only
            f.interval_bps.push_back(e > b ? static_cast<double>(smp.bytes) * 8 / (e - b) : 0);
            bytes += static_cast<double>(smp.bytes);
            if (b >= half - 1e-9) half_bytes += static_cast<double>(smp.bytes);
        }
        const double active = spec.seconds - f.start_s;
        f.goodput_bps = active > 0 ? bytes * 8 / active : 0;
        f.last_half_bps = half_bytes * 8 / (spec.seconds - half);
        f.retransmits = t.client_stats.packets_retransmitted;
        f.byte_exact = t.completed && t.hash_match;
        f.error = t.completed ? (t.hash_match ? "" : "received data differs from what was sent") : t.failure;
        last_half.push_back(f.last_half_bps);
        run.flows.push_back(std::move(f));
    }
    run.jain_last_half = jain_index(last_half);
    if (bottleneck) run.path = path_metrics(bottleneck->emu_stats());
    return run;
}

namespace {

std::string cell(const std::vector<double>& v, std::string (*f)(double)) {
    const Stat s = make_stat(v);
    if (s.n == 0) return "n/a";
    return s.n < 2 ? f(s.mean) : f(s.mean) + " ± " + f(s.ci95);
}

std::string ratio(double v) { return fmt::format("{:.3f}", v); }
std::string ms(double v) { return fmt::format("{:.1f} ms", v); }
std::string pct(double v) { return fmt::format("{:.2f} %", v); }
std::string count(double v) { return fmt::format("{:.0f}", v); }

}  // namespace

void print_compete(std::ostream& os, const CompeteSpec& spec, const std::vector<CompeteRun>& runs, bool intervals) {
    if (runs.empty()) return;
    const auto& first = runs.front();
    if (intervals) {
        Table t;
        t.header = {"Interval"};
        for (std::size_t i = 0; i < first.flows.size(); ++i)
            t.header.push_back(fmt::format("[{}] {}", i + 1, first.flows[i].controller));
        t.header.push_back("SUM");
        std::size_t n = 0;
        for (const auto& f : first.flows) n = std::max(n, f.interval_bps.size());
        for (std::size_t k = 0; k < n; ++k) {
            std::vector<std::string> row{fmt::format("{:.2f}-{:.2f} sec", k * spec.interval_s, (k + 1) * spec.interval_s)};
            double sum = 0;
            for (const auto& f : first.flows) {
                const double v = k < f.interval_bps.size() ? f.interval_bps[k] : 0;
                sum += v;
                row.push_back(format_bitrate(v));
            }
            row.push_back(format_bitrate(sum));
            t.rows.push_back(std::move(row));
        }
        os << render_text(t) << '\n';
    }
    Table t;
    t.header = {"flow", "controller", "starts", "goodput", "last half", "retransmissions", "byte-exact"};
    for (std::size_t i = 0; i < first.flows.size(); ++i) {
        std::vector<double> g, h, r;
        bool exact = true;
        for (const auto& run : runs) {
            g.push_back(run.flows[i].goodput_bps);
            h.push_back(run.flows[i].last_half_bps);
            r.push_back(static_cast<double>(run.flows[i].retransmits));
            exact = exact && run.flows[i].byte_exact;
        }
        t.rows.push_back({fmt::format("[{}]", i + 1), first.flows[i].controller,
                          fmt::format("{:.0f} s", first.flows[i].start_s), cell(g, format_bitrate),
                          cell(h, format_bitrate), cell(r, count), exact ? "yes" : "NO"});
    }
    os << render_text(t);
    std::vector<double> jain, qd, loss;
    for (const auto& run : runs) {
        jain.push_back(run.jain_last_half);
        qd.push_back(run.path.queue_delay_p95_ms);
        loss.push_back(run.path.loss_rate() * 100);
    }
    os << fmt::format("\nJain's fairness index, last half of the run: {}\n", cell(jain, ratio));
    os << fmt::format("Bottleneck: p95 queueing delay {}, {} of datagrams dropped\n", cell(qd, ms), cell(loss, pct));
    if (runs.size() > 1) os << fmt::format("(mean ± 95 % confidence half-width over {} runs)\n", runs.size());
    for (const auto& run : runs)
        for (std::size_t i = 0; i < run.flows.size(); ++i)
            if (!run.flows[i].error.empty())
                os << fmt::format("run with seed {}: flow [{}] {}: {}\n", run.seed, i + 1, run.flows[i].controller,
                                  run.flows[i].error);
}

std::string compete_json(const CompeteSpec& spec, const std::vector<CompeteRun>& runs) {
    using nlohmann::json;
    json j{{"provenance", provenance_json(spec.start_time)},
           {"mode", "compete"},
           {"profile", spec.profile},
           {"packet_size", spec.packet_size},
           {"duration_s", spec.seconds},
           {"stagger_s", spec.stagger_s},
           {"interval_s", spec.interval_s},
           {"controllers", spec.controllers},
           {"runs", json::array()}};
    for (const auto& run : runs) {
        json jr{{"seed", run.seed},
                {"jain_last_half", run.jain_last_half},
                {"bottleneck", {{"queue_delay_p95_ms", run.path.queue_delay_p95_ms},
                                {"one_way_delay_p95_ms", run.path.one_way_delay_p95_ms},
                                {"sent", run.path.sent},
                                {"dropped_queue", run.path.dropped_queue},
                                {"dropped_other", run.path.dropped_other}}},
                {"flows", json::array()}};
        for (const auto& f : run.flows) {
            jr["flows"].push_back({{"controller", f.controller},
                                   {"start_s", f.start_s},
                                   {"goodput_bps", f.goodput_bps},
                                   {"last_half_bps", f.last_half_bps},
                                   {"retransmits", f.retransmits},
                                   {"byte_exact", f.byte_exact},
                                   {"error", f.error},
                                   {"interval_bps", f.interval_bps}});
        }
        j["runs"].push_back(std::move(jr));
    }
    return j.dump(2) + "\n";
}

}  // namespace ndm::tools
