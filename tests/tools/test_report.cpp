// The tools' formatting and statistics: iperf3's units and the confidence
// intervals ndm-compare prints.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/cli/units.hpp"
#include "tools/compare/report.hpp"
#include "tools/compare/seed_article.hpp"

using namespace ndm::tools;

TEST_CASE("units: iperf3-style bytes and bitrates, three significant digits") {
    CHECK(format_bytes(2.38 * 1048576) == "2.38 MBytes");
    CHECK(format_bytes(256 * 1024) == "256 KBytes");
    CHECK(format_bytes(1.75 * 1048576) == "1.75 MBytes");
    CHECK(format_bytes(512) == "512 Bytes");
    CHECK(format_bitrate(19.9e6) == "19.9 Mbits/sec");
    CHECK(format_bitrate(8.39e6) == "8.39 Mbits/sec");
    CHECK(format_bitrate(112e6) == "112 Mbits/sec");
    CHECK(format_bitrate(2.5e9) == "2.50 Gbits/sec");
}

TEST_CASE("units: sizes with binary suffixes, clear errors") {
    CHECK(parse_size("32M") == 32u << 20);
    CHECK(parse_size("1g") == 1u << 30);
    CHECK(parse_size("1452") == 1452);
    CHECK(parse_size("0.5K") == 512);
    CHECK_THROWS_AS(parse_size(""), std::invalid_argument);
    CHECK_THROWS_WITH(parse_size("12Q"), doctest::Contains("bad size \"12Q\""));
    CHECK_THROWS_AS(parse_size("-3M"), std::invalid_argument);
}

TEST_CASE("student_t_quantile: exact two-sided 95 % values, closed forms, symmetry") {
    // Table values (3 decimals) of t(0.975, df).
    const std::pair<double, double> table[] = {{1, 12.706}, {2, 4.303}, {4, 2.776},  {9, 2.262},
                                               {29, 2.045}, {60, 2.000}, {1000, 1.962}};
    for (auto [df, t] : table) {
        CAPTURE(df);
        CHECK(student_t_quantile(0.975, df) == doctest::Approx(t).epsilon(0.0004 / t));
    }
    // Closed forms: df 1 is Cauchy, tan(π(p − ½)); df 2 is (2p − 1)/√(2p(1 − p)).
    const double pi = std::acos(-1.0);
    for (double p : {0.6, 0.9, 0.975, 0.995, 0.9995}) {
        CAPTURE(p);
        CHECK(student_t_quantile(p, 1) == doctest::Approx(std::tan(pi * (p - 0.5))).epsilon(1e-10));
        CHECK(student_t_quantile(p, 2) == doctest::Approx((2 * p - 1) / std::sqrt(2 * p * (1 - p))).epsilon(1e-10));
        CHECK(student_t_quantile(1 - p, 7) == doctest::Approx(-student_t_quantile(p, 7)).epsilon(1e-12));
    }
    CHECK(student_t_quantile(0.995, 10) == doctest::Approx(3.169273).epsilon(1e-6));
    CHECK(student_t_quantile(0.975, 1e7) == doctest::Approx(1.959964).epsilon(1e-6));  // the normal limit
    CHECK(student_t_quantile(0.5, 3) == 0);
    CHECK_THROWS_AS(student_t_quantile(1, 3), std::invalid_argument);
    CHECK_THROWS_AS(student_t_quantile(0.9, 0), std::invalid_argument);
}

TEST_CASE("make_stat: mean and Student-t 95 % half-width") {
    Stat s = make_stat({1, 2, 3});
    CHECK(s.n == 3);
    CHECK(s.mean == doctest::Approx(2));
    CHECK(s.ci95 == doctest::Approx(4.302653 / std::sqrt(3.0)));  // sd 1, t(0.975, 2)
    // 41 values: t(0.975, 40) = 2.021, not the normal 1.96 (a CI 3 % too narrow).
    std::vector<double> many;
    for (int i = 0; i < 41; ++i) many.push_back(i);
    const double sd = std::sqrt(41.0 * 42 / 12);  // of 0..40
    CHECK(make_stat(many).ci95 == doctest::Approx(2.021075 * sd / std::sqrt(41.0)).epsilon(1e-6));
    CHECK(make_stat({5}).ci95 == 0);
    CHECK(make_stat({}).n == 0);
}

TEST_CASE("reports render every format from one experiment") {
    Experiment e;
    e.profile = "test";
    e.packet_size = 1452;
    e.duration_s = 2;
    e.controllers = {"reno", "cubic"};
    for (const char* cc : {"reno", "cubic"}) {
        RunResult r;
        r.controller = cc;
        r.sender_bytes = 2 << 20;
        r.sender_seconds = 2;
        r.receiver_bytes = 2 << 20;
        r.receiver_seconds = 2.1;
        r.retransmits = 4;
        r.byte_exact = true;
        r.intervals = {{0, 1, 1 << 20, 1 << 20, 2, 100000, 50}, {1, 2, 1 << 20, 1 << 20, 2, 200000, 55}};
        e.runs.push_back(r);
    }
    auto svg = to_svg(e);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(to_csv(e).find("cubic,0,0,1.000,2.000") != std::string::npos);
    auto md = to_markdown(e);
    CHECK(md.find("| megabytes per retransmission | 0.50 MB | 0.50 MB |") != std::string::npos);
    CHECK(to_json(e).find("\"megabytes_per_retransmission\"") != std::string::npos);
}

namespace {

// A run of `cc`: two 1-second intervals delivering `mbps` each; the sender put
// `sent_mb` MBytes on the wire in 2 s and the last byte arrived at `last_s`.
RunResult make_run(const std::string& cc, unsigned repeat, double mbps, double sent_mb, double last_s) {
    RunResult r;
    r.controller = cc;
    r.repeat = repeat;
    r.seed = 1 + repeat;
    r.sender_bytes = static_cast<std::uint64_t>(sent_mb * 1048576);
    r.sender_seconds = 2;
    r.receiver_bytes = r.sender_bytes;
    r.receiver_seconds = last_s;
    r.retransmits = 4;
    r.byte_exact = true;
    const auto b = static_cast<std::uint64_t>(mbps * 1e6 / 8);
    r.intervals = {{0, 1, b, b, 2, 100000, 50}, {1, 2, b, b, 2, 200000, 55}};
    return r;
}

std::size_t count(const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("summary: controllers are ranked and compared on goodput, not on the sender bitrate") {
    // ndm-lkm sends 3× cubic's bytes into a deep queue: its last byte arrives 28 s in.
    Experiment e;
    e.profile = "trace";
    e.duration_s = 2;
    e.controllers = {"ndm-lkm", "cubic"};
    e.runs = {make_run("ndm-lkm", 0, 8, 6, 28), make_run("cubic", 0, 8, 2, 2.1)};
    std::ostringstream out;
    print_summary(out, e);
    const std::string text = out.str();
    CAPTURE(text);
    // 6 MB in 28 s against 2 MB in 2.1 s: 0.23× cubic's goodput, though the sender bitrate is 3×.
    CHECK(text.find("ndm-lkm: goodput 1.80 Mbits/sec (0.23× cubic)") != std::string::npos);
    CHECK(text.find("ranked by goodput: cubic 7.99 Mbits/sec > ndm-lkm 1.80 Mbits/sec") != std::string::npos);
    CHECK(text.find("goodput (receiver)") != std::string::npos);
    CHECK(text.find("average bitrate (sender)") != std::string::npos);  // still shown, as a column
    CHECK(text.find("3.00×") == std::string::npos);
    const auto j = nlohmann::json::parse(to_json(e));
    CHECK(j["ranked_by"] == "goodput_bps");
    CHECK(j["ranking"] == nlohmann::json::array({"cubic", "ndm-lkm"}));
    CHECK(j["controllers"][0]["summary"]["goodput_bps"]["mean"].get<double>() ==
          doctest::Approx(6 * 1048576 * 8 / 28.0));
    CHECK(j["controllers"][0]["runs"][0]["receiver"]["drain_seconds"].get<double>() == doctest::Approx(26));
    std::ostringstream overall;
    print_overall(overall, e);
    CHECK(overall.str().find("drain after sending stopped (receiver)") != std::string::npos);
    CHECK(to_markdown(e).find("- ranked by goodput: cubic") != std::string::npos);
}

TEST_CASE("plot: with repeats, the mean and its 95 % band over all runs, each run faint, labelled") {
    Experiment e;
    e.profile = "test";
    e.duration_s = 2;
    e.repeats = 3;
    e.seed = 1;
    e.controllers = {"reno", "cubic"};
    for (unsigned k = 0; k < 3; ++k) {
        e.runs.push_back(make_run("reno", k, 1.0 + k, 1, 2.1));  // 1, 2, 3 Mbit/s
        e.runs.push_back(make_run("cubic", k, 2, 1, 2.1));
    }
    const std::string svg = to_svg(e);
    // Each run faintly (two panels), one band and one mean line per panel.
    CHECK(count(svg, "class=\"run\" data-controller=\"reno\"") == 6);
    CHECK(count(svg, "class=\"band\" data-controller=\"reno\"") == 2);
    CHECK(count(svg, "class=\"mean\" data-controller=\"reno\"") == 2);
    CHECK(svg.find("reno (mean of 3 runs)") != std::string::npos);
    CHECK(svg.find("mean over 3 runs (seeds 1–3); shaded: 95 % confidence band") != std::string::npos);
    // reno's mean is 2 Mbit/s; the band's top 2 + t(0.975, 2)·1/√3 = 4.48 makes the axis 0–5,
    // so the mean line sits at 2/5 of the 260-pixel panel above its bottom (y = 40 + 260 − 104).
    const auto at = svg.find("class=\"mean\" data-controller=\"reno\"");
    const auto p0 = svg.find("points=\"", at) + 8;
    const std::string pts = svg.substr(p0, svg.find('"', p0) - p0);
    CHECK(pts.find(",196.0 ") != std::string::npos);
    CHECK(count(pts, ",196.0 ") == 2);
    // A single run: no band, no faint copies, said so.
    Experiment one = e;
    one.repeats = 1;
    one.runs = {make_run("reno", 0, 1, 1, 2.1), make_run("cubic", 0, 2, 1, 2.1)};
    const std::string svg1 = to_svg(one);
    CHECK(count(svg1, "class=\"band\"") == 0);
    CHECK(count(svg1, "class=\"run\"") == 0);
    CHECK(svg1.find("One run (seed 1)") != std::string::npos);
}

TEST_CASE("article: the published figures beside ndm's, a verdict per controller, only for urban-lte") {
    // Published receiver bitrates: ndm-lkm 16.4, cubic 28.8, reno 36.5 Mbit/s
    // ("NDM-TCP vs TCP Cubic vs TCP Reno", Dev.to, 2026-02-12).
    REQUIRE(published_run("cubic") != nullptr);
    CHECK(published_run("cubic")->receiver_bitrate == doctest::Approx(28.8e6));
    CHECK(published_run("bbr") == nullptr);
    CHECK(published_seed_runs().size() == 3);
    Experiment e;
    e.profile = "urban-lte";
    e.packet_size = 65507;
    e.duration_s = 10;
    e.seed = 1;
    e.controllers = {"cubic", "bbr"};
    // One run: cubic's 2 MB in 2.1 s is ~7.99 Mbit/s against the article's 28.8.
    e.runs = {make_run("cubic", 0, 8, 2, 2.1), make_run("bbr", 0, 8, 2, 2.1)};
    REQUIRE(compares_with_article(e));
    std::ostringstream one;
    print_article(one, e);
    CAPTURE(one.str());
    CHECK(one.str().find("Against the published figures") != std::string::npos);
    CHECK(one.str().find("cubic (TCP Cubic)") != std::string::npos);
    CHECK(one.str().find("28.8 Mbits/sec") != std::string::npos);
    CHECK(one.str().find("bbr") == std::string::npos);  // not in the article
    CHECK(one.str().find("cubic: goodput 7.99 Mbits/sec against the article's 28.8 Mbits/sec (-72 %); one run is one "
                         "draw") != std::string::npos);
    CHECK(one.str().find("--repeat 10") != std::string::npos);
    // Repeated: 7, 8, 9 Mbit/s → mean 8 ± 2.48: the article's 28.8 is outside; 27, 29, 31 → 29 ± 4.97: inside.
    e.repeats = 3;
    e.controllers = {"cubic", "reno"};
    e.runs.clear();
    for (unsigned k = 0; k < 3; ++k) {
        const double cubic_mb = (7.0 + k) * 1e6 / 8 * 2 / 1048576, reno_mb = (27.0 + 2 * k) * 1e6 / 8 * 2 / 1048576;
        e.runs.push_back(make_run("cubic", k, 7 + k, cubic_mb, 2));
        e.runs.push_back(make_run("reno", k, 27 + 2 * k, reno_mb, 2));
    }
    const auto lines = article_verdicts(e);
    REQUIRE(lines.size() == 3);
    CAPTURE(lines[0]);
    CAPTURE(lines[1]);
    CHECK(lines[0].find("cubic: the article's 28.8 Mbits/sec is outside ndm's 95 % confidence interval") == 0);
    CHECK(lines[0].find("ndm lower than the article") != std::string::npos);
    CHECK(lines[1].find("reno: the article's 36.5 Mbits/sec is outside") == 0);
    CHECK(lines[2] == "ranking: the article reno > cubic, ndm reno > cubic: the same order");
    e.runs[1] = make_run("reno", 0, 36, 36e6 / 8 * 2 / 1048576, 2);
    e.runs[3] = make_run("reno", 1, 37, 37e6 / 8 * 2 / 1048576, 2);
    e.runs[5] = make_run("reno", 2, 38, 38e6 / 8 * 2 / 1048576, 2);
    CHECK(article_verdicts(e)[1].find("is inside ndm's 95 % confidence interval") != std::string::npos);
    const auto j = nlohmann::json::parse(to_json(e));
    CHECK(j["article"]["controllers"][0]["name"] == "cubic");
    CHECK(j["article"]["controllers"][0]["article_inside_ci95"] == false);
    CHECK(j["article"]["controllers"][1]["article_inside_ci95"] == true);
    CHECK(j["article"]["controllers"][1]["article"]["receiver_bitrate_bps"].get<double>() == doctest::Approx(36.5e6));
    CHECK(j["article"]["source"].get<std::string>().find("Dev.to, 2026-02-12") != std::string::npos);
    CHECK(to_markdown(e).find("## Against the published figures") != std::string::npos);
    // Another profile: no comparison anywhere.
    e.profile = "lte-verizon";
    CHECK_FALSE(compares_with_article(e));
    CHECK(to_markdown(e).find("Against the published") == std::string::npos);
    CHECK(nlohmann::json::parse(to_json(e)).count("article") == 0);
}

TEST_CASE("plot: the legend fits its longest label and the notes sit below the lower time axis") {
    Experiment e;
    e.profile = "test";
    e.duration_s = 2;
    e.repeats = 2;
    e.controllers = {"ndm:forgive=4:standing=0.3", "cubic"};
    for (unsigned k = 0; k < 2; ++k) {
        e.runs.push_back(make_run("ndm:forgive=4:standing=0.3", k, 1, 1, 2.1));
        e.runs.push_back(make_run("cubic", k, 2, 1, 2.1));
    }
    const std::string svg = to_svg(e);
    auto attr = [&](std::size_t from, const std::string& name) {
        const auto p = svg.find(name + "=\"", from) + name.size() + 2;
        return std::stod(svg.substr(p, svg.find('"', p) - p));
    };
    const double width = attr(0, "width");
    const std::string label = "ndm:forgive=4:standing=0.3 (mean of 2 runs)";
    const auto at = svg.find(">" + label + "<");
    REQUIRE(at != std::string::npos);
    const double x = attr(svg.rfind("<text", at), "x");
    CHECK(x + 7.2 * static_cast<double>(label.size()) <= width);  // 7.2 px a character at most, at 12 px
    // The lower panel's "time (s)" label and the first note below it, 16 px or more apart.
    const auto time_label = svg.rfind(">time (s)<");
    const double axis_y = attr(svg.rfind("<text", time_label), "y");
    const auto note = svg.find("class=\"note\"");
    REQUIRE(note != std::string::npos);
    CHECK(attr(note, "y") >= axis_y + 16);
    CHECK(attr(svg.find("class=\"note\"", note + 1), "y") + 4 <= attr(0, "height"));
}
