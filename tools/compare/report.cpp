#include "tools/compare/report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/version.hpp"
#include "tools/cli/provenance.hpp"
#include "tools/cli/units.hpp"
#include "tools/compare/seed_article.hpp"
#include "tools/perf/iperf_output.hpp"

namespace ndm::tools {

using nlohmann::json;


std::vector<const RunResult*> Experiment::runs_of(const std::string& controller) const {
    std::vector<const RunResult*> out;
    for (const auto& r : runs) {
        if (r.controller == controller) out.push_back(&r);
    }
    return out;
}

namespace {

// Regularized incomplete beta I_x(a, b) by its continued fraction (modified
// Lentz), on the side of x where the fraction converges fast (Numerical
// Recipes, 3rd ed., §6.4).
double beta_cf(double a, double b, double x) {
    constexpr double tiny = 1e-300, eps = 1e-16;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 10000; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
        d = 1 + aa * d;
        c = 1 + aa / c;
        if (std::fabs(d) < tiny) d = tiny;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
        d = 1 + aa * d;
        c = 1 + aa / c;
        if (std::fabs(d) < tiny) d = tiny;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        const double del = d * c;
        h *= del;
        if (std::fabs(del - 1) < eps) break;
    }
    return h;
}

double log_beta(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

double incomplete_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double front = std::exp(a * std::log(x) + b * std::log1p(-x) - log_beta(a, b));
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

}  // namespace

double student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) throw std::invalid_argument("student_t_quantile: need 0 < p < 1 and df > 0");
    if (p == 0.5) return 0;
    if (p < 0.5) return -student_t_quantile(1 - p, df);
    // For t > 0, P(T > t) = I_x(df/2, 1/2) / 2 with x = df / (df + t²): solve
    // I_x = q for x, where I_x rises monotonically from 0 to 1 on (0, 1), by
    // Newton's method kept inside a shrinking bracket (bisection when a step
    // would leave it).
    const double a = df / 2, b = 0.5, q = 2 * (1 - p);
    const double lb = log_beta(a, b);
    double lo = 0, hi = 1, x = 0.5;
    for (int i = 0; i < 200; ++i) {
        const double f = incomplete_beta(a, b, x) - q;
        if (f == 0) break;
        (f < 0 ? lo : hi) = x;
        const double density = std::exp((a - 1) * std::log(x) + (b - 1) * std::log1p(-x) - lb);
        double next = x - f / density;
        if (!(next > lo && next < hi)) next = (lo + hi) / 2;
        if (std::fabs(next - x) <= 1e-15 * x) {
            x = next;
            break;
        }
        x = next;
    }
    return std::sqrt(df * (1 - x) / x);
}

Stat make_stat(const std::vector<double>& v) {
    Stat s;
    s.n = static_cast<unsigned>(v.size());
    if (v.empty()) return s;
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / v.size();
    if (v.size() < 2) return s;
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    const double sd = std::sqrt(ss / (v.size() - 1));
    const double n = static_cast<double>(v.size());
    s.ci95 = student_t_quantile(0.975, n - 1) * sd / std::sqrt(n);
    return s;
}

// ---- tables rendered as aligned text or Markdown

std::string render_text(const Table& t) {
    std::vector<std::size_t> w(t.header.size(), 0);
    auto measure = [&](const std::vector<std::string>& r) {
        for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    };
    measure(t.header);
    for (const auto& r : t.rows) measure(r);
    std::string out;
    auto line = [&](const std::vector<std::string>& r) {
        for (std::size_t i = 0; i < r.size(); ++i) {
            out += i == 0 ? fmt::format("{:<{}}", r[i], w[i]) : fmt::format("  {:>{}}", r[i], w[i]);
        }
        out += '\n';
    };
    line(t.header);
    for (const auto& r : t.rows) line(r);
    return out;
}

std::string render_markdown(const Table& t) {
    std::string out = "|";
    for (const auto& h : t.header) out += " " + h + " |";
    out += "\n|";
    for (std::size_t i = 0; i < t.header.size(); ++i) out += i == 0 ? "---|" : "---:|";
    out += '\n';
    for (const auto& r : t.rows) {
        out += "|";
        for (const auto& c : r) out += " " + c + " |";
        out += '\n';
    }
    return out;
}

namespace {

// ---- per-controller aggregates

struct Aggregate {
    // goodput: bytes delivered to the receiving application ÷ test start to
    // its last byte (RunResult::goodput). Ranks and ratios use it, never the
    // sender bitrate, which counts bytes still queued on the path when -t ends.
    Stat sender_bytes, receiver_bytes, sender_bitrate, goodput, retransmits, duration, drain, mb_per_retr;
    Stat queue_delay_p95, path_loss;  // ms; percent of datagrams
    double cwnd_lo = 0, cwnd_hi = 0;  // typical range: mean over runs of each run's min and max
    double interval_cv = 0;           // variability of the interval bitrate (run 0)
    unsigned failed = 0;
};

Aggregate aggregate(const std::vector<const RunResult*>& runs) {
    Aggregate a;
    std::vector<double> sb, rb, sr, gp, re, du, dr, mpr, lo, hi, qd, ls;
    for (const auto* r : runs) {
        if (!r->error.empty()) ++a.failed;
        sb.push_back(static_cast<double>(r->sender_bytes));
        rb.push_back(static_cast<double>(r->receiver_bytes));
        sr.push_back(r->sender_bitrate());
        gp.push_back(r->goodput());
        re.push_back(static_cast<double>(r->retransmits));
        du.push_back(r->receiver_seconds);
        dr.push_back(r->drain_seconds());
        if (r->path.measured) {
            qd.push_back(r->path.queue_delay_p95_ms);
            ls.push_back(r->path.loss_rate() * 100);
        }
        if (r->retransmits > 0) mpr.push_back(r->sender_bytes / 1048576.0 / static_cast<double>(r->retransmits));
        if (!r->intervals.empty()) {
            auto [mn, mx] = std::minmax_element(r->intervals.begin(), r->intervals.end(),
                                                [](const auto& x, const auto& y) { return x.cwnd < y.cwnd; });
            lo.push_back(static_cast<double>(mn->cwnd));
            hi.push_back(static_cast<double>(mx->cwnd));
        }
    }
    a.sender_bytes = make_stat(sb);
    a.receiver_bytes = make_stat(rb);
    a.sender_bitrate = make_stat(sr);
    a.goodput = make_stat(gp);
    a.retransmits = make_stat(re);
    a.duration = make_stat(du);
    a.drain = make_stat(dr);
    a.mb_per_retr = make_stat(mpr);
    a.queue_delay_p95 = make_stat(qd);
    a.path_loss = make_stat(ls);
    a.cwnd_lo = make_stat(lo).mean;
    a.cwnd_hi = make_stat(hi).mean;
    if (!runs.empty() && runs[0]->intervals.size() > 1) {
        std::vector<double> b;
        for (const auto& iv : runs[0]->intervals) {
            double dt = iv.end_s - iv.begin_s;
            if (dt > 0) b.push_back(iv.bytes_sent * 8.0 / dt);
        }
        Stat s = make_stat(b);
        if (s.mean > 0 && b.size() > 1) {
            double ss = 0;
            for (double x : b) ss += (x - s.mean) * (x - s.mean);
            a.interval_cv = std::sqrt(ss / (b.size() - 1)) / s.mean;
        }
    }
    return a;
}

// "mean" or "mean ± ci" with the given formatter.
template <class F>
std::string cell(const Stat& s, F&& f) {
    if (s.n == 0) return "n/a";
    if (s.n < 2) return f(s.mean);
    return f(s.mean) + " ± " + f(s.ci95);
}

std::string count_fmt(double v) { return fmt::format("{:.0f}", v); }
std::string count1_fmt(double v) { return fmt::format("{:.1f}", v); }
std::string mb_fmt(double v) { return fmt::format("{:.2f} MB", v); }
std::string secs_fmt(double v) { return fmt::format("{:.2f} s", v); }
std::string ms_fmt(double v) { return fmt::format("{:.1f} ms", v); }
std::string pct_fmt(double v) { return fmt::format("{:.2f} %", v); }

// A table with one column per controller: its header, and each controller's aggregate in column order.
std::vector<Aggregate> metric_columns(const Experiment& e, Table& t) {
    t.header = {"metric"};
    std::vector<Aggregate> ag;
    for (const auto& c : e.controllers) {
        t.header.push_back(c);
        ag.push_back(aggregate(e.runs_of(c)));
    }
    return ag;
}

Table overall_table(const Experiment& e) {
    Table t;
    const auto ag = metric_columns(e, t);
    bool rep = e.repeats > 1;
    auto row = [&](std::string name, auto&& get, auto&& f) {
        std::vector<std::string> r{std::move(name)};
        for (const auto& a : ag) r.push_back(cell(get(a), f));
        t.rows.push_back(std::move(r));
    };
    row("transferred (sender)", [](const Aggregate& a) { return a.sender_bytes; }, format_bytes);
    row("received (receiver)", [](const Aggregate& a) { return a.receiver_bytes; }, format_bytes);
    row("goodput (receiver)", [](const Aggregate& a) { return a.goodput; }, format_bitrate);
    row("average bitrate (sender)", [](const Aggregate& a) { return a.sender_bitrate; }, format_bitrate);
    row("total retransmissions", [](const Aggregate& a) { return a.retransmits; }, rep ? count1_fmt : count_fmt);
    row("test duration (receiver, to the last byte)", [](const Aggregate& a) { return a.duration; }, secs_fmt);
    row("drain after sending stopped (receiver)", [](const Aggregate& a) { return a.drain; }, secs_fmt);
    if (std::any_of(ag.begin(), ag.end(), [](const Aggregate& a) { return a.queue_delay_p95.n > 0; })) {
        row("p95 queueing delay (path)", [](const Aggregate& a) { return a.queue_delay_p95; }, ms_fmt);
        row("packets dropped by the path", [](const Aggregate& a) { return a.path_loss; }, pct_fmt);
    }
    return t;
}

Table summary_table(const Experiment& e) {
    Table t;
    const auto ag = metric_columns(e, t);
    bool rep = e.repeats > 1;
    std::vector<std::string> goodput{"goodput (receiver)"}, bitrate{"average bitrate (sender)"},
        retr{"total retransmissions"}, mpr{"megabytes per retransmission"}, cwnd{"typical cwnd range"};
    for (const auto& a : ag) {
        goodput.push_back(cell(a.goodput, format_bitrate));
        bitrate.push_back(cell(a.sender_bitrate, format_bitrate));
        retr.push_back(cell(a.retransmits, rep ? count1_fmt : count_fmt));
        mpr.push_back(a.mb_per_retr.n ? cell(a.mb_per_retr, mb_fmt) : "no retransmissions");
        cwnd.push_back(format_cwnd(a.cwnd_lo) + " – " + format_cwnd(a.cwnd_hi));
    }
    t.rows = {goodput, bitrate, retr, mpr, cwnd};
    return t;
}

// The controllers by mean goodput, highest first (ties keep the --cc order).
std::vector<std::string> goodput_ranking(const Experiment& e) {
    std::vector<std::pair<std::string, double>> g;
    for (const auto& c : e.controllers) g.emplace_back(c, aggregate(e.runs_of(c)).goodput.mean);
    std::stable_sort(g.begin(), g.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    std::vector<std::string> out;
    for (auto& [c, v] : g) out.push_back(c);
    return out;
}

// What the summary's "goodput" means, under every rendering of it.
constexpr const char* kGoodputNote =
    "Goodput = bytes delivered to the receiving application ÷ time from the test start to its last byte; "
    "controllers are ranked and compared on it, not on the sender bitrate";

std::string ranking_line(const Experiment& e) {
    std::vector<std::string> parts;
    for (const auto& c : goodput_ranking(e))
        parts.push_back(fmt::format("{} {}", c, format_bitrate(aggregate(e.runs_of(c)).goodput.mean)));
    return fmt::format("ranked by goodput: {}", fmt::join(parts, " > "));
}

std::vector<std::string> characteristics(const Experiment& e) {
    std::vector<std::string> lines;
    // Compare against cubic when it ran (the default every stack ships), else the first controller.
    std::string base = e.controllers.empty() ? "" : e.controllers.front();
    for (const auto& c : e.controllers) {
        if (c == "cubic") base = c;
    }
    double base_rate = aggregate(e.runs_of(base)).goodput.mean;
    for (const auto& c : e.controllers) {
        Aggregate a = aggregate(e.runs_of(c));
        std::string rel = c != base && base_rate > 0
                              ? fmt::format(" ({:.2f}× {})", a.goodput.mean / base_rate, base)
                              : std::string();
        std::string line = fmt::format(
            "{}: goodput {}{}, sender bitrate {}, {:.0f} retransmissions, {}, cwnd {} – {}, "
            "interval bitrate varies by {:.0f} % (CV)",
            c, format_bitrate(a.goodput.mean), rel, format_bitrate(a.sender_bitrate.mean), a.retransmits.mean,
            a.mb_per_retr.n ? fmt::format("{:.2f} MB per retransmission", a.mb_per_retr.mean)
                            : std::string("no retransmissions"),
            format_cwnd(a.cwnd_lo), format_cwnd(a.cwnd_hi), a.interval_cv * 100);
        if (a.failed) line += fmt::format("; {} run(s) failed", a.failed);
        lines.push_back(std::move(line));
    }
    return lines;
}

Table interval_table(const RunResult& r) {
    Table t;
    t.header = {"Interval", "Transfer", "Bitrate", "Retr", "Cwnd"};
    for (const auto& iv : r.intervals) {
        double dt = iv.end_s - iv.begin_s;
        t.rows.push_back({fmt::format("{:.2f}-{:.2f} sec", iv.begin_s, iv.end_s), format_bytes(iv.bytes_sent),
                          format_bitrate(dt > 0 ? iv.bytes_sent * 8.0 / dt : 0), std::to_string(iv.retransmits),
                          format_cwnd(iv.cwnd)});
    }
    return t;
}

std::string xml_escape(const std::string& s) {
    std::string o;
    for (char ch : s) {
        switch (ch) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            default: o += ch;
        }
    }
    return o;
}

// A "nice" axis maximum and step (1, 2 or 5 times a power of ten).
std::pair<double, double> nice_axis(double max) {
    if (!(max > 0)) return {1, 0.2};
    double raw = max / 5;
    double mag = std::pow(10, std::floor(std::log10(raw)));
    double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
    // A value a hair above a round number (10.02 s) keeps that number as the axis end.
    return {std::ceil(max / step - 0.02) * step, step};
}

}  // namespace

void print_run(std::ostream& os, const RunResult& r) {
    os << "[ ID] " << r.controller << (r.repeat ? fmt::format(" (repeat {})", r.repeat + 1) : "") << '\n';
    std::istringstream body(render_text(interval_table(r)));
    for (std::string line; std::getline(body, line);) os << "[  1] " << line << '\n';
    os << "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
    os << fmt::format("[  1] 0.00-{:.2f} sec  {}  {}  {:>4}  sender\n", r.sender_seconds, format_bytes(r.sender_bytes),
                      format_bitrate(r.sender_bitrate()), r.retransmits);
    os << fmt::format("[  1] 0.00-{:.2f} sec  {}  {}        receiver{}  ({})\n", r.receiver_seconds,
                      format_bytes(r.receiver_bytes), format_bitrate(r.goodput()), r.byte_exact ? "  (byte-exact)" : "",
                      drain_text(r.sender_seconds, r.receiver_seconds));
    if (!r.error.empty()) os << "[  1] error: " << r.error << '\n';
}

void print_overall(std::ostream& os, const Experiment& e) { os << render_text(overall_table(e)); }

void print_summary(std::ostream& os, const Experiment& e) {
    os << render_text(summary_table(e));
    if (e.repeats > 1) os << fmt::format("(mean ± 95 % confidence half-width over {} runs)\n", e.repeats);
    os << '(' << kGoodputNote << ")\n\n";
    os << ranking_line(e) << '\n';
    for (const auto& l : characteristics(e)) os << l << '\n';
}

std::string to_json(const Experiment& e) {
    json j;
    j["provenance"] = provenance_json(e.start_time);
    j["profile"] = e.profile;
    j["profile_description"] = e.profile_description;
    j["packet_size"] = e.packet_size;
    j["duration_s"] = e.duration_s;
    j["virtual_time"] = e.virtual_time;
    j["repeats"] = e.repeats;
    j["seed"] = e.seed;
    j["ranked_by"] = "goodput_bps";
    j["ranking"] = goodput_ranking(e);
    if (compares_with_article(e)) j["article"] = article_json(e);
    j["controllers"] = json::array();
    for (const auto& c : e.controllers) {
        json jc;
        jc["name"] = c;
        Aggregate a = aggregate(e.runs_of(c));
        auto stat = [](const Stat& s) { return json{{"mean", s.mean}, {"ci95", s.ci95}, {"n", s.n}}; };
        jc["summary"] = {{"sender_bytes", stat(a.sender_bytes)},
                         {"receiver_bytes", stat(a.receiver_bytes)},
                         {"sender_bitrate_bps", stat(a.sender_bitrate)},
                         {"goodput_bps", stat(a.goodput)},
                         {"receiver_bitrate_bps", stat(a.goodput)},
                         {"drain_seconds", stat(a.drain)},
                         {"retransmits", stat(a.retransmits)},
                         {"megabytes_per_retransmission", stat(a.mb_per_retr)},
                         {"cwnd_range_bytes", {a.cwnd_lo, a.cwnd_hi}},
                         {"queue_delay_p95_ms", stat(a.queue_delay_p95)},
                         {"path_loss_percent", stat(a.path_loss)}};
        jc["runs"] = json::array();
        for (const auto* r : e.runs_of(c)) {
            json jr{{"repeat", r->repeat},
                    {"seed", r->seed},
                    {"sender", {{"bytes", r->sender_bytes}, {"seconds", r->sender_seconds},
                                {"bitrate_bps", r->sender_bitrate()}, {"retransmits", r->retransmits}}},
                    {"receiver", {{"bytes", r->receiver_bytes}, {"seconds", r->receiver_seconds},
                                  {"bitrate_bps", r->goodput()}, {"goodput_bps", r->goodput()},
                                  {"drain_seconds", r->drain_seconds()}}},
                    {"packets_lost", r->packets_lost},
                    {"spurious_losses", r->spurious_losses},
                    {"ecn", {{"state", r->ecn_state}, {"ce_reported", r->ecn_ce_reported}}},
                    {"byte_exact", r->byte_exact},
                    {"path", {{"measured", r->path.measured},
                              {"queue_delay_p95_ms", r->path.queue_delay_p95_ms},
                              {"one_way_delay_p95_ms", r->path.one_way_delay_p95_ms},
                              {"sent", r->path.sent},
                              {"dropped_queue", r->path.dropped_queue},
                              {"dropped_other", r->path.dropped_other},
                              {"ce_marked", r->path.ce_marked}}},
                    {"error", r->error},
                    {"intervals", json::array()}};
            for (const auto& iv : r->intervals) {
                double dt = iv.end_s - iv.begin_s;
                jr["intervals"].push_back({{"start", iv.begin_s},
                                           {"end", iv.end_s},
                                           {"bytes_sent", iv.bytes_sent},
                                           {"bytes_received", iv.bytes_received},
                                           {"bitrate_bps", dt > 0 ? iv.bytes_sent * 8.0 / dt : 0.0},
                                           {"retransmits", iv.retransmits},
                                           {"cwnd", iv.cwnd},
                                           {"srtt_ms", iv.srtt_ms}});
            }
            jc["runs"].push_back(std::move(jr));
        }
        j["controllers"].push_back(std::move(jc));
    }
    return j.dump(2) + "\n";
}

std::string to_csv(const Experiment& e) {
    std::string out =
        "controller,repeat,seed,start_s,end_s,bytes_sent,bytes_received,bitrate_bps,retransmits,cwnd_bytes,srtt_ms\n";
    for (const auto& r : e.runs) {
        for (const auto& iv : r.intervals) {
            double dt = iv.end_s - iv.begin_s;
            out += fmt::format("{},{},{},{:.3f},{:.3f},{},{},{:.0f},{},{},{:.3f}\n", r.controller, r.repeat, r.seed,
                               iv.begin_s, iv.end_s, iv.bytes_sent, iv.bytes_received,
                               dt > 0 ? iv.bytes_sent * 8.0 / dt : 0.0, iv.retransmits, iv.cwnd, iv.srtt_ms);
        }
    }
    return out;
}

std::string to_markdown(const Experiment& e) {
    std::string out = fmt::format("# Controller comparison: {}\n\n", e.profile);
    out += fmt::format("- profile: `{}` — {}\n- packet size: {} bytes\n- duration: {:.0f} s per run, {} repeat(s), "
                       "seed {}\n- time: {}\n",
                       e.profile, e.profile_description, e.packet_size, e.duration_s, e.repeats, e.seed,
                       e.virtual_time ? "virtual (deterministic simulation)" : "real sockets over loopback");
    const Provenance p = provenance(e.start_time);
    out += fmt::format("- produced by: ndm {} (commit {}), started {} on {} ({})\n- command: `{}`\n\n", p.version,
                       p.git_commit, p.start_time, p.host, p.kernel, p.command_line);
    out += "## Overall results\n\n" + render_markdown(overall_table(e));
    if (e.repeats > 1) out += fmt::format("\nCells are mean ± 95 % confidence half-width over {} runs.\n", e.repeats);
    out += "\n## Interval tables\n";
    for (const auto& c : e.controllers) {
        auto runs = e.runs_of(c);
        if (runs.empty()) continue;
        out += fmt::format("\n### {}{}\n\n", c, e.repeats > 1 ? " (repeat 1)" : "");
        out += render_markdown(interval_table(*runs.front()));
    }
    out += "\n## Comparison summary\n\n" + render_markdown(summary_table(e)) + "\n";
    out += fmt::format("{}.\n\n", kGoodputNote);
    out += "- " + ranking_line(e) + "\n";
    for (const auto& l : characteristics(e)) out += "- " + l + "\n";
    out += article_markdown(e);
    out += fmt::format("\n![goodput and cwnd over time{}](plot.svg)\n",
                       e.repeats > 1 ? fmt::format(": mean and 95 % band over {} runs", e.repeats) : "");
    return out;
}

namespace {

double interval_goodput_mbps(const IntervalRow& iv) {
    const double dt = iv.end_s - iv.begin_s;
    return dt > 0 ? iv.bytes_received * 8.0 / dt / 1e6 : 0.0;
}
double interval_cwnd_kb(const IntervalRow& iv) { return iv.cwnd / 1024.0; }

// One controller's curve over its runs: at each interval index, the mean
// over the runs that reached it and the 95 % confidence band (Student t),
// the band clamped at 0 since neither goodput nor cwnd can be negative.
struct Curve {
    std::vector<double> t, mean, lo, hi;
};
Curve mean_curve(const std::vector<const RunResult*>& runs, double (*value_of)(const IntervalRow&)) {
    Curve c;
    for (std::size_t k = 0;; ++k) {
        std::vector<double> v;
        double t = 0;
        for (const auto* r : runs) {
            if (k >= r->intervals.size()) continue;
            v.push_back(value_of(r->intervals[k]));
            t += r->intervals[k].end_s;
        }
        if (v.empty()) break;
        const Stat s = make_stat(v);
        c.t.push_back(t / static_cast<double>(v.size()));
        c.mean.push_back(s.mean);
        c.lo.push_back(std::max(0.0, s.mean - s.ci95));
        c.hi.push_back(s.mean + s.ci95);
    }
    return c;
}

// Legend entries: the controller, and with repeats how many runs its mean is of.
std::string legend_label(const Experiment& e, const std::string& controller) {
    if (e.repeats < 2) return controller;
    return fmt::format("{} (mean of {} runs)", controller, e.runs_of(controller).size());
}

// The width the legend right of the panels needs: its longest label at the
// 12-pixel sans-serif font (at most ~7.2 pixels a character), after the
// 52-pixel swatch, and a margin. At least 200 pixels.
double legend_width(const Experiment& e) {
    std::size_t longest = 0;
    for (const auto& c : e.controllers) longest = std::max(longest, legend_label(e, c).size());
    return std::max(200.0, 52 + 7.2 * static_cast<double>(longest) + 16);
}

// The legend (right of the panels) and, below them at notes_y, what the lines are.
std::string svg_legend(const Experiment& e, double x0, double top, double left, double notes_y,
                       const char* const* colors, std::size_t n_colors) {
    const bool repeated = e.repeats > 1;
    std::string s;
    for (std::size_t ci = 0; ci < e.controllers.size(); ++ci) {
        const double y = top + 10 + 22.0 * static_cast<double>(ci);
        s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>\n",
                         x0 + 15, y, x0 + 45, y, colors[ci % n_colors]);
        s += fmt::format("<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x0 + 52, y + 4,
                         xml_escape(legend_label(e, e.controllers[ci])));
    }
    const std::string note =
        repeated ? fmt::format("Lines: mean over {} runs (seeds {}–{}); shaded: 95 % confidence band (Student t); "
                               "faint: each run.",
                               e.repeats, e.seed, e.seed + e.repeats - 1)
                 : fmt::format("One run (seed {}): one draw of the random path; --repeat 10 draws each "
                               "controller's mean with its 95 % confidence band.",
                               e.seed);
    s += fmt::format("<text class=\"note\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", left, notes_y,
                     xml_escape(note));
    s += fmt::format("<text class=\"note\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">Goodput: bytes delivered to "
                     "the receiving application per interval of the send phase.</text>\n",
                     left, notes_y + 16);
    return s;
}

}  // namespace

std::string to_svg(const Experiment& e) {
    // The panels keep their size; the legend's column grows with its longest
    // label, and the two notes sit below the lower panel's "time (s)" label
    // (at panel bottom + 34), never on it.
    constexpr double plot_w = 620, panel_h = 260, left = 80, top = 40, gap = 70;
    const double right = legend_width(e);
    const double W = left + plot_w + right;
    const double notes_y = top + 2 * panel_h + gap + 34 + 24;
    const double H = notes_y + 16 + 14;
    static constexpr const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
    const bool repeated = e.repeats > 1;

    double tmax = e.duration_s > 0 ? e.duration_s : 1;
    for (const auto& r : e.runs)
        for (const auto& iv : r.intervals) tmax = std::max(tmax, iv.end_s);
    std::string s = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
        W, H, left, xml_escape(fmt::format("{} — {} byte packets, {}", e.profile, e.packet_size,
                                           e.virtual_time ? "virtual time" : "real sockets")));

    auto points = [](const std::vector<double>& t, const std::vector<double>& v, auto&& X, auto&& Y) {
        std::string pts;
        for (std::size_t i = 0; i < t.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", X(t[i]), Y(v[i]));
        return pts;
    };
    auto panel = [&](double y0, const std::string& label, double (*value_of)(const IntervalRow&)) {
        std::vector<Curve> curves;
        double vmax = 0;
        for (const auto& c : e.controllers) {
            const auto runs = e.runs_of(c);
            curves.push_back(mean_curve(runs, value_of));
            for (double v : curves.back().hi) vmax = std::max(vmax, v);
            for (const auto* r : runs)
                for (const auto& iv : r->intervals) vmax = std::max(vmax, value_of(iv));
        }
        auto [axis_max, step] = nice_axis(vmax);
        auto [t_axis, t_step] = nice_axis(tmax);
        auto X = [&](double t) { return left + plot_w * t / t_axis; };
        auto Y = [&](double v) { return y0 + panel_h - panel_h * v / axis_max; };
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", left, y0,
                         plot_w, panel_h);
        for (double v = 0; v <= axis_max + step / 2; v += step) {
            s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, Y(v),
                             left + plot_w, Y(v));
            s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, Y(v) + 4,
                             fmt::format("{:g}", v));
        }
        for (double t = 0; t <= t_axis + t_step / 2; t += t_step) {
            s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n", X(t),
                             y0 + panel_h + 16, t);
        }
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1f} {:.1f})\">{}</text>\n",
                         left - 52, y0 + panel_h / 2, left - 52, y0 + panel_h / 2, xml_escape(label));
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time (s)</text>\n", left + plot_w / 2,
                         y0 + panel_h + 34);
        for (std::size_t ci = 0; ci < e.controllers.size(); ++ci) {
            const char* color = colors[ci % std::size(colors)];
            const std::string name = xml_escape(e.controllers[ci]);
            const Curve& c = curves[ci];
            if (c.t.empty()) continue;
            if (repeated) {
                // The band (upper edge forward, lower edge back), then every run faintly.
                std::vector<double> bt(c.t.rbegin(), c.t.rend()), bl(c.lo.rbegin(), c.lo.rend());
                s += fmt::format("<polygon class=\"band\" data-controller=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" "
                                 "stroke=\"none\" points=\"{}{}\"/>\n",
                                 name, color, points(c.t, c.hi, X, Y), points(bt, bl, X, Y));
                for (const auto* r : e.runs_of(e.controllers[ci])) {
                    std::vector<double> t, v;
                    for (const auto& iv : r->intervals) {
                        t.push_back(iv.end_s);
                        v.push_back(value_of(iv));
                    }
                    s += fmt::format("<polyline class=\"run\" data-controller=\"{}\" fill=\"none\" stroke=\"{}\" "
                                     "stroke-opacity=\"0.3\" stroke-width=\"1\" points=\"{}\"/>\n",
                                     name, color, points(t, v, X, Y));
                }
            }
            s += fmt::format("<polyline class=\"mean\" data-controller=\"{}\" fill=\"none\" stroke=\"{}\" "
                             "stroke-width=\"2\" points=\"{}\"/>\n",
                             name, color, points(c.t, c.mean, X, Y));
        }
    };
    panel(top, "goodput (Mbit/s)", interval_goodput_mbps);
    panel(top + panel_h + gap, "cwnd (KBytes)", interval_cwnd_kb);

    s += svg_legend(e, left + plot_w, top, left, notes_y, colors, std::size(colors));
    s += "</svg>\n";
    return s;
}

}  // namespace ndm::tools
