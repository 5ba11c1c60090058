// ndm-train's learning code (docs/ndm-training.md §4): logistic regression
// on the at-loss features and the GRU + dense-sigmoid network the `ndm`
// engine runs, trained by backpropagation through time with Adam, L2 and
// early stopping on held-out scenarios; metrics (accuracy, AUC, ECE with
// reliability bins, confusion at 0.5) and the export to an .ndmm Model.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cc/ndm/model.hpp"
#include "train/dataset.hpp"

namespace ndm::train {

using Vec8 = std::array<double, kFeatureCount>;

// One training example: the rounds before the loss then the at-loss vector
// (the last step), as the controller feeds its GRU.
struct Sample {
    std::vector<Vec8> steps;
    int y = 0;
    std::uint32_t scenario = 0;
    std::string family;
    std::string controller;
};

// Which records become examples.
struct SelectOptions {
    bool decisions_only = true;   // the events the controller runs its model on
    bool spurious = true;         // keep events whose losses were all late packets (label 0)
    bool outage_congestive = true;  // trace-outage drops count as congestive (else the event is dropped if it has only such drops)
    // At most this many examples per scenario (evenly thinned; 0 = all), so
    // that a few scenarios with thousands of events (heavy reordering) do not
    // dominate training.
    std::size_t max_per_scenario = 0;
};
std::vector<Sample> select(const Dataset& d, Split split, const SelectOptions& o = {});

// Per-feature affine normalisation z = (x − mean) / scale, fitted on the
// training steps and folded into the first layer on export.
struct Standardizer {
    Vec8 mean{};
    Vec8 scale{};
    static Standardizer fit(const std::vector<Sample>& s);
    void apply(std::vector<Sample>& s) const;
};

struct Metrics {
    std::size_t n = 0;
    std::size_t positives = 0;
    double accuracy = 0;
    double auc = 0;
    double ece = 0;       // expected calibration error, 10 equal-width bins
    double log_loss = 0;
    double brier = 0;
    std::size_t tp = 0, fp = 0, tn = 0, fn = 0;  // at P >= 0.5
    struct Bin {
        std::size_t n = 0;
        double mean_p = 0;
        double frac_pos = 0;
    };
    std::array<Bin, 10> bins{};
};
Metrics evaluate(const std::vector<double>& p, const std::vector<int>& y);
std::string format_metrics(const Metrics& m, bool bins);
// Metrics per scenario family and per sender controller, one line each.
std::string format_breakdown(const std::vector<double>& p, const std::vector<Sample>& s);

// ---------------------------------------------------------------- models

// GRU(F → H) then Dense(H → 1, sigmoid). H = 0: logistic regression on the
// last step only. Parameters in PyTorch/.ndmm layout: W_ih [3H][F],
// W_hh [3H][H], b_ih [3H], b_hh [3H] (gates r, z, n), then w [H], b.
struct Net {
    std::size_t hidden = 0;
    std::vector<double> theta;

    [[nodiscard]] std::size_t size() const;
    // P(congestive) for one sequence (h0 = 0; the output after the last step).
    [[nodiscard]] double forward(const std::vector<Vec8>& steps) const;
    // Adds weight·d(BCE)/dθ for one example to grad; returns weight·BCE.
    double backward(const std::vector<Vec8>& steps, int y, std::vector<double>& grad, double weight = 1.0) const;

    // The engine's model; input standardisation folded into the first layer.
    [[nodiscard]] cc::ndm::Model to_model(const Standardizer& st, const std::string& description) const;
    // The inverse for models of this shape (GRU + dense sigmoid, or one dense sigmoid layer).
    static Net from_model(const cc::ndm::Model& m);
};

struct TrainOptions {
    std::size_t hidden = 0;
    std::uint64_t seed = 1;
    double learning_rate = 0.003;
    double l2 = 1e-3;
    std::size_t batch = 256;
    std::size_t max_epochs = 60;
    std::size_t patience = 8;  // epochs without a better validation loss
    // Weight of congestive examples in the loss (> 1 trades calibration and
    // false positives for recall of congestion); 1 = plain BCE.
    double pos_weight = 1.0;
    // Bit f set: feature f is an input. A cleared bit pins that feature's
    // input weights at 0 (e.g. to keep the loss rate out of the decision).
    std::uint32_t input_mask = (1U << kFeatureCount) - 1;
};

// "q_now,q_p50,slope" → the mask of those features; throws naming an unknown one.
std::uint32_t parse_input_mask(const std::string& names);
std::string format_input_mask(std::uint32_t mask);
const char* feature_name(std::size_t f);

struct TrainReport {
    std::size_t epochs = 0;
    std::size_t best_epoch = 0;
    double best_val_loss = 0;
};

// Trains on `train` (standardised), early-stopping on `val`; log(line) per epoch.
Net train_net(const std::vector<Sample>& train, const std::vector<Sample>& val, const TrainOptions& o,
              TrainReport& report, const std::function<void(const std::string&)>& log = {});

std::vector<double> predict(const Net& net, const std::vector<Sample>& s);
// Runs a model through the engine exactly as the controller does: one
// committed step per round, then the at-loss step (scalar kernel).
std::vector<double> predict(const cc::ndm::Model& m, const std::vector<Sample>& s);
std::vector<int> labels(const std::vector<Sample>& s);

}  // namespace ndm::train

namespace ndm::train {

// select → standardise on the training split → train → metrics on the
// validation and test (held-out) splits.
struct FitResult {
    Net net;
    Standardizer standardizer;
    TrainReport report;
    std::size_t n_train = 0;
    Metrics val;
    Metrics test;
    std::string test_breakdown;  // format_breakdown on the test split
};
FitResult fit(const Dataset& d, const TrainOptions& t, const SelectOptions& s,
              const std::function<void(const std::string&)>& log = {});

}  // namespace ndm::train
