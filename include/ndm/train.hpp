// The training pipeline of the "ndm" controller's loss classifier
// (docs/ndm-training.md), as a library API: seeded scenarios in virtual time
// → a labelled dataset → a model (logistic regression or the GRU the engine
// runs) → metrics, selection by controller outcome, export as the
// compiled-in default's C++ image. `ndm-train` (tools/train/ndm_train.cpp) is its
// command line; the Python bindings (python/, docs/python.md) are meant to call the same API.
//
// Why the trainer is a library component (src/train/) and not a tool: the
// labels come from inside a run: a recording decorator around the sender's
// controller mirrors the ndm controller's feature tracker call for call and
// asks the wrapped controller (Cubic, Reno, or the Cubic inside ndm) whether
// a loss falls in its current recovery period (RFC 9002 §7.3.2), and a link
// wrapper matches the emulator's drop reasons to the sender's packets. Doing
// that from outside would make the feature tracker, the controllers'
// recovery periods, the inference engine and the RNG public; here the public
// API is only what a user of the pipeline handles: options, datasets, models
// (ndm/ndm_model.hpp), metrics and seeds. Everything is deterministic in the
// seeds it is given.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/link.hpp"
#include "ndm/ndm_model.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::train {

// ================================================================ the dataset
// One record per congestion event a sender's controller saw in a simulated
// scenario, with the features the `ndm` controller computes at that moment
// and the ground truth from the emulator's drop reasons (docs/ndm-training.md
// §3 documents the file format).

using cc::ndm::FeatureVector;
using cc::ndm::kFeatureCount;

// The rounds kept before each loss (the GRU's truncated history).
inline constexpr std::size_t kMaxRounds = 16;

// Which packets of an event were dropped why. `spurious` counts packets the
// transport declared lost although the emulator delivered them (late:
// reordering), inferred as packets_lost minus the dropped packets attributed.
enum Cause : std::size_t { kRandom = 0, kBurst, kQueue, kAqm, kOutage, kSpurious, kCauseCount };
const char* cause_name(std::size_t c);

enum class Split : std::uint8_t { train, val, test };
const char* split_name(Split s);

struct Record {
    std::uint32_t scenario = 0;
    std::uint64_t seed = 0;
    std::string controller;  // the sender's controller: cubic, reno, ndm
    std::string family;      // scenario family (generate.hpp)
    Split split = Split::train;
    double time_s = 0;       // virtual seconds since the connection started
    int label = 0;           // 1 congestive, 0 not (random/burst drops, or only late packets)
    // A decision: the event's largest lost packet was sent after the current
    // recovery period began (RFC 9002 §7.3.2), so the `ndm` controller runs
    // its model on it; false: part of a decision already taken.
    bool decision = false;
    bool persistent = false;   // persistent congestion (the model is not consulted)
    std::uint32_t lost = 0;    // packets the event declared lost
    std::array<std::uint32_t, kCauseCount> causes{};
    std::vector<FeatureVector> rounds;  // the last ≤ kMaxRounds completed rounds, oldest first
    FeatureVector at_loss{};

    [[nodiscard]] bool spurious_only() const { return causes[kSpurious] == lost; }
};

// One line of scenario metadata ("#S id seed family split description").
struct ScenarioInfo {
    std::uint32_t id = 0;
    std::uint64_t seed = 0;
    std::string family;
    Split split = Split::train;
    std::string description;
};

struct Dataset {
    std::vector<ScenarioInfo> scenarios;
    std::vector<Record> records;
    // The header's comment (its provenance line, without "# "), as
    // read_dataset found it; write_dataset writes the one it is given.
    std::string comment;
};

// Names the trainer in the files it writes (datasets' provenance lines,
// model descriptions).
inline constexpr const char* kTrainerVersion = "ndm-train 1";

inline constexpr const char* kDatasetMagic = "# ndm-dataset v1";

void write_dataset(std::ostream& out, const Dataset& d, const std::string& comment);
// Throws std::invalid_argument naming the line and the problem.
Dataset read_dataset(std::istream& in);
Dataset load_dataset(const std::string& path);
void save_dataset(const std::string& path, const Dataset& d, const std::string& comment);

// ================================================================ generation
// Seeded random network scenarios run in virtual time, with every congestion
// event the sender's controller sees labelled from the emulator's drop
// reasons (docs/ndm-training.md §1–2).

struct ScenarioSpec {
    ScenarioInfo info;
    std::string controller;    // the sender's controller (cubic, reno, ndm-cubic, or any registered name)
    std::string cc_options;    // passed to that controller
    std::string profile;       // emulator profile spec (emu::parse_profile)
    std::size_t packet_size = 1452;
    double seconds = 10;       // virtual sending time
    double buffer_bdp = 0;     // the bottleneck buffer in BDPs (loss, burst, codel families; 0 otherwise)
    long long buffer_packets = 0;  // and in packets
    // Competing flows sharing the bottleneck (sim::run_shared_path), by
    // controller name, each starting competitor_start after the recorded flow.
    std::vector<std::string> competitors;
    double competitor_start = 0;  // seconds
    std::string competitor_ndm_options;  // options of competing ndm-cubic flows
};

// "model=ndm-handset-v1.ndmm": the shipped model, found where the library
// finds its data (installed share/ndm/models, $NDM_DATA_DIR, the source tree).
std::string default_ndm_options();
// "model=ndm-default.ndmm".
std::string default_ndm_bbr_options();

struct GenerateOptions {
    std::uint64_t seed = 1;
    std::size_t scenarios = 600;
    double seconds = 12;  // upper bound on a scenario's virtual sending time
    std::vector<std::string> controllers{"cubic", "reno", "ndm-cubic"};
    // For the ndm-cubic senders and competitors. The default pins the model
    // the dataset's ndm-cubic flows run (the hand-set v1 the shipped learned
    // models were trained with), so a dataset does not change when a
    // compiled-in default does.
    std::string ndm_options = default_ndm_options();
    // For the ndm senders (BBRv3 with loss discrimination): the default pins
    // ndm-cubic's trained default file, not ndm's own model, so a dataset for
    // ndm's model does not depend on the model trained from it.
    std::string ndm_bbr_options = default_ndm_bbr_options();
    // Fraction of bottleneck scenarios (loss, burst, codel families) given
    // 1–3 competing cubic/reno/ndm flows on the bottleneck. Drawn from a
    // separate random stream: every other parameter of every scenario is the
    // same as with 0 (the default, which the shipped models were trained with).
    double compete = 0;
    // A shard: run only the scenarios [first, first + count) of the list
    // (which is drawn whole, so a scenario is the same in every shard
    // layout). The shards of a list, their datasets concatenated in order,
    // are the whole list's dataset, record for record: how the runs are
    // spread over Dask workers (docs/ndm-training.md §1).
    std::size_t first = 0;
    std::size_t count = SIZE_MAX;
};

// The generate command line that reproduces `o`'s whole list ("generate
// --seed 1 --scenarios 600 --seconds 12 --cc cubic,reno,ndm-cubic
// --ndm-options ..."; no shard): a dataset's provenance line, the same
// whichever program ran the scenarios.
std::string generate_command(const GenerateOptions& o);
// The provenance line of a dataset generated with `o` (or any shard of it):
// kTrainerVersion and generate_command(o).
std::string dataset_comment(const GenerateOptions& o);

// The small fixed "check set" whose AUC `ndm-train ship` records in the
// shipped model's description and tests/train/test_ndm_train.cpp regenerates.
GenerateOptions check_options();

// The deterministic scenario list of a seed (same options → same list).
std::vector<ScenarioSpec> make_scenarios(const GenerateOptions& o);

// Runs one scenario and returns a record per congestion event seen after
// the first RTT sample (events before it have no features).
struct ScenarioOutcome {
    double goodput_mbit = 0;    // delivered to the receiver over the sending time
    std::uint64_t packets_sent = 0;
    std::uint64_t packets_lost = 0;  // declared lost by the sender
    std::uint64_t unattributed_drops = 0;  // dropped packets no event claimed (e.g. still pending at the end)
    LinkStats path;        // the client → server link's counters (datagrams sent, dropped by cause)
    std::string failure;        // why the transfer did not complete, if it did not
};
std::vector<Record> run_scenario(const ScenarioSpec& s, ScenarioOutcome* outcome = nullptr);

// make_scenarios + run_scenario for each of the shard [first, first +
// count); progress(i, n) after each (n: the shard's size).
Dataset generate(const GenerateOptions& o,
                 const std::function<void(std::size_t, std::size_t, const ScenarioSpec&, const ScenarioOutcome&)>& progress = {});

// ================================================================ learning
// Logistic regression on the at-loss features and the GRU + dense-sigmoid
// network the `ndm` engine runs, trained by backpropagation through time with
// Adam, L2 and early stopping on held-out scenarios; metrics (accuracy, AUC,
// ECE with reliability bins, confusion at 0.5) and the export to a Model
// (docs/ndm-training.md §4).

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
// committed step per round, then the at-loss step, with the kernel named by
// simd (the controller's simd option: auto, scalar, sse42, avx2, avx512,
// neon; throws std::invalid_argument for an unknown or unsupported one).
std::vector<double> predict(const cc::ndm::Model& m, const std::vector<Sample>& s, std::string_view simd = "scalar");
std::vector<int> labels(const std::vector<Sample>& s);


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

// ================================================================ selection
// Model selection by controller outcome (docs/ndm-training.md §6): candidate
// models run as the `ndm` controller's classifier on seeded scenarios of the
// training distribution in virtual time, against Cubic on the same networks.
// A classifier's AUC does not say what a wrong verdict costs in the
// controller: forgiving one loss of a filling droptail queue costs more
// packets than backing off once on a random loss costs goodput. So the
// shipped default is the candidate with the most goodput on random-loss
// scenarios among those that lose no more packets than Cubic on the
// congestion-only ones.

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

// ================================================================ export
// A model as C++ source (the compiled-in default model's .inc): every float as
// an exact hexadecimal literal, so the compiled-in model serialises to the
// same bytes as the .ndmm file it came from.
std::string model_to_cpp(const cc::ndm::Model& m, const std::string& source);

// The hand-set default model of the ndm controller ("ndm-default v2"),
// written by `ndm-train handset` (docs/ndm-controller.md §3.2).
// An entropy-aware logistic rule over the controller's eight features: a
// loss is congestive when the queueing delay at it is large *and* consistent
// across the round (low entropy), random when the delays are noisy (jitter)
// or near zero.
cc::ndm::Model make_handset_model();

}  // namespace ndm::train

#pragma GCC visibility pop
