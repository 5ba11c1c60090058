#include "tools/compare/compete.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"

namespace ndm::tools {

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
