#include "train/outcome.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <unistd.h>

namespace ndm::train {

namespace {

bool has_random_loss(const ScenarioSpec& s) {
    return s.profile.find("loss=") != std::string::npos || s.profile.find("gemodel=") != std::string::npos;
}

}  // namespace

OutcomeScenarios outcome_scenarios(const OutcomeOptions& o) {
    GenerateOptions g;
    g.seed = o.seed;
    g.seconds = o.seconds;
    // Enough draws for the requested counts (≈ 3 % of draws are pure congestion).
    g.scenarios = 40 * (o.congestion + o.random) + 200;
    OutcomeScenarios out;
    for (auto& s : make_scenarios(g)) {
        if (s.info.split != Split::train) continue;
        // Pure congestion as the evaluation defines it (a droptail
        // bottleneck, no random loss, no jitter), at the training
        // distribution's rates, RTTs and buffers.
        // Buffers under half a BDP or under 8 packets are left out: there
        // the controller loses several times Cubic's packets whatever the
        // model (the hand-set rules too), and those few runs would decide
        // the geometric mean alone (docs/ndm-training.md §6).
        const bool pure_congestion = s.info.family == "loss" && !has_random_loss(s) &&
                                     s.profile.find("jitter=") == std::string::npos &&
                                     s.buffer_bdp >= o.min_buffer_bdp && s.buffer_packets >= o.min_buffer_packets;
        if (pure_congestion) {
            if (out.congestion.size() < o.congestion) out.congestion.push_back(std::move(s));
        } else if (has_random_loss(s) && s.info.family != "trace") {
            if (out.random.size() < o.random) out.random.push_back(std::move(s));
        }
        if (out.congestion.size() == o.congestion && out.random.size() == o.random) break;
    }
    if (out.congestion.size() < o.congestion || out.random.size() < o.random)
        throw std::invalid_argument("outcome selection: too few scenarios of each kind in the seed's list");
    return out;
}

RunOutcome run_outcome(const ScenarioSpec& s, const std::string& controller, const std::string& options) {
    ScenarioSpec spec = s;
    spec.controller = controller;
    spec.cc_options = options;
    ScenarioOutcome o;
    (void)run_scenario(spec, &o);
    RunOutcome r;
    r.goodput_mbit = o.goodput_mbit;
    r.drop_rate = o.path.sent ? static_cast<double>(o.path.dropped_queue) / static_cast<double>(o.path.sent) : 0.0;
    return r;
}

cc::ndm::Model shift_bias(cc::ndm::Model m, float delta) {
    auto& head = m.layers.back();
    if (head.kind != cc::ndm::LayerKind::dense || head.out != 1)
        throw std::invalid_argument("shift_bias: the model's last layer is not a dense layer with one output");
    head.params.back() += delta;
    return m;
}

cc::ndm::Model sharpen(cc::ndm::Model m, float k) {
    auto& head = m.layers.back();
    if (head.kind != cc::ndm::LayerKind::dense || head.out != 1)
        throw std::invalid_argument("sharpen: the model's last layer is not a dense layer with one output");
    for (auto& w : head.params) w *= k;
    return m;
}

SelectionResult select_by_outcome(const std::vector<Candidate>& candidates, const OutcomeOptions& o,
                                  const std::function<void(const std::string&)>& log) {
    if (candidates.empty()) throw std::invalid_argument("outcome selection: no candidates");
    const auto sc = outcome_scenarios(o);
    std::vector<RunOutcome> cubic_cong, cubic_rand;
    for (const auto& s : sc.congestion) cubic_cong.push_back(run_outcome(s, "cubic", ""));
    for (const auto& s : sc.random) cubic_rand.push_back(run_outcome(s, "cubic", ""));

    SelectionResult res;
    // The controller loads a model by path (cached per process and path), so
    // each candidate gets its own file for the duration of its runs.
    const auto dir = std::filesystem::temp_directory_path();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const auto path = dir / fmt::format("ndm-train-select-{}-{}.ndmm", ::getpid(), i);
        cc::ndm::save_model(candidates[i].model, path);
        const std::string opts = "model=" + path.string();
        CandidateScore score;
        double log_loss = 0, log_goodput = 0;
        for (std::size_t k = 0; k < sc.congestion.size(); ++k) {
            const auto r = run_outcome(sc.congestion[k], "ndm-cubic", opts);
            const double ratio = (r.drop_rate + 1e-4) / (cubic_cong[k].drop_rate + 1e-4);
            log_loss += std::log(ratio);
            if (log && o.per_scenario)
                log(fmt::format("    congestion {:4}: drop rate {:.3f} % vs cubic {:.3f} %  {}", sc.congestion[k].info.id,
                                100 * r.drop_rate, 100 * cubic_cong[k].drop_rate, sc.congestion[k].info.description));
            score.worst_loss_ratio = std::max(score.worst_loss_ratio, ratio);
        }
        for (std::size_t k = 0; k < sc.random.size(); ++k) {
            const auto r = run_outcome(sc.random[k], "ndm-cubic", opts);
            if (log && o.per_scenario)
                log(fmt::format("    random {:4}: {:.2f} vs cubic {:.2f} Mbit/s  {}", sc.random[k].info.id, r.goodput_mbit,
                                cubic_rand[k].goodput_mbit, sc.random[k].info.description));
            log_goodput += std::log(std::max(r.goodput_mbit, 1e-6) / std::max(cubic_rand[k].goodput_mbit, 1e-6));
        }
        std::filesystem::remove(path);
        score.loss_ratio = std::exp(log_loss / static_cast<double>(sc.congestion.size()));
        score.goodput_ratio = std::exp(log_goodput / static_cast<double>(sc.random.size()));
        score.admissible = score.loss_ratio <= 1 + o.loss_tolerance;
        res.scores.push_back(score);
        if (log)
            log(fmt::format("{:<32} drop rate vs cubic {:.3f} (worst {:.2f})  random-loss goodput vs cubic {:.3f}{}",
                            candidates[i].name, score.loss_ratio, score.worst_loss_ratio, score.goodput_ratio,
                            score.admissible ? "" : "  (inadmissible)"));
    }
    double best_goodput = -1;
    for (const auto& s : res.scores)
        if (s.admissible) best_goodput = std::max(best_goodput, s.goodput_ratio);
    bool any = false;
    for (std::size_t i = 0; i < res.scores.size(); ++i) {
        const auto& s = res.scores[i];
        const bool eligible = best_goodput < 0 || (s.admissible && s.goodput_ratio >= best_goodput * (1 - o.goodput_slack));
        if (eligible && (!any || s.loss_ratio < res.scores[res.chosen].loss_ratio)) {
            res.chosen = i;
            any = true;
        }
    }
    return res;
}

}  // namespace ndm::train
