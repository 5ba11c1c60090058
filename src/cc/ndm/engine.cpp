#include "cc/ndm/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace ndm::cc::ndm {
namespace {

const Kernels* table(Simd s) noexcept {
    switch (s) {
        case Simd::scalar: return scalar_kernels();
        case Simd::sse42: return sse42_kernels();
        case Simd::avx2: return avx2_kernels();
        case Simd::avx512: return avx512_kernels();
        case Simd::neon: return neon_kernels();
    }
    return nullptr;
}

bool cpu_has(Simd s) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    // libgcc/compiler-rt also check that the OS saves the AVX/AVX-512 state.
    switch (s) {
        case Simd::scalar: return true;
        case Simd::sse42: return __builtin_cpu_supports("sse4.2") != 0;
        case Simd::avx2:
            return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
        case Simd::avx512:
            return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx2") != 0 &&
                   __builtin_cpu_supports("fma") != 0;
        case Simd::neon: return false;
    }
    return false;
#elif defined(__aarch64__)
    return s == Simd::scalar || s == Simd::neon;  // NEON (ASIMD) is baseline on arm64
#else
    return s == Simd::scalar;
#endif
}

Simd initial_simd() noexcept {
    const char* env = std::getenv("NDM_SIMD");
    if (env == nullptr || *env == '\0') return best_simd();
    const auto s = parse_simd(env);
    if (s && supported(*s)) return *s;
    spdlog::warn("NDM_SIMD={}: {}; using {}", env, s ? "not supported on this CPU/build" : "unknown",
                 simd_name(best_simd()));
    return best_simd();
}

std::atomic<Simd>& active() noexcept {
    static std::atomic<Simd> a{initial_simd()};
    return a;
}

}  // namespace

std::string_view simd_name(Simd s) noexcept {
    switch (s) {
        case Simd::scalar: return "scalar";
        case Simd::sse42: return "sse42";
        case Simd::avx2: return "avx2";
        case Simd::avx512: return "avx512";
        case Simd::neon: return "neon";
    }
    return "?";
}

std::optional<Simd> parse_simd(std::string_view name) noexcept {
    for (const Simd s : {Simd::scalar, Simd::sse42, Simd::avx2, Simd::avx512, Simd::neon}) {
        if (simd_name(s) == name) return s;
    }
    return std::nullopt;
}

bool supported(Simd s) noexcept { return table(s) != nullptr && cpu_has(s); }

std::vector<Simd> supported_simd() {
    std::vector<Simd> out;
    for (const Simd s : {Simd::scalar, Simd::sse42, Simd::avx2, Simd::avx512, Simd::neon}) {
        if (supported(s)) out.push_back(s);
    }
    return out;
}

Simd best_simd() noexcept {
    for (const Simd s : {Simd::avx512, Simd::avx2, Simd::neon, Simd::sse42}) {
        if (supported(s)) return s;
    }
    return Simd::scalar;
}

Simd active_simd() noexcept { return active().load(std::memory_order_relaxed); }

void set_active_simd(Simd s) {
    (void)kernels_for(s);  // throws when unsupported
    active().store(s, std::memory_order_relaxed);
}

const Kernels& kernels_for(Simd s) {
    if (!supported(s)) {
        throw std::invalid_argument("SIMD level \"" + std::string(simd_name(s)) +
                                    "\" is not supported by this CPU or build");
    }
    return *table(s);
}

const Kernels& kernels_named(std::string_view name) {
    if (name == "auto") return kernels_for(active_simd());
    const auto s = parse_simd(name);
    if (!s) {
        throw std::invalid_argument("must be auto, scalar, sse42, avx2, avx512 or neon, got \"" +
                                    std::string(name) + "\"");
    }
    if (!supported(*s)) throw std::invalid_argument(std::string(name) + " is not supported on this CPU/build");
    return kernels_for(*s);
}

namespace {

std::uint32_t max_width(const Model& m) noexcept {
    std::uint32_t w = m.input_dim;
    for (const auto& l : m.layers) w = std::max(w, l.out);
    return w;
}

std::uint32_t max_hidden(const Model& m) noexcept {
    std::uint32_t h = 0;
    for (const auto& l : m.layers) {
        if (l.kind == LayerKind::gru) h = std::max(h, l.out);
    }
    return h;
}

}  // namespace

// Large batches run in tiles of kTile connections through the whole model, so
// the intermediate rows stay in L1 instead of streaming through L2.
constexpr std::size_t kTile = 64;

std::size_t scratch_floats(const Model& model, std::size_t n) noexcept {
    // Two ping-pong buffers for dense layers, and the 2·3H GRU gate rows.
    return (2 * std::size_t{max_width(model)} + 6 * std::size_t{max_hidden(model)}) *
           std::min(n, kTile);
}

namespace {

void infer_tile(const Kernels& k, const Model& model, const BatchView& b, std::size_t n,
                float* scratch) {
    const std::size_t w = max_width(model);
    float* ping = scratch;
    float* pong = ping + w * n;
    float* gates = pong + w * n;
    const float* cur = b.input;
    std::size_t cur_stride = b.stride;
    std::size_t state_row = 0;
    for (std::size_t li = 0; li < model.layers.size(); ++li) {
        const Layer& l = model.layers[li];
        const bool last = li + 1 == model.layers.size();
        const float* p = l.params.data();
        if (l.kind == LayerKind::dense) {
            float* dst = last ? b.output : ping;
            const std::size_t ds = last ? b.stride : n;
            k.dense(p, p + std::size_t{l.out} * l.in, l.in, l.out, l.act, cur, cur_stride, dst, ds, n);
            cur = dst;
            cur_stride = ds;
            std::swap(ping, pong);
            continue;
        }
        const std::size_t hid = l.out;
        const float* w_ih = p;
        const float* w_hh = w_ih + 3 * hid * l.in;
        const float* b_ih = w_hh + 3 * hid * hid;
        const float* b_hh = b_ih + 3 * hid;
        float* h = b.state + state_row * b.stride;
        float* gi = gates;
        float* gh = gates + 3 * hid * n;
        k.dense(w_ih, b_ih, l.in, 3 * hid, Act::linear, cur, cur_stride, gi, n, n);
        k.dense(w_hh, b_hh, hid, 3 * hid, Act::linear, h, b.stride, gh, n, n);
        k.gru(gi, gh, n, hid, h, b.stride, n);
        cur = h;
        cur_stride = b.stride;
        state_row += hid;
        if (last) {
            for (std::size_t r = 0; r < hid; ++r) {
                std::copy_n(h + r * b.stride, n, b.output + r * b.stride);
            }
        }
    }
}

}  // namespace

void infer(const Kernels& k, const Model& model, const BatchView& b, std::span<float> scratch) {
    assert(scratch.size() >= scratch_floats(model, b.n));
    (void)scratch.size();
    for (std::size_t start = 0; start < b.n; start += kTile) {
        BatchView t = b;
        t.input += start;
        if (t.state != nullptr) t.state += start;
        t.output += start;
        infer_tile(k, model, t, std::min(kTile, b.n - start), scratch.data());
    }
}

void Engine::infer(const Model& model, const BatchView& batch) {
    if (batch.stride < batch.n) throw std::invalid_argument("engine: batch stride < n");
    if (model.state_dim() > 0 && batch.state == nullptr) {
        throw std::invalid_argument("engine: the model has a GRU but the batch has no state");
    }
    if (batch.input == nullptr || batch.output == nullptr) {
        throw std::invalid_argument("engine: batch without input or output");
    }
    const auto need = scratch_floats(model, batch.n);
    if (scratch_.size() < need) scratch_.resize(need);
    ndm::infer(*k_, model, batch, scratch_);
}

}  // namespace ndm::cc::ndm
