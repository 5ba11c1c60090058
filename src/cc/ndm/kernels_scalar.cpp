// The portable scalar kernels: the reference every SIMD kernel is tested
// against. Activations use libm (std::exp, std::tanh), i.e. the exact
// functions to within an ulp, not the polynomial approximations of the SIMD
// kernels.
#include <cmath>
#include <cstddef>

#include "cc/ndm/kernels.hpp"

namespace ndm::cc::ndm {
namespace {

float activate(Act act, float v) noexcept {
    switch (act) {
        case Act::sigmoid: return 1.0F / (1.0F + std::exp(-v));
        case Act::tanh: return std::tanh(v);
        case Act::relu: return v > 0.0F ? v : 0.0F;
        case Act::linear: break;
    }
    return v;
}

void dense(const float* w, const float* b, std::size_t in, std::size_t out, Act act,
           const float* x, std::size_t xs, float* y, std::size_t ys, std::size_t n) {
    for (std::size_t o = 0; o < out; ++o) {
        const float* wo = w + o * in;
        float* yo = y + o * ys;
        for (std::size_t i = 0; i < n; ++i) {
            float acc = b[o];
            for (std::size_t k = 0; k < in; ++k) acc += wo[k] * x[k * xs + i];
            yo[i] = activate(act, acc);
        }
    }
}

void gru(const float* gi, const float* gh, std::size_t s, std::size_t hidden, float* h,
         std::size_t hs, std::size_t n) {
    for (std::size_t j = 0; j < hidden; ++j) {
        const auto [ir, iz, in, hr, hz, hn, hj] = gru_unit_rows(gi, gh, s, hidden, h, hs, j);
        for (std::size_t i = 0; i < n; ++i) {
            const float r = activate(Act::sigmoid, ir[i] + hr[i]);
            const float z = activate(Act::sigmoid, iz[i] + hz[i]);
            const float c = std::tanh(in[i] + r * hn[i]);
            hj[i] = (1.0F - z) * c + z * hj[i];
        }
    }
}

constexpr Kernels kScalar{Simd::scalar, "scalar", dense, gru};

}  // namespace

const Kernels* scalar_kernels() noexcept { return &kScalar; }

}  // namespace ndm::cc::ndm
