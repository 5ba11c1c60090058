// Results of a controller comparison and their renderings: iperf3-style
// interval tables, the seed experiment's overall and summary tables (plain
// text and Markdown), JSON, CSV and an SVG plot. Independent of how the runs
// were made (virtual time or real sockets).
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ndm::tools {

struct IntervalRow {
    double begin_s = 0;
    double end_s = 0;
    std::uint64_t bytes_sent = 0;      // new stream bytes the sender put on the wire
    std::uint64_t bytes_received = 0;  // delivered to the receiving application
    std::uint64_t retransmits = 0;     // packets carrying retransmitted data
    std::uint64_t cwnd = 0;            // at the end of the interval
    double srtt_ms = 0;
};

// What the emulator saw on the sender → receiver direction of one run.
struct PathMetrics {
    bool measured = false;
    double queue_delay_p95_ms = 0;  // waiting in the bottleneck queue (0 without a rate limit)
    double one_way_delay_p95_ms = 0;
    std::uint64_t sent = 0;            // datagrams the sender put on the path
    std::uint64_t dropped_queue = 0;   // queue overflow or AQM: congestion
    std::uint64_t dropped_other = 0;   // random, burst, outage: not congestion
    std::uint64_t ce_marked = 0;       // ECT datagrams an AQM marked CE instead of dropping
    [[nodiscard]] double loss_rate() const {
        return sent ? static_cast<double>(dropped_queue + dropped_other) / static_cast<double>(sent) : 0.0;
    }
};

struct RunResult {
    std::string controller;
    unsigned repeat = 0;
    std::uint64_t seed = 0;
    std::uint64_t sender_bytes = 0;
    double sender_seconds = 0;
    std::uint64_t receiver_bytes = 0;
    double receiver_seconds = 0;
    std::uint64_t retransmits = 0;
    std::uint64_t packets_lost = 0;
    std::uint64_t spurious_losses = 0;
    std::string ecn_state = "disabled";  // the sender's ECN validation outcome (RFC 9000 §13.4.2)
    std::uint64_t ecn_ce_reported = 0;   // CE marks the receiver reported back (ACK_ECN)
    bool byte_exact = false;
    std::string error;  // empty when the run completed
    std::vector<IntervalRow> intervals;
    PathMetrics path;

    // Bits per second the sender put on the wire during its send phase.
    [[nodiscard]] double sender_bitrate() const;
    // Bits per second delivered to the receiving application, over the time
    // from the test start to the last byte: what controllers are ranked on.
    [[nodiscard]] double goodput() const;
    // How long the last bytes took to arrive after the sender stopped (≥ 0).
    [[nodiscard]] double drain_seconds() const;
};

struct Experiment {
    std::string profile;
    std::string profile_description;
    std::size_t packet_size = 0;
    double duration_s = 0;
    bool virtual_time = false;
    unsigned repeats = 1;
    std::uint64_t seed = 0;
    std::vector<std::string> controllers;
    std::vector<RunResult> runs;
    std::chrono::system_clock::time_point start_time{};  // for the provenance record

    [[nodiscard]] std::vector<const RunResult*> runs_of(const std::string& controller) const;
};

// The p-quantile of Student's t distribution with df degrees of freedom
// (exact to ~1e-12, by inverting the regularized incomplete beta function);
// throws std::invalid_argument unless 0 < p < 1 and df > 0.
double student_t_quantile(double p, double df);

// Mean and 95 % confidence half-width (Student t, t(0.975, n-1)·s/√n) of a sample.
struct Stat {
    double mean = 0;
    double ci95 = 0;
    unsigned n = 0;
};
Stat make_stat(const std::vector<double>& values);

// A plain table: header and rows of cells.
struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};
// Columns padded to their widest cell, the first left-aligned, the rest right-aligned.
std::string render_text(const Table& t);

// iperf3's per-interval rows and closing sender/receiver lines for one run.
void print_run(std::ostream& os, const RunResult& run);
// The seed article's "overall results" table, one column per controller.
void print_overall(std::ostream& os, const Experiment& e);
// The comparison summary (with confidence intervals when repeated) and one
// characteristics line per controller.
void print_summary(std::ostream& os, const Experiment& e);

std::string to_json(const Experiment& e);
std::string to_csv(const Experiment& e);
std::string to_markdown(const Experiment& e);
// Two panels (bitrate and cwnd over time), one line per controller (repeat 0).
std::string to_svg(const Experiment& e);

}  // namespace ndm::tools
