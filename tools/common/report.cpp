#include "common/report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/units.hpp"

namespace ndm::tools {

double RunResult::sender_bitrate() const { return sender_seconds > 0 ? sender_bytes * 8.0 / sender_seconds : 0; }
double RunResult::receiver_bitrate() const {
    return receiver_seconds > 0 ? receiver_bytes * 8.0 / receiver_seconds : 0;
}

std::vector<const RunResult*> Experiment::runs_of(const std::string& controller) const {
    std::vector<const RunResult*> out;
    for (const auto& r : runs) {
        if (r.controller == controller) out.push_back(&r);
    }
    return out;
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
    double sd = std::sqrt(ss / (v.size() - 1));
    // Two-sided 97.5 % quantiles of Student's t for df = 1..30, then the normal value.
    static constexpr double t975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    std::size_t df = v.size() - 1;
    double t = df <= 30 ? t975[df - 1] : 1.96;
    s.ci95 = t * sd / std::sqrt(static_cast<double>(v.size()));
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

namespace {

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

// ---- per-controller aggregates

struct Aggregate {
    Stat sender_bytes, receiver_bytes, sender_bitrate, receiver_bitrate, retransmits, duration, mb_per_retr;
    Stat queue_delay_p95, path_loss;  // ms; percent of datagrams
    double cwnd_lo = 0, cwnd_hi = 0;  // typical range: mean over runs of each run's min and max
    double interval_cv = 0;           // variability of the interval bitrate (run 0)
    unsigned failed = 0;
};

Aggregate aggregate(const std::vector<const RunResult*>& runs) {
    Aggregate a;
    std::vector<double> sb, rb, sr, rr, re, du, mpr, lo, hi, qd, ls;
    for (const auto* r : runs) {
        if (!r->error.empty()) ++a.failed;
        sb.push_back(static_cast<double>(r->sender_bytes));
        rb.push_back(static_cast<double>(r->receiver_bytes));
        sr.push_back(r->sender_bitrate());
        rr.push_back(r->receiver_bitrate());
        re.push_back(static_cast<double>(r->retransmits));
        du.push_back(r->receiver_seconds);
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
    a.receiver_bitrate = make_stat(rr);
    a.retransmits = make_stat(re);
    a.duration = make_stat(du);
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
    row("average bitrate (sender)", [](const Aggregate& a) { return a.sender_bitrate; }, format_bitrate);
    row("bitrate (receiver)", [](const Aggregate& a) { return a.receiver_bitrate; }, format_bitrate);
    row("total retransmissions", [](const Aggregate& a) { return a.retransmits; }, rep ? count1_fmt : count_fmt);
    row("test duration (receiver)", [](const Aggregate& a) { return a.duration; }, secs_fmt);
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
    std::vector<std::string> bitrate{"average bitrate (sender)"}, retr{"total retransmissions"},
        mpr{"megabytes per retransmission"}, cwnd{"typical cwnd range"};
    for (const auto& a : ag) {
        bitrate.push_back(cell(a.sender_bitrate, format_bitrate));
        retr.push_back(cell(a.retransmits, rep ? count1_fmt : count_fmt));
        mpr.push_back(a.mb_per_retr.n ? cell(a.mb_per_retr, mb_fmt) : "no retransmissions");
        cwnd.push_back(format_cwnd(a.cwnd_lo) + " – " + format_cwnd(a.cwnd_hi));
    }
    t.rows = {bitrate, retr, mpr, cwnd};
    return t;
}

std::vector<std::string> characteristics(const Experiment& e) {
    std::vector<std::string> lines;
    // Compare against cubic when it ran (the default every stack ships), else the first controller.
    std::string base = e.controllers.empty() ? "" : e.controllers.front();
    for (const auto& c : e.controllers) {
        if (c == "cubic") base = c;
    }
    double base_rate = aggregate(e.runs_of(base)).sender_bitrate.mean;
    for (const auto& c : e.controllers) {
        Aggregate a = aggregate(e.runs_of(c));
        std::string rel = c != base && base_rate > 0
                              ? fmt::format(" ({:.2f}× {})", a.sender_bitrate.mean / base_rate, base)
                              : std::string();
        std::string line = fmt::format(
            "{}: {}{}, {:.0f} retransmissions, {}, cwnd {} – {}, interval bitrate varies by {:.0f} % (CV)", c,
            format_bitrate(a.sender_bitrate.mean), rel, a.retransmits.mean,
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
    os << fmt::format("[  1] 0.00-{:.2f} sec  {}  {}        receiver{}\n", r.receiver_seconds,
                      format_bytes(r.receiver_bytes), format_bitrate(r.receiver_bitrate()),
                      r.byte_exact ? "  (byte-exact)" : "");
    if (!r.error.empty()) os << "[  1] error: " << r.error << '\n';
}

void print_overall(std::ostream& os, const Experiment& e) { os << render_text(overall_table(e)); }

void print_summary(std::ostream& os, const Experiment& e) {
    os << render_text(summary_table(e));
    if (e.repeats > 1) os << fmt::format("(mean ± 95 % confidence half-width over {} runs)\n", e.repeats);
    os << '\n';
    for (const auto& l : characteristics(e)) os << l << '\n';
}

std::string to_json(const Experiment& e) {
    using nlohmann::json;
    json j;
    j["profile"] = e.profile;
    j["profile_description"] = e.profile_description;
    j["packet_size"] = e.packet_size;
    j["duration_s"] = e.duration_s;
    j["virtual_time"] = e.virtual_time;
    j["repeats"] = e.repeats;
    j["seed"] = e.seed;
    j["controllers"] = json::array();
    for (const auto& c : e.controllers) {
        json jc;
        jc["name"] = c;
        Aggregate a = aggregate(e.runs_of(c));
        auto stat = [](const Stat& s) { return json{{"mean", s.mean}, {"ci95", s.ci95}, {"n", s.n}}; };
        jc["summary"] = {{"sender_bytes", stat(a.sender_bytes)},
                         {"receiver_bytes", stat(a.receiver_bytes)},
                         {"sender_bitrate_bps", stat(a.sender_bitrate)},
                         {"receiver_bitrate_bps", stat(a.receiver_bitrate)},
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
                                  {"bitrate_bps", r->receiver_bitrate()}}},
                    {"packets_lost", r->packets_lost},
                    {"spurious_losses", r->spurious_losses},
                    {"byte_exact", r->byte_exact},
                    {"path", {{"measured", r->path.measured},
                              {"queue_delay_p95_ms", r->path.queue_delay_p95_ms},
                              {"one_way_delay_p95_ms", r->path.one_way_delay_p95_ms},
                              {"sent", r->path.sent},
                              {"dropped_queue", r->path.dropped_queue},
                              {"dropped_other", r->path.dropped_other}}},
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
                       "seed {}\n- time: {}\n\n",
                       e.profile, e.profile_description, e.packet_size, e.duration_s, e.repeats, e.seed,
                       e.virtual_time ? "virtual (deterministic simulation)" : "real sockets over loopback");
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
    for (const auto& l : characteristics(e)) out += "- " + l + "\n";
    out += "\n![bitrate and cwnd over time](plot.svg)\n";
    return out;
}

std::string to_svg(const Experiment& e) {
    constexpr double W = 900, panel_h = 260, left = 80, right = 170, top = 40, gap = 70;
    const double plot_w = W - left - right;
    const double H = top + 2 * panel_h + gap + 50;
    static constexpr const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};

    double tmax = e.duration_s > 0 ? e.duration_s : 1;
    double rate_max = 0, cwnd_max = 0;
    for (const auto& r : e.runs) {
        for (const auto& iv : r.intervals) {
            double dt = iv.end_s - iv.begin_s;
            if (dt > 0) rate_max = std::max(rate_max, iv.bytes_sent * 8.0 / dt / 1e6);
            cwnd_max = std::max(cwnd_max, iv.cwnd / 1024.0);
            tmax = std::max(tmax, iv.end_s);
        }
    }
    std::string s = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
        W, H, left, xml_escape(fmt::format("{} — {} byte packets, {}", e.profile, e.packet_size,
                                           e.virtual_time ? "virtual time" : "real sockets")));

    auto panel = [&](double y0, double vmax, const std::string& label, auto&& value_of) {
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
        std::size_t ci = 0;
        for (const auto& c : e.controllers) {
            auto runs = e.runs_of(c);
            const char* color = colors[ci++ % std::size(colors)];
            if (runs.empty()) continue;
            std::string pts;
            for (const auto& iv : runs.front()->intervals) {
                pts += fmt::format("{:.1f},{:.1f} ", X(iv.end_s), Y(value_of(iv)));
            }
            s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
        }
    };
    panel(top, rate_max, "bitrate (Mbit/s)", [](const IntervalRow& iv) {
        double dt = iv.end_s - iv.begin_s;
        return dt > 0 ? iv.bytes_sent * 8.0 / dt / 1e6 : 0.0;
    });
    panel(top + panel_h + gap, cwnd_max, "cwnd (KBytes)", [](const IntervalRow& iv) { return iv.cwnd / 1024.0; });

    // Legend.
    std::size_t ci = 0;
    for (const auto& c : e.controllers) {
        double y = top + 10 + 22.0 * static_cast<double>(ci);
        s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>\n",
                         W - right + 15, y, W - right + 45, y, colors[ci % std::size(colors)]);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", W - right + 52, y + 4, xml_escape(c));
        ++ci;
    }
    s += "</svg>\n";
    return s;
}

}  // namespace ndm::tools
