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

#include "ndm/experiment.hpp"

namespace ndm::tools {

// A run's results are the library's (ndm/experiment.hpp), so that the
// Python bindings report the same numbers.
using experiment::IntervalRow;
using experiment::PathMetrics;
using experiment::RunResult;

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
// The same as a Markdown table, the first column left-aligned, the rest right-aligned.
std::string render_markdown(const Table& t);

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
