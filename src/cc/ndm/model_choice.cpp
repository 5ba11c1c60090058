#include "cc/ndm/model_choice.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "cc/ndm/engine.hpp"
#include "util/data_dir.hpp"

namespace ndm::cc::ndm {
namespace {

[[noreturn]] void bad(std::string_view controller, const std::string& what) {
    throw std::invalid_argument("congestion controller \"" + std::string(controller) + "\": " + what);
}

}  // namespace

const Model* pick_model(const Options& o, const Model* fallback, std::string_view controller,
                        std::uint32_t max_state) {
    const auto it = o.find("model");
    if (it == o.end() || it->second == "default") return fallback;
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<const Model>, std::less<>> cache;
    const std::lock_guard lock(mu);
    if (auto c = cache.find(it->second); c != cache.end()) return c->second.get();
    std::unique_ptr<const Model> m;
    try {
        // A bare name is a shipped model (model=ndm-learned.ndmm) unless a file by that name exists.
        m = std::make_unique<const Model>(load_model(util::resolve_data_file(it->second, "models", "model")));
    } catch (const std::invalid_argument& e) {
        bad(controller, e.what());
    }
    if (m->input_dim != kFeatureCount || m->output_dim() != 1 || m->state_dim() > max_state) {
        bad(controller, "model \"" + it->second + "\" must have " + std::to_string(kFeatureCount) +
                            " inputs, 1 output and at most " + std::to_string(max_state) + " GRU units");
    }
    return cache.emplace(it->second, std::move(m)).first->second.get();
}

const Kernels* pick_kernels(const Options& o, std::string_view controller) {
    const auto it = o.find("simd");
    try {
        return &kernels_named(it == o.end() ? "auto" : it->second);
    } catch (const std::invalid_argument& e) {
        bad(controller, std::string("option \"simd\": ") + e.what());
    }
}

float classify(const Kernels& kernels, const Model& model, const FeatureVector& f, float* h) noexcept {
    // Batch of one: stride 1, scratch on the stack (a validated model needs
    // at most 2·128 + 6·42 floats).
    std::array<float, 2 * kMaxLayerWidth + 6 * (kMaxLayerWidth / 3)> scratch;
    float p = 0;
    infer(kernels, model, BatchView{1, 1, f.data(), h, &p}, scratch);
    if (!(p >= 0)) p = 1;  // NaN cannot come from a validated model; be safe anyway
    return std::min(1.0F, std::round(p / kPQuantum) * kPQuantum);
}

}  // namespace ndm::cc::ndm
