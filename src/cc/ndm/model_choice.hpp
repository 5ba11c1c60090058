// The `model` and `simd` options shared by the NDM controllers that run a
// loss classifier through the engine (ndm-cubic, ndm): which model file,
// loaded once per process and path, and which kernel table; and one
// quantised verdict of the model (a batch of one).
#pragma once

#include <cstdint>
#include <string_view>

#include "cc/ndm/features.hpp"
#include "cc/ndm/kernels.hpp"
#include "ndm/cc.hpp"
#include "ndm/ndm_model.hpp"

namespace ndm::cc::ndm {

// The model named by option "model": `fallback` when absent or "default",
// otherwise a file (a bare name is looked up among the shipped models,
// util::resolve_data_file) loaded once per process and path and shared by
// every connection that names it; it lives until exit. Throws
// std::invalid_argument naming `controller` when the file cannot be loaded
// or does not have kFeatureCount inputs, one output and at most `max_state`
// GRU units.
const Model* pick_model(const Options& o, const Model* fallback, std::string_view controller,
                        std::uint32_t max_state);

// The kernel table named by option "simd" (auto when absent); throws
// std::invalid_argument naming `controller` for an unknown name.
const Kernels* pick_kernels(const Options& o, std::string_view controller);

// P is quantised to 1/1024 before use, so that the kernels' last-ulp
// differences cannot change a decision (docs/ndm-controller.md §4.3).
inline constexpr float kPQuantum = 1.0F / 1024.0F;

// Runs `model` on f from GRU state h (updated in place; a batch of one, the
// scratch on the stack) and returns P quantised to kPQuantum, in [0, 1].
float classify(const Kernels& kernels, const Model& model, const FeatureVector& f, float* h) noexcept;

}  // namespace ndm::cc::ndm
