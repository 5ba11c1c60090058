// The tools' formatting and statistics: iperf3's units and the confidence
// intervals ndm-compare prints.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report.hpp"
#include "common/units.hpp"

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
