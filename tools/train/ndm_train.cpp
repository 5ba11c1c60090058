// ndm-train: the training pipeline of the `ndm` controller's loss classifier
// (docs/ndm-training.md). Subcommands:
//   generate    seeded scenarios in virtual time → labelled dataset
//   train       dataset → model (.ndmm): logistic regression or the GRU net
//   evaluate    model + dataset → accuracy, AUC, ECE (reliability bins), confusion
//   export-cpp  model → the compiled-in default's C++ .inc
//   ship        the one command that produces the shipped default model
// The pipeline is the library's (include/ndm/train.hpp, src/train/); this file
// is its command line: the shared option groups, then one Command class per
// subcommand.
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ndm/cc.hpp"
#include "ndm/ndm_model.hpp"
#include "ndm/train.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/logging.hpp"

using namespace ndm;
using namespace ndm::train;

namespace {

struct GenArgs {
    GenerateOptions gen;
    std::string out = "ndm-dataset.tsv";
    bool quiet = false;
    bool verbose = false;
    bool list = false;
};

struct TrainArgs {
    std::string data = "ndm-dataset.tsv";
    std::string kind = "gru";
    TrainOptions train;
    bool no_spurious = false;
    std::string outage = "congestive";
    std::size_t max_per_scenario = 300;
    std::string out = "ndm-model.ndmm";
    std::string inputs = "all";
    bool quiet = false;
};

SelectOptions select_options(const TrainArgs& a) {
    SelectOptions s;
    s.spurious = !a.no_spurious;
    s.outage_congestive = a.outage == "congestive";
    s.max_per_scenario = a.max_per_scenario;
    return s;
}

void add_generate_options(CLI::App* c, GenArgs& a) {
    c->add_option("--seed", a.gen.seed, "scenario seed")->capture_default_str();
    c->add_option("-n,--scenarios", a.gen.scenarios, "number of scenarios")->capture_default_str()->check(ndm::tools::integer_in(1, 100000));
    c->add_option("--seconds", a.gen.seconds, "longest virtual sending time of a scenario")
        ->capture_default_str()
        ->check(ndm::tools::number_in(1, 600, "seconds"));
    c->add_option("--cc", a.gen.controllers, "sender controllers, assigned round-robin to scenarios")
        ->delimiter(',')
        ->capture_default_str();
    c->add_option("--ndm-options", a.gen.ndm_options, "options of the ndm-cubic senders and competitors (e.g. model=x.ndmm)");
    c->add_option("--ndm-bbr-options", a.gen.ndm_bbr_options,
                  "options of the ndm senders (default: the pinned model=ndm-default.ndmm, so a dataset for ndm's own "
                  "model does not depend on that model)")
        ->capture_default_str();
    c->add_option("--compete", a.gen.compete,
                  "fraction of bottleneck scenarios with 1-3 competing cubic/reno/ndm-cubic flows (0: none, as the shipped "
                  "models were trained)")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 1));
}

void add_train_options(CLI::App* c, TrainArgs& a) {
    c->add_option("--model", a.kind, "logistic (at-loss features only) or gru")
        ->capture_default_str()
        ->check(ndm::tools::one_of({"logistic", "gru"}));
    c->add_option("--hidden", a.train.hidden, "GRU units (1..8) for --model gru")->check(ndm::tools::integer_in(1, 8));
    c->add_option("--seed", a.train.seed, "initialisation and shuffling seed")->capture_default_str();
    c->add_option("--lr", a.train.learning_rate, "Adam learning rate")->capture_default_str()->check(ndm::tools::number_in(1e-6, 1));
    c->add_option("--l2", a.train.l2, "L2 penalty on the weights")->capture_default_str()->check(ndm::tools::number_in(0, 1));
    c->add_option("--batch", a.train.batch, "minibatch size")->capture_default_str()->check(ndm::tools::integer_in(1, 1000000));
    c->add_option("--epochs", a.train.max_epochs, "most epochs")->capture_default_str()->check(ndm::tools::integer_in(1, 100000));
    c->add_option("--patience", a.train.patience, "early stopping: epochs without a better validation loss")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(1, 100000));
    c->add_option("--pos-weight", a.train.pos_weight, "weight of congestive examples in the loss (> 1: more recall, less calibration)")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0.01, 100));
    c->add_option("--inputs", a.inputs, "features the model may use: all, or a comma list of q_now q_p50 q_p90 slope "
                                        "entropy loss_rate rate_ratio loss_run (the others get weight 0)")
        ->capture_default_str();
    c->add_flag("--no-spurious", a.no_spurious, "drop events whose losses were (partly) late packets instead of labelling them 0");
    c->add_option("--outage", a.outage, "trace-outage drops: congestive or exclude")
        ->capture_default_str()
        ->check(ndm::tools::one_of({"congestive", "exclude"}));
    c->add_option("--max-per-scenario", a.max_per_scenario, "training examples kept per scenario (evenly thinned; 0 = all)")
        ->capture_default_str();
}

std::size_t hidden_of(const TrainArgs& a) {
    if (a.kind == "logistic") return 0;
    return a.train.hidden == 0 ? 8 : a.train.hidden;
}

Dataset run_generate(const GenArgs& a) {
    const bool progress = !a.quiet && isatty(STDERR_FILENO);
    auto d = generate(a.gen, [&](std::size_t i, std::size_t n, const ScenarioSpec& s, const ScenarioOutcome& o) {
        if (a.verbose) {
            std::cerr << fmt::format("  {:4} {:<5} {:5.2f} Mbit/s sent {} lost {} unattributed drops {}{}  {}\n", s.info.id,
                                     split_name(s.info.split), o.goodput_mbit, o.packets_sent, o.packets_lost,
                                     o.unattributed_drops, o.failure.empty() ? "" : " FAILED: " + o.failure,
                                     s.info.description);
        } else if (progress) {
            std::cerr << fmt::format("\r  scenario {}/{}", i, n) << std::flush;
        }
    });
    if (progress) std::cerr << "\r\033[K" << std::flush;
    return d;
}

void print_summary(const Dataset& d) {
    std::array<std::size_t, 3> events{}, congestive{}, decisions{};
    std::array<std::uint64_t, kCauseCount> causes{};
    for (const auto& r : d.records) {
        const auto s = static_cast<std::size_t>(r.split);
        ++events[s];
        congestive[s] += static_cast<std::size_t>(r.label);
        decisions[s] += r.decision ? 1 : 0;
        for (std::size_t c = 0; c < kCauseCount; ++c) causes[c] += r.causes[c];
    }
    std::cout << fmt::format("{} scenarios, {} congestion events\n", d.scenarios.size(), d.records.size());
    for (const Split s : {Split::train, Split::val, Split::test}) {
        const auto i = static_cast<std::size_t>(s);
        std::cout << fmt::format("  {:<5}: {:6} events, {:6} decisions, {:5.1f} % congestive\n", split_name(s), events[i],
                                 decisions[i], events[i] ? 100.0 * static_cast<double>(congestive[i]) / static_cast<double>(events[i]) : 0.0);
    }
    std::cout << "  lost packets by cause:";
    for (std::size_t c = 0; c < kCauseCount; ++c) std::cout << fmt::format(" {}={}", cause_name(c), causes[c]);
    std::cout << '\n';
}

std::string model_description(const TrainArgs& a, const FitResult& f, const std::string& dataset) {
    return fmt::format(
        "{} {}: {} (hidden {}), seed {}, {} training events of {}; held-out (test split: RTT 100-160 ms, "
        "ATT driving trace) heldout_auc={:.4f} heldout_ece={:.4f} heldout_accuracy={:.4f} n={}; validation auc={:.4f}; "
        "inputs q_now q_p50 q_p90 slope entropy loss_rate rate_ratio loss_run",
        kTrainerVersion, a.kind == "gru" ? "GRU + dense sigmoid" : "logistic regression", "P(loss is congestive)",
        hidden_of(a), a.train.seed, f.n_train, dataset, f.test.auc, f.test.ece, f.test.accuracy, f.test.n, f.val.auc);
}

FitResult run_fit(const Dataset& d, TrainArgs& a) {
    a.train.hidden = hidden_of(a);
    a.train.input_mask = parse_input_mask(a.inputs);
    auto log = [&](const std::string& line) {
        if (!a.quiet) std::cerr << "  " << line << '\n';
    };
    auto f = fit(d, a.train, select_options(a), log);
    std::cout << fmt::format("{} (hidden {}): {} training examples, best epoch {} of {}, validation loss {:.5f}\n",
                             a.kind, a.train.hidden, f.n_train, f.report.best_epoch, f.report.epochs,
                             f.report.best_val_loss);
    std::cout << "validation:\n" << format_metrics(f.val, false);
    std::cout << "held-out test:\n" << format_metrics(f.test, true) << f.test_breakdown;
    return f;
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    if (!out) throw std::runtime_error(fmt::format("cannot write \"{}\"", path));
    out << text;
    if (!out) throw std::runtime_error(fmt::format("cannot write \"{}\"", path));
}

cc::ndm::Model load_any(const std::string& path) {
    if (path == "default") return *cc::ndm::default_model();
    return cc::ndm::load_model(path);
}

void add_outcome_options(CLI::App* c, OutcomeOptions& o) {
    c->add_option("--select-seed", o.seed, "seed of the selection scenarios (generate's distribution, train split)")
        ->capture_default_str();
    c->add_option("--select-congestion", o.congestion, "congestion-only selection scenarios")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(1, 1000));
    c->add_option("--select-random", o.random, "random-loss selection scenarios")->capture_default_str()->check(ndm::tools::integer_in(1, 1000));
    c->add_option("--select-seconds", o.seconds, "virtual sending time bound of a selection run")
        ->capture_default_str()
        ->check(ndm::tools::number_in(3, 600, "seconds"));
    c->add_option("--loss-tolerance", o.loss_tolerance, "admissible: drop rate at most (1 + this) x cubic's on congestion")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 10));
    c->add_option("--goodput-slack", o.goodput_slack,
                  "among admissible candidates within this fraction of the best goodput, the lowest drop rate wins")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 1));
    c->add_option("--min-buffer-bdp", o.min_buffer_bdp, "congestion scenarios: smallest buffer, in BDPs")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 100));
    c->add_option("--min-buffer-packets", o.min_buffer_packets, "congestion scenarios: smallest buffer, in packets")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(2, 1000000, "packets"));
    c->add_flag("--per-scenario", o.per_scenario, "a line per selection run");
}

std::vector<float> parse_floats(const std::string& list, const char* what) {
    std::vector<float> v;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, end - at);
        std::size_t used = 0;
        float x = 0;
        try {
            x = std::stof(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || !std::isfinite(x))
            throw std::invalid_argument(fmt::format("{}: \"{}\" is not a number", what, item));
        v.push_back(x);
        at = end + 1;
    }
    return v;
}

std::string selection_line(const CandidateScore& s) {
    return fmt::format("drop rate vs cubic {:.3f} (worst {:.2f}), random-loss goodput vs cubic {:.3f}", s.loss_ratio,
                       s.worst_loss_ratio, s.goodput_ratio);
}


double seconds_since(Instant t0) { return to_seconds(steady_now() - t0); }

// Every event of the chosen splits ("all": train, val and test), in split order.
std::vector<Sample> select_splits(const Dataset& d, const std::string& split, const SelectOptions& sel) {
    std::vector<Sample> samples;
    for (const Split sp : {Split::train, Split::val, Split::test}) {
        if (split != "all" && split != split_name(sp)) continue;
        auto part = select(d, sp, sel);
        samples.insert(samples.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
    return samples;
}

// A subcommand: registers its options on the app, runs once parsed.
class Command {
public:
    virtual ~Command() = default;
    virtual void run() = 0;
    [[nodiscard]] bool parsed() const { return sub_->parsed(); }

protected:
    Command(CLI::App& app, const std::string& name, const std::string& description)
        : sub_(app.add_subcommand(name, description)) {}

    CLI::App* sub_;
};

class GenerateCommand final : public Command {
public:
    explicit GenerateCommand(CLI::App& app)
        : Command(app, "generate", "run seeded scenarios in virtual time and write the labelled dataset") {
        add_generate_options(sub_, a_);
        sub_->add_option("-o,--out", a_.out, "dataset file")->capture_default_str();
        sub_->add_flag("-q,--quiet", a_.quiet, "no progress");
        sub_->add_flag("-V,--verbose", a_.verbose,
                       "one line per scenario: goodput, packets, losses (-V as iperf3; the old -v still works, with "
                       "a warning)");
        sub_->add_flag("--list", a_.list, "print the scenario list and exit");
    }

    void run() override {
        // A bad --ndm-options (model=/dev/zero, a bad key) is bad input: refused
        // before the first scenario, not when a scenario first builds the controller.
        if (!a_.gen.ndm_options.empty()) (void)cc::make("ndm-cubic", cc::Params{}, a_.gen.ndm_options);
        if (!a_.gen.ndm_bbr_options.empty()) (void)cc::make("ndm", cc::Params{}, a_.gen.ndm_bbr_options);
        if (a_.list) {
            for (const auto& sc : make_scenarios(a_.gen))
                std::cout << fmt::format("{:4} {:<5} {}\n", sc.info.id, split_name(sc.info.split), sc.info.description);
            return;
        }
        const auto t0 = steady_now();
        const auto d = run_generate(a_);
        save_dataset(a_.out, d, dataset_comment(a_.gen));
        print_summary(d);
        std::cout << fmt::format("wrote {} in {:.1f} s\n", a_.out, seconds_since(t0));
    }

private:
    GenArgs a_;
};

class TrainCommand final : public Command {
public:
    explicit TrainCommand(CLI::App& app)
        : Command(app, "train", "train a model on a dataset and write it as .ndmm") {
        sub_->add_option("-d,--data", a_.data, "dataset file (from generate)")->capture_default_str();
        add_train_options(sub_, a_);
        sub_->add_option("-o,--out", a_.out, "model file")->capture_default_str();
        sub_->add_flag("-q,--quiet", a_.quiet, "no per-epoch lines");
        sub_->add_option("--sharpen", sharpen_, "scale the output's pre-activation by this (before --bias-shift)")
            ->capture_default_str()
            ->check(ndm::tools::number_in(0.01, 100));
        sub_->add_option("--bias-shift", shift_, "add this to the output's pre-activation bias (a shifted threshold)")
            ->capture_default_str();
    }

    void run() override {
        const auto d = load_dataset(a_.data);
        const auto f = run_fit(d, a_);
        auto m = shift_bias(sharpen(f.net.to_model(f.standardizer, model_description(a_, f, a_.data)), sharpen_), shift_);
        if (sharpen_ != 1) m.description += fmt::format("; sharpened x{:g}", sharpen_);
        if (shift_ != 0) m.description += fmt::format("; bias shift {:+g}", shift_);
        cc::ndm::save_model(m, a_.out);
        std::cout << fmt::format("wrote {}\n", a_.out);
    }

private:
    TrainArgs a_;
    float shift_ = 0;
    float sharpen_ = 1;
};

class EvaluateCommand final : public Command {
public:
    explicit EvaluateCommand(CLI::App& app)
        : Command(app, "evaluate", "evaluate a model (run as the controller runs it) on a dataset split") {
        sub_->add_option("-m,--model", model_, "model file, or \"default\" for the compiled-in model")->capture_default_str();
        sub_->add_option("-d,--data", data_, "dataset file")->capture_default_str();
        sub_->add_option("--split", split_, "train, val, test or all")
            ->capture_default_str()
            ->check(ndm::tools::one_of({"train", "val", "test", "all"}));
        sub_->add_flag("--no-spurious", sel_.no_spurious, "drop events whose losses were (partly) late packets");
        sub_->add_option("--outage", sel_.outage, "trace-outage drops: congestive or exclude")
            ->capture_default_str()
            ->check(ndm::tools::one_of({"congestive", "exclude"}));
        sub_->add_option("--simd", simd_, "engine kernel: auto (the controller's: NDM_SIMD or the best), scalar, sse42, "
                                          "avx2, avx512 or neon")
            ->capture_default_str()
            ->check(ndm::tools::one_of({"auto", "scalar", "sse42", "avx2", "avx512", "neon"}));
        sub_->add_option("--scores", scores_, "also write each event's P to this file (index, scenario, label, P; "
                                              "events in split order train, val, test, dataset order within)");
    }

    void run() override {
        const auto m = load_any(model_);
        const auto d = load_dataset(data_);
        auto sel = select_options(sel_);
        sel.max_per_scenario = 0;  // evaluation sees every event
        const auto samples = select_splits(d, split_, sel);
        std::cout << fmt::format("model: {}\n", m.description);
        const auto p = predict(m, samples, simd_);
        std::cout << fmt::format("split {} of {} (kernel {}):\n", split_, data_, simd_)
                  << format_metrics(evaluate(p, labels(samples)), true) << format_breakdown(p, samples);
        if (!scores_.empty()) write_scores(samples, p);
    }

private:
    // The engine's P exactly: %.9g round-trips the float it computed.
    void write_scores(const std::vector<Sample>& samples, const std::vector<double>& p) const {
        std::string text = fmt::format("# ndm-scores v1: model {}, dataset {}, split {}, kernel {}\nindex\tscenario\tlabel\tp\n",
                                       model_, data_, split_, simd_);
        for (std::size_t i = 0; i < samples.size(); ++i)
            text += fmt::format("{}\t{}\t{}\t{:.9g}\n", i, samples[i].scenario, samples[i].y, p[i]);
        write_text(scores_, text);
        std::cout << fmt::format("wrote {} scores to {}\n", samples.size(), scores_);
    }

    std::string model_ = "default";
    std::string data_ = "ndm-dataset.tsv";
    std::string split_ = "test";
    std::string simd_ = "scalar";
    std::string scores_;
    TrainArgs sel_;
};

class ExportCppCommand final : public Command {
public:
    explicit ExportCppCommand(CLI::App& app)
        : Command(app, "export-cpp", "write a model as the compiled-in default's C++ include file") {
        sub_->add_option("-m,--model", model_, "model file")->required();
        sub_->add_option("-o,--out", out_, "output .inc file")->capture_default_str();
    }

    void run() override {
        const auto m = cc::ndm::load_model(model_);
        write_text(out_, model_to_cpp(m, model_));
        std::cout << fmt::format("wrote {}\n", out_);
    }

private:
    std::string model_;
    std::string out_ = "default_model.inc";
};

class HandsetCommand final : public Command {
public:
    explicit HandsetCommand(CLI::App& app)
        : Command(app, "handset",
                  "write the hand-set model ndm-default v2 (the default before the trained one, kept as a reference "
                  "and for the controller's rule tests): data/models/ndm-handset-v2.ndmm under --root") {
        sub_->add_option("--root", root_, "source tree root")->capture_default_str();
    }

    void run() override {
        const auto m = make_handset_model();
        const auto model_path = std::filesystem::path(root_) / "data/models/ndm-handset-v2.ndmm";
        cc::ndm::save_model(m, model_path);
        std::cout << fmt::format("wrote {}\n", model_path.string());
    }

private:
    std::string root_ = ".";
};

class SelectCommand final : public Command {
public:
    explicit SelectCommand(CLI::App& app)
        : Command(app, "select",
                  "score models in the ndm controller against cubic on seeded training-distribution scenarios "
                  "(virtual time): drop rate on congestion, goodput on random loss") {
        sub_->add_option("-m,--model", models_, "model files (or \"default\"), one per -m")->required();
        sub_->add_option("--shifts", shifts_, "bias shifts to try on each model, comma-separated")->capture_default_str();
        add_outcome_options(sub_, opts_);
    }

    void run() override {
        const auto shifts = parse_floats(shifts_, "--shifts");
        std::vector<Candidate> cands;
        for (const auto& path : models_) {
            const auto m = load_any(path);
            for (const float d : shifts) cands.push_back({fmt::format("{} {:+g}", path, d), shift_bias(m, d)});
        }
        const auto r = select_by_outcome(cands, opts_, [](const std::string& l) { std::cout << "  " << l << '\n'; });
        std::cout << fmt::format("chosen: {}: {}\n", cands[r.chosen].name, selection_line(r.scores[r.chosen]));
    }

private:
    std::vector<std::string> models_;
    std::string shifts_ = "0";
    OutcomeOptions opts_;
};

// A model and the words of its description before the check set's AUC.
struct Shipped {
    cc::ndm::Model model;
    std::string what;
};

class ShipCommand final : public Command {
public:
    explicit ShipCommand(CLI::App& app)
        : Command(app, "ship",
                  "a shipped model in one command: generate (fixed seed) → train → (select by controller outcome) → "
                  "write the model (and, with --name ndm-default, the compiled-in default's C++ include) and the dataset") {
        add_generate_options(sub_, gen_);
        sub_->add_option("--hidden", tr_.train.hidden, "GRU units")->capture_default_str()->check(ndm::tools::integer_in(1, 8));
        sub_->add_option("--train-seed", tr_.train.seed, "initialisation and shuffling seed")->capture_default_str();
        sub_->add_option("--root", root_, "source tree root: writes data/models/ndm-default.ndmm, "
                                          "src/cc/ndm/default_model.inc, and the dataset to /tmp")
            ->capture_default_str();
        sub_->add_option("--name", name_,
                         "model name: ndm-default writes data/models/ndm-default.ndmm and src/cc/ndm/default_model.inc (the "
                         "compiled-in default of ndm-cubic), ndm-bbr data/models/ndm-bbr.ndmm and src/cc/ndm/ndm_bbr_model.inc "
                         "(ndm's); any other name writes only data/models/NAME.ndmm")
            ->capture_default_str();
        sub_->add_flag("-q,--quiet", tr_.quiet, "no progress");
        sub_->add_option("--recipe", recipe_,
                         "selected: logistic candidates (--pos-weights x --inputs x --shifts) chosen by controller outcome "
                         "(the default for --name ndm-default); gru: the GRU with plain BCE (the default otherwise)")
            ->check(ndm::tools::one_of({"selected", "gru"}));
        sub_->add_option("--pos-weights", weights_, "selected: pos-weights of the logistic candidates")->capture_default_str();
        sub_->add_option("--inputs", inputs_, "selected: input sets of the logistic candidates, one per --inputs")
            ->capture_default_str();
        sub_->add_option("--sharpen", sharpen_, "selected: output scales of each candidate (P = sigmoid(k s + shift))")
            ->capture_default_str();
        sub_->add_option("--shifts", shifts_, "selected: bias shifts of each candidate")->capture_default_str();
        add_outcome_options(sub_, sel_);
    }

    void run() override {
        check_lists();
        const auto t0 = steady_now();
        gen_.quiet = tr_.quiet;
        const auto d = run_generate(gen_);
        save_dataset(kDataPath, d, dataset_comment(gen_.gen));
        print_summary(d);
        const double gen_s = seconds_since(t0);
        // The whole generate command when the senders are not the default
        // ones; the short form otherwise (as the shipped ndm-default's
        // description has it, which a rebuild must reproduce byte for byte).
        const bool default_senders = gen_.gen.controllers == GenerateOptions{}.controllers;
        const std::string dataset =
            default_senders ? fmt::format("generate --seed {} --scenarios {} --seconds {}{} ({} events)", gen_.gen.seed,
                                          gen_.gen.scenarios, gen_.gen.seconds,
                                          gen_.gen.compete > 0 ? fmt::format(" --compete {}", gen_.gen.compete) : "",
                                          d.records.size())
                            : fmt::format("{} ({} events)", generate_command(gen_.gen), d.records.size());
        auto s = recipe_ == "gru" ? ship_gru(d, dataset) : ship_selected(d, dataset);
        describe(s);
        write(s.model, t0, gen_s);
    }

private:
    static constexpr const char* kDataPath = "/tmp/ndm-default-dataset.tsv";

    [[nodiscard]] bool is_default() const { return name_ == "ndm-default"; }
    // The compiled-in image a shipped model also writes: ndm-cubic's default
    // and ndm's (ndm/ndm_model.hpp); nullptr for other names.
    [[nodiscard]] const char* compiled_image() const {
        if (is_default()) return "src/cc/ndm/default_model.inc";
        if (name_ == "ndm-bbr") return "src/cc/ndm/ndm_bbr_model.inc";
        return nullptr;
    }

    // Bad lists are bad command lines: rejected before minutes of generation.
    void check_lists() {
        if (name_.empty() || name_.find_first_of("/\\") != std::string::npos)
            throw std::invalid_argument("--name must be a plain file name, got \"" + name_ + "\"");
        if (recipe_.empty()) recipe_ = is_default() ? "selected" : "gru";
        weights_v_ = parse_floats(weights_, "--pos-weights");
        shifts_v_ = parse_floats(shifts_, "--shifts");
        scales_v_ = parse_floats(sharpen_, "--sharpen");
        for (const float k : scales_v_)
            if (!(k >= 0.01F && k <= 100)) throw std::invalid_argument("--sharpen: each must be in [0.01, 100]");
        for (const auto& in : inputs_) (void)parse_input_mask(in);
        for (const float w : weights_v_)
            if (!(w >= 0.01F && w <= 100)) throw std::invalid_argument("--pos-weights: each must be in [0.01, 100]");
    }

    // The GRU with plain BCE, after a logistic baseline for comparison.
    Shipped ship_gru(const Dataset& d, const std::string& dataset) {
        tr_.kind = "logistic";
        std::cout << "baseline:\n";
        (void)run_fit(d, tr_);
        tr_.kind = "gru";
        const auto f = run_fit(d, tr_);
        return {f.net.to_model(f.standardizer, ""), model_description(tr_, f, dataset)};
    }

    // A logistic fit (one pos-weight and input set) and the candidates made of it.
    struct Base {
        TrainArgs args;
        FitResult fit;
    };
    // Candidate i came from bases[of[i].base], sharpened by k and shifted.
    struct Of {
        std::size_t base;
        float k, shift;
    };
    struct Candidates {
        std::vector<Base> bases;
        std::vector<Candidate> cands;
        std::vector<Of> of;
    };

    // Logistic candidates: pos-weight x input set x sharpening x bias shift.
    Candidates train_candidates(const Dataset& d) const {
        Candidates c;
        for (const auto& in : inputs_) {
            for (const float w : weights_v_) {
                TrainArgs a = tr_;
                a.kind = "logistic";
                a.inputs = in;
                a.train.pos_weight = w;
                a.quiet = true;
                std::cout << fmt::format("candidate: logistic, inputs {}, pos-weight {:g}\n", in, w);
                auto f = run_fit(d, a);
                const auto base = f.net.to_model(f.standardizer, "");
                for (const float k : scales_v_) {
                    for (const float sh : shifts_v_) {
                        c.of.push_back({c.bases.size(), k, sh});
                        c.cands.push_back({fmt::format("w={:g} k={:g} shift={:+g} inputs={}", w, k, sh,
                                                       format_input_mask(parse_input_mask(in))),
                                           shift_bias(sharpen(base, k), sh)});
                    }
                }
                c.bases.push_back({a, std::move(f)});
            }
        }
        return c;
    }

    // The candidate with the best controller outcome (ndm/train.hpp, select_by_outcome).
    Shipped ship_selected(const Dataset& d, const std::string& dataset) const {
        const auto c = train_candidates(d);
        std::cout << fmt::format("selection by controller outcome ({} pure-congestion and {} random-loss "
                                 "scenarios, generate --seed {} --seconds {}, train split):\n",
                                 sel_.congestion, sel_.random, sel_.seed, sel_.seconds);
        const auto r = select_by_outcome(c.cands, sel_, [&](const std::string& l) {
            if (!tr_.quiet) std::cout << "  " << l << '\n';
        });
        const auto [bi, k, shift] = c.of[r.chosen];
        const auto& b = c.bases[bi];
        const auto& m = c.cands[r.chosen].model;
        // Held-out metrics of the chosen model as the engine runs it
        // (the shift moves calibration and accuracy, not the AUC).
        const auto test = select(d, Split::test, select_options(b.args));
        const auto tm = evaluate(predict(m, test), labels(test));
        std::cout << fmt::format("chosen: {}: {}\nheld-out test:\n{}", c.cands[r.chosen].name,
                                 selection_line(r.scores[r.chosen]), format_metrics(tm, true));
        return {m, fmt::format(
            "{} logistic regression: P(loss is congestive) = sigmoid(k s + shift), inputs {}, pos-weight {:g}, k {:g}, "
            "shift {:+g}, seed {}, {} training events of {}; chosen among {} candidates (pos-weights {}, k {}, "
            "shifts {}) by controller outcome on {} pure-congestion (buffer >= {:g} BDP, >= {} packets) and {} random-loss "
            "scenarios (generate --seed {} --seconds {}, train split): {}; held-out (test split: RTT 100-160 ms, ATT driving trace) heldout_auc={:.4f} "
            "heldout_ece={:.4f} heldout_accuracy={:.4f} n={}; validation auc={:.4f}",
            kTrainerVersion, format_input_mask(b.args.train.input_mask), b.args.train.pos_weight, k, shift,
            b.args.train.seed, b.fit.n_train, dataset, c.cands.size(), weights_, sharpen_, shifts_,
            sel_.congestion, sel_.min_buffer_bdp, sel_.min_buffer_packets, sel_.random, sel_.seed, sel_.seconds,
            selection_line(r.scores[r.chosen]), tm.auc, tm.ece, tm.accuracy, tm.n, b.fit.val.auc)};
    }

    // The check set's AUC, recorded for tests/train/test_ndm_train.cpp, completes the description.
    void describe(Shipped& s) const {
        const auto check = generate(check_options());
        const auto all = select_splits(check, "all", {});
        const auto cm = evaluate(predict(s.model, all), labels(all));
        std::cout << "check set (generate --seed 1001 --scenarios 12 --seconds 4, all splits):\n" << format_metrics(cm, false);
        s.model.description = fmt::format("{}: {}; check_auc={:.4f} (check set: generate --seed 1001 --scenarios 12 "
                                          "--seconds 4)",
                                          is_default() ? "ndm-default (learned)" : name_, s.what, cm.auc);
    }

    void write(const cc::ndm::Model& m, Instant t0, double gen_s) const {
        const auto root = std::filesystem::path(root_);
        const auto model_path = root / "data/models" / (name_ + ".ndmm");
        cc::ndm::save_model(m, model_path);
        std::cout << fmt::format("wrote {}", model_path.string());
        if (const char* image = compiled_image()) {
            const auto inc = root / image;
            write_text(inc.string(), model_to_cpp(m, "data/models/" + name_ + ".ndmm"));
            std::cout << fmt::format(", {}", inc.string());
        }
        std::cout << fmt::format(" and {} in {:.1f} s (generation {:.1f} s)\n", kDataPath, seconds_since(t0), gen_s);
    }

    GenArgs gen_;
    TrainArgs tr_;
    OutcomeOptions sel_;
    std::string recipe_;
    std::string weights_ = "1,4";
    std::string sharpen_ = "1,3,5,8";
    std::string shifts_ = "0,1";
    std::vector<std::string> inputs_{"all", "q_now,q_p50,q_p90,slope,entropy,loss_run"};
    std::string root_ = ".";
    std::string name_ = "ndm-learned";
    std::vector<float> weights_v_, shifts_v_, scales_v_;
};

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    CLI::App app{
        "ndm-train: generate labelled loss events in virtual time, train the ndm controller's loss classifier and\n"
        "evaluate it (docs/ndm-training.md).",
        "ndm-train"};
    app.require_subcommand(1);
    // In the order --help lists them.
    GenerateCommand generate_cmd(app);
    TrainCommand train_cmd(app);
    EvaluateCommand evaluate_cmd(app);
    ExportCppCommand export_cmd(app);
    HandsetCommand handset_cmd(app);
    SelectCommand select_cmd(app);
    ShipCommand ship_cmd(app);
    const std::array<Command*, 7> commands{&generate_cmd, &train_cmd,  &evaluate_cmd, &export_cmd,
                                           &handset_cmd,  &select_cmd, &ship_cmd};

    ndm::tools::add_version_flag(app, "ndm-train");
    ndm::tools::deprecated_verbose_v(argc, argv, "ndm-train");
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-train")) return *rc;

    try {
        for (Command* c : commands)
            if (c->parsed()) c->run();
        return 0;
    } catch (const std::exception& ex) {  // bad dataset, model or value: 2; cannot write: 1
        return ndm::tools::report_failure("ndm-train", ex);
    }
}
