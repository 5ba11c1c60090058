// The published seed experiment ndm-compare reproduces, and ndm's results
// beside it: "NDM-TCP vs TCP Cubic vs TCP Reno: urban LTE/4G network
// performance test" (Dev.to, 2026-02-12): iperf3 through `tc netem delay 50ms
// 20ms loss 5%` on a VM's loopback (64 KB segments), one 10 s run per
// controller. Its figures live here and nowhere else in the code.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/compare/report.hpp"

namespace ndm::tools {

// One controller's line of the article's "overall results" table. Bytes as
// iperf3 prints them (MBytes = 2^20 bytes), bitrates in bit/s (Mbits/s = 10^6).
struct PublishedRun {
    std::string_view controller;  // ndm's name for it (ndm-lkm is the published NDM-TCP module)
    std::string_view article_name;
    double sender_bytes;
    double receiver_bytes;
    double sender_bitrate;    // bit/s
    double receiver_bitrate;  // bit/s: what ndm's goodput is compared with
    double retransmits;
    double receiver_seconds;
};

std::span<const PublishedRun> published_seed_runs();
// The article's line for a --cc entry (its controller name, without options), or nullptr.
const PublishedRun* published_run(std::string_view controller);

// Whether the experiment is the article's: its profile (urban-lte) and at
// least one of its controllers. Only then is the comparison shown.
bool compares_with_article(const Experiment& e);

// One row per controller the article measured: its figures beside ndm's
// (mean ± 95 % half-width with --repeat).
Table article_table(const Experiment& e);
// One line per controller: with --repeat, whether the article's receiver
// bitrate lies inside ndm's 95 % confidence interval of the goodput; with a
// single run, that one run is one draw and --repeat 10 gives an interval.
std::vector<std::string> article_verdicts(const Experiment& e);
// What differs from the article's set-up (packet size, duration), or "".
std::string article_setup_note(const Experiment& e);
// The table, the set-up note and the verdicts under a heading naming the
// article, as text (ndm-compare's output) and as a Markdown section
// (report.md); nothing when compares_with_article() is false.
void print_article(std::ostream& os, const Experiment& e);
std::string article_markdown(const Experiment& e);
// {"source": ..., "controllers": [{name, article: {...}, ndm: {...}, verdict}]}.
nlohmann::json article_json(const Experiment& e);

}  // namespace ndm::tools
