// The scenarios and runs behind select_by_outcome (include/ndm/train.hpp,
// docs/ndm-training.md §6), private to src/train.
#pragma once

#include <string>
#include <vector>

#include "ndm/train.hpp"

namespace ndm::train {

// The selection scenarios: the first `congestion` and `random` scenarios of
// the seed's list (generate's distribution) in the train split, in list
// order. Congestion: the `loss` family without random loss and without
// jitter (pure congestion), buffer ≥ min_buffer_bdp and ≥ min_buffer_packets; random: every non-trace scenario with random or
// bursty loss (with or without a bottleneck and jitter).
struct OutcomeScenarios {
    std::vector<ScenarioSpec> congestion;
    std::vector<ScenarioSpec> random;
};
OutcomeScenarios outcome_scenarios(const OutcomeOptions& o);

// One run's outcome for a sender controller ("cubic", or "ndm-cubic" with options).
struct RunOutcome {
    double goodput_mbit = 0;
    double drop_rate = 0;  // bottleneck (queue/AQM) drops / datagrams sent on the client → server link
};
RunOutcome run_outcome(const ScenarioSpec& s, const std::string& controller, const std::string& options);

}  // namespace ndm::train
