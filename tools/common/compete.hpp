// ndm-compare --compete: controllers sharing one bottleneck at the same time
// (virtual time), with per-flow goodput over time, Jain's fairness index and
// the bottleneck's queueing delay and drops.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/idle_timeout.hpp"
#include "common/report.hpp"
#include "ndm/loss_detection.hpp"

namespace ndm::tools {

// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one
// flow takes everything; 1 for an empty or all-zero sample.
double jain_index(const std::vector<double>& x);

struct CompeteFlow {
    std::string controller;  // the --cc entry (name[:options])
    double start_s = 0;
    std::vector<double> interval_bps;  // goodput per interval, from the run's start
    double goodput_bps = 0;            // over the flow's whole sending time
    double last_half_bps = 0;          // over the last half of the run
    std::uint64_t retransmits = 0;
    bool byte_exact = false;
    std::string error;
};

struct CompeteRun {
    std::uint64_t seed = 0;
    double interval_s = 1;
    std::vector<CompeteFlow> flows;
    double jain_last_half = 0;
    PathMetrics path;  // the shared bottleneck (sender → receiver direction)
};

struct CompeteSpec {
    std::string profile;  // preset, spec string or JSON file
    std::vector<std::string> controllers;
    double seconds = 60;
    double stagger_s = 0;  // flow k starts at k·stagger
    double interval_s = 1;
    std::size_t packet_size = 1452;
    std::uint64_t seed = 1;
    std::chrono::system_clock::time_point start_time{};  // for the provenance record
    double idle_timeout_s = kDefaultIdleTimeoutSeconds;  // both sides of every flow (--idle-timeout)
    LossDetection loss_detection = LossDetection::adaptive;  // every sender's (--loss-detection)
};

// One run; throws std::invalid_argument on a bad profile or controller.
CompeteRun run_compete(const CompeteSpec& spec, std::uint64_t seed);

// Per-interval goodput table and the per-flow summary with Jain's index;
// with several runs, means and 95 % confidence intervals.
void print_compete(std::ostream& os, const CompeteSpec& spec, const std::vector<CompeteRun>& runs, bool intervals);
std::string compete_json(const CompeteSpec& spec, const std::vector<CompeteRun>& runs);

}  // namespace ndm::tools
