// ndm-compare --compete: controllers sharing one bottleneck at the same time
// (virtual time), with per-flow goodput over time, Jain's fairness index and
// the bottleneck's queueing delay and drops.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ndm/experiment.hpp"
#include "tools/compare/report.hpp"

namespace ndm::tools {

// The runs themselves are the library's (ndm/experiment.hpp); the tools
// render them. start_time dates the provenance record of the JSON.
using experiment::CompeteFlow;
using experiment::CompeteRun;
using experiment::jain_index;
struct CompeteSpec : experiment::CompeteSpec {
    std::chrono::system_clock::time_point start_time{};
};
using experiment::run_compete;

// Per-interval goodput table and the per-flow summary with Jain's index;
// with several runs, means and 95 % confidence intervals.
void print_compete(std::ostream& os, const CompeteSpec& spec, const std::vector<CompeteRun>& runs, bool intervals);
std::string compete_json(const CompeteSpec& spec, const std::vector<CompeteRun>& runs);

}  // namespace ndm::tools
