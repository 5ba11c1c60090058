// The NDM inference engine: runs a Model over a structure-of-arrays batch of
// connections with the kernels chosen at run time (kernels.hpp).
//
//   ndm::cc::ndm::Engine engine;                 // NDM_SIMD or the best kernel
//   engine.infer(model, {n, stride, x, h, y});   // x [in][stride], h [state][stride]
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "cc/ndm/kernels.hpp"
#include "cc/ndm/model.hpp"

namespace ndm::cc::ndm {

// One batch: row r of each array holds that value for connections 0..n-1,
// element (r, i) at p[r * stride + i], stride >= n.
struct BatchView {
    std::size_t n = 0;
    std::size_t stride = 0;
    const float* input = nullptr;  // [model.input_dim][stride]
    // [model.state_dim()][stride]: the GRU hidden states, read and updated;
    // may be null when the model has no GRU.
    float* state = nullptr;
    float* output = nullptr;  // [model.output_dim()][stride]
};

// Floats of scratch infer() needs for a batch of n.
std::size_t scratch_floats(const Model& model, std::size_t n) noexcept;

// Runs model over the batch with kernels k; scratch must hold
// scratch_floats(model, batch.n) floats. No allocation, no checks beyond
// debug assertions: the model was validated when it was built or loaded.
void infer(const Kernels& k, const Model& model, const BatchView& batch, std::span<float> scratch);

// Owns its scratch; one per thread.
class Engine {
public:
    explicit Engine(Simd simd = active_simd()) : k_(&kernels_for(simd)) {}

    // Throws std::invalid_argument when the batch does not fit the model
    // (stride < n, a missing state array).
    void infer(const Model& model, const BatchView& batch);

    [[nodiscard]] Simd simd() const noexcept { return k_->simd; }
    [[nodiscard]] const Kernels& kernels() const noexcept { return *k_; }

private:
    const Kernels* k_;
    std::vector<float> scratch_;
};

}  // namespace ndm::cc::ndm
