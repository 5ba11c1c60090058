#include "tools/compare/seed_article.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "tools/cli/units.hpp"

namespace ndm::tools {

namespace {

constexpr double kMB = 1048576;  // iperf3's MBytes
constexpr double kMbit = 1e6;    // iperf3's Mbits/sec

// "NDM-TCP vs TCP Cubic vs TCP Reno: urban LTE/4G network performance test"
// (Dev.to, 2026-02-12), table "overall results": sender unless noted.
constexpr std::array<PublishedRun, 3> kPublished{{
    {"ndm-lkm", "NDM-TCP", 22.5 * kMB, 19.8 * kMB, 18.9 * kMbit, 16.4 * kMbit, 23, 10.12},
    {"cubic", "TCP Cubic", 36.4 * kMB, 34.6 * kMB, 30.5 * kMbit, 28.8 * kMbit, 30, 10.08},
    {"reno", "TCP Reno", 47.6 * kMB, 44.1 * kMB, 39.9 * kMbit, 36.5 * kMbit, 52, 10.13},
}};

constexpr const char* kSource =
    "\"NDM-TCP vs TCP Cubic vs TCP Reno: urban LTE/4G network performance test\" (Dev.to, 2026-02-12): "
    "iperf3 through tc netem delay 50ms 20ms loss 5% on loopback (64 KB segments), one 10 s run per controller";

struct Measured {
    Stat goodput, sender_bitrate, retransmits;
};

Measured measure(const Experiment& e, const std::string& controller) {
    std::vector<double> g, s, r;
    for (const auto* run : e.runs_of(controller)) {
        g.push_back(run->goodput());
        s.push_back(run->sender_bitrate());
        r.push_back(static_cast<double>(run->retransmits));
    }
    return {make_stat(g), make_stat(s), make_stat(r)};
}

// The controllers of the experiment that the article measured, in --cc order.
std::vector<std::pair<std::string, const PublishedRun*>> matched(const Experiment& e) {
    std::vector<std::pair<std::string, const PublishedRun*>> out;
    for (const auto& c : e.controllers) {
        if (const auto* p = published_run(c)) out.emplace_back(c, p);
    }
    return out;
}

template <class F>
std::string stat_cell(const Stat& s, F&& f) {
    if (s.n == 0) return "n/a";
    return s.n < 2 ? f(s.mean) : f(s.mean) + " ± " + f(s.ci95);
}

std::string count_fmt(double v) { return fmt::format("{:.0f}", v); }

std::string percent_diff(double ours, double theirs) {
    return theirs > 0 ? fmt::format("{:+.0f} %", (ours / theirs - 1) * 100) : std::string("n/a");
}

std::string verdict(const std::string& name, const PublishedRun& p, const Stat& g) {
    const std::string theirs = format_bitrate(p.receiver_bitrate);
    if (g.n == 0) return fmt::format("{}: no run to compare with the article's {}", name, theirs);
    if (g.n < 2) {
        return fmt::format(
            "{}: goodput {} against the article's {} ({}); one run is one draw (so was the article's): "
            "--repeat 10 gives a 95 % confidence interval to judge the difference",
            name, format_bitrate(g.mean), theirs, percent_diff(g.mean, p.receiver_bitrate));
    }
    const double lo = g.mean - g.ci95, hi = g.mean + g.ci95;
    const bool inside = p.receiver_bitrate >= lo && p.receiver_bitrate <= hi;
    return fmt::format("{}: the article's {} is {} ndm's 95 % confidence interval of the goodput, {} – {} over {} runs "
                       "(mean {}, {}): {}",
                       name, theirs, inside ? "inside" : "outside", format_bitrate(std::max(0.0, lo)),
                       format_bitrate(hi), g.n, format_bitrate(g.mean), percent_diff(g.mean, p.receiver_bitrate),
                       inside ? "consistent with the article"
                              : (g.mean < p.receiver_bitrate ? "ndm lower than the article (itself one run)"
                                                             : "ndm higher than the article (itself one run)"));
}

}  // namespace

std::span<const PublishedRun> published_seed_runs() { return kPublished; }

const PublishedRun* published_run(std::string_view controller) {
    for (const auto& p : kPublished) {
        if (p.controller == controller) return &p;
    }
    return nullptr;
}

bool compares_with_article(const Experiment& e) { return e.profile == "urban-lte" && !matched(e).empty(); }

Table article_table(const Experiment& e) {
    Table t;
    t.header = {"controller", "article: receiver bitrate", "ndm: goodput", "article: sender bitrate",
                "ndm: sender bitrate", "article: retransmissions", "ndm: retransmissions"};
    for (const auto& [name, p] : matched(e)) {
        const Measured m = measure(e, name);
        t.rows.push_back({fmt::format("{} ({})", name, p->article_name), format_bitrate(p->receiver_bitrate),
                          stat_cell(m.goodput, format_bitrate), format_bitrate(p->sender_bitrate),
                          stat_cell(m.sender_bitrate, format_bitrate), count_fmt(p->retransmits),
                          stat_cell(m.retransmits, count_fmt)});
    }
    return t;
}

std::vector<std::string> article_verdicts(const Experiment& e) {
    std::vector<std::string> lines;
    std::vector<std::pair<std::string, double>> ours, theirs;
    for (const auto& [name, p] : matched(e)) {
        const Measured m = measure(e, name);
        lines.push_back(verdict(name, *p, m.goodput));
        ours.emplace_back(name, m.goodput.mean);
        theirs.emplace_back(name, p->receiver_bitrate);
    }
    if (ours.size() > 1) {
        auto order = [](std::vector<std::pair<std::string, double>> v) {
            std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
            std::vector<std::string> names;
            for (auto& [n, _] : v) names.push_back(n);
            return names;
        };
        const auto a = order(theirs), b = order(ours);
        lines.push_back(fmt::format("ranking: the article {}, ndm {}: {}", fmt::join(a, " > "), fmt::join(b, " > "),
                                    a == b ? "the same order"
                                           : (e.repeats > 1 ? "a different order"
                                                            : "a different order (from one run each: --repeat 10)")));
    }
    return lines;
}

std::string article_setup_note(const Experiment& e) {
    std::vector<std::string> diffs;
    if (e.packet_size != 65507) diffs.push_back(fmt::format("{}-byte datagrams, not ~64 KB segments", e.packet_size));
    if (std::fabs(e.duration_s - 10) > 1e-9) diffs.push_back(fmt::format("{:g} s runs, not 10 s", e.duration_s));
    if (diffs.empty()) return {};
    return fmt::format("this experiment differs from the article's set-up: {}", fmt::join(diffs, "; "));
}

void print_article(std::ostream& os, const Experiment& e) {
    if (!compares_with_article(e)) return;
    os << "\nAgainst the published figures (" << kSource << ")\n";
    os << render_text(article_table(e));
    if (e.repeats > 1) os << fmt::format("(ndm: mean ± 95 % confidence half-width over {} runs)\n", e.repeats);
    if (const auto note = article_setup_note(e); !note.empty()) os << '(' << note << ")\n";
    for (const auto& l : article_verdicts(e)) os << l << '\n';
}

std::string article_markdown(const Experiment& e) {
    if (!compares_with_article(e)) return {};
    std::string out = fmt::format("\n## Against the published figures\n\nSource: {}.\n\n", kSource);
    out += render_markdown(article_table(e));
    if (e.repeats > 1) out += fmt::format("\nndm: mean ± 95 % confidence half-width over {} runs.\n", e.repeats);
    if (const auto note = article_setup_note(e); !note.empty()) out += fmt::format("\nNote: {}.\n", note);
    out += "\n";
    for (const auto& l : article_verdicts(e)) out += "- " + l + "\n";
    return out;
}

nlohmann::json article_json(const Experiment& e) {
    nlohmann::json j;
    j["source"] = kSource;
    j["setup_note"] = article_setup_note(e);
    j["controllers"] = nlohmann::json::array();
    const auto verdicts = article_verdicts(e);
    std::size_t i = 0;
    for (const auto& [name, p] : matched(e)) {
        const Measured m = measure(e, name);
        auto stat = [](const Stat& s) { return nlohmann::json{{"mean", s.mean}, {"ci95", s.ci95}, {"n", s.n}}; };
        const double lo = m.goodput.mean - m.goodput.ci95, hi = m.goodput.mean + m.goodput.ci95;
        nlohmann::json inside = nullptr;  // no interval from one run
        if (m.goodput.n > 1) inside = p->receiver_bitrate >= lo && p->receiver_bitrate <= hi;
        j["controllers"].push_back(
            {{"name", name},
             {"article", {{"name", p->article_name},
                          {"sender_bytes", p->sender_bytes},
                          {"receiver_bytes", p->receiver_bytes},
                          {"sender_bitrate_bps", p->sender_bitrate},
                          {"receiver_bitrate_bps", p->receiver_bitrate},
                          {"retransmits", p->retransmits},
                          {"receiver_seconds", p->receiver_seconds}}},
             {"ndm", {{"goodput_bps", stat(m.goodput)},
                      {"sender_bitrate_bps", stat(m.sender_bitrate)},
                      {"retransmits", stat(m.retransmits)}}},
             {"article_inside_ci95", inside},
             {"verdict", verdicts[i++]}});
    }
    if (i < verdicts.size()) j["ranking"] = verdicts[i];
    return j;
}

}  // namespace ndm::tools
