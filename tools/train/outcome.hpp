// Model selection by controller outcome (docs/ndm-training.md §6): candidate
// models run as the `ndm` controller's classifier on seeded scenarios of the
// training distribution in virtual time, against Cubic on the same networks.
// A classifier's AUC does not say what a wrong verdict costs in the
// controller: forgiving one loss of a filling droptail queue costs more
// packets than backing off once on a random loss costs goodput. So the
// shipped default is the candidate with the most goodput on random-loss
// scenarios among those that lose no more packets than Cubic on the
// congestion-only ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cc/ndm/model.hpp"
#include "train/generate.hpp"

namespace ndm::train {

struct OutcomeOptions {
    std::uint64_t seed = 2;        // scenario seed (the dataset uses 1; never the evaluation profiles)
    std::size_t congestion = 12;   // droptail bottlenecks without random loss or jitter
    std::size_t random = 12;       // random or bursty loss (wireless, and bottlenecks with loss)
    double seconds = 8;            // virtual sending time bound per run
    // Admissible: geometric-mean drop-rate ratio to Cubic on the congestion
    // scenarios at most 1 + this.
    double loss_tolerance = 0.03;
    // Among admissible candidates whose goodput ratio is within this
    // fraction of the best one (differences of the order of seed noise),
    // the one with the lowest drop-rate ratio.
    double goodput_slack = 0.01;
    double min_buffer_bdp = 0.5;   // congestion scenarios: buffers of at least this many BDPs
    long long min_buffer_packets = 8;  // and packets
    bool per_scenario = false;  // log a line per scenario run
};

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

// One run's outcome for a sender controller ("cubic", or "ndm" with options).
struct RunOutcome {
    double goodput_mbit = 0;
    double drop_rate = 0;  // bottleneck (queue/AQM) drops / datagrams sent on the client → server link
};
RunOutcome run_outcome(const ScenarioSpec& s, const std::string& controller, const std::string& options);

struct CandidateScore {
    double loss_ratio = 0;     // geometric mean over congestion scenarios of (ndm + 1e-4) / (cubic + 1e-4) drop rate
    double worst_loss_ratio = 0;
    double goodput_ratio = 0;  // geometric mean over random-loss scenarios of ndm / cubic goodput
    bool admissible = false;
};

struct Candidate {
    std::string name;
    cc::ndm::Model model;
};

struct SelectionResult {
    std::vector<CandidateScore> scores;  // per candidate
    std::size_t chosen = 0;
};

// Scores every candidate (in order, log(line) after each) and picks, among
// the admissible ones within goodput_slack of the best goodput ratio, the
// one with the lowest loss ratio (the first on ties); when none is
// admissible, the one with the lowest loss ratio.
SelectionResult select_by_outcome(const std::vector<Candidate>& candidates, const OutcomeOptions& o,
                                  const std::function<void(const std::string&)>& log = {});

// The model with `delta` added to its output's pre-activation bias (the last
// parameter of the sigmoid head): P = σ(s + delta), a shifted threshold.
cc::ndm::Model shift_bias(cc::ndm::Model m, float delta);
// The model with its output's pre-activation scaled by k: P = σ(k·s). The
// controller uses P twice, as the verdict (P ≥ 0.5) and as the strength of
// the reduction (β_eff = 1 − (1 − β)·P), and a calibrated P of 0.6–0.8 on a
// congestive loss means a milder reduction than Cubic's; k > 1 keeps the
// ranking (AUC) and sharpens the reaction.
cc::ndm::Model sharpen(cc::ndm::Model m, float k);

}  // namespace ndm::train
