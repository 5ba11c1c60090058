// The tools' formatting and statistics: iperf3's units and the confidence
// intervals ndm-compare prints.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

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

TEST_CASE("make_stat: mean and Student-t 95 % half-width") {
    Stat s = make_stat({1, 2, 3});
    CHECK(s.n == 3);
    CHECK(s.mean == doctest::Approx(2));
    CHECK(s.ci95 == doctest::Approx(4.303 / std::sqrt(3.0)));  // sd 1, t(0.975, 2)
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
