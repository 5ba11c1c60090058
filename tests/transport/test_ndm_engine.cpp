// The NDM inference engine (src/cc/ndm/{engine,kernels_*,model}): every
// kernel available on this machine against the scalar reference, the model
// file round trip and its load errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cc/ndm/engine.hpp"
#include "cc/ndm/kernels.hpp"
#include "cc/ndm/model.hpp"

namespace nn = ndm::cc::ndm;

namespace {

nn::Layer random_layer(std::mt19937& rng, nn::LayerKind kind, nn::Act act, std::uint32_t in,
                       std::uint32_t out, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    nn::Layer l;
    l.kind = kind;
    l.act = act;
    l.in = in;
    l.out = out;
    l.params.resize(nn::Layer::param_count(kind, in, out));
    for (auto& p : l.params) p = u(rng);
    return l;
}

// GRU 12 -> 16, then dense layers with every activation: covers every
// kernel entry point and a width that is not a multiple of any vector.
nn::Model random_model(std::uint32_t seed) {
    std::mt19937 rng(seed);
    nn::Model m;
    m.input_dim = 12;
    m.description = "random test model";
    m.layers.push_back(random_layer(rng, nn::LayerKind::gru, nn::Act::linear, 12, 16, 0.5F));
    m.layers.push_back(random_layer(rng, nn::LayerKind::dense, nn::Act::relu, 16, 13, 0.5F));
    m.layers.push_back(random_layer(rng, nn::LayerKind::dense, nn::Act::tanh, 13, 7, 0.8F));
    m.layers.push_back(random_layer(rng, nn::LayerKind::dense, nn::Act::linear, 7, 5, 0.8F));
    m.layers.push_back(random_layer(rng, nn::LayerKind::dense, nn::Act::sigmoid, 5, 1, 1.5F));
    m.validate();
    return m;
}

struct Run {
    std::vector<float> output;
    std::vector<float> state;
};

// Two steps so that the GRU also sees a non-zero hidden state.
Run run(nn::Simd simd, const nn::Model& m, std::size_t n, std::uint32_t seed) {
    const std::size_t stride = n + 5;  // rows not packed: strides are honoured
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-3.0F, 3.0F);
    std::vector<float> x(m.input_dim * stride);
    Run r;
    r.state.assign(m.state_dim() * stride, 0.0F);
    for (auto& v : r.state) v = u(rng) / 3.0F;
    r.output.assign(m.output_dim() * stride, -7.0F);
    nn::Engine engine(simd);
    for (int step = 0; step < 2; ++step) {
        for (auto& v : x) v = u(rng);
        engine.infer(m, {n, stride, x.data(), r.state.data(), r.output.data()});
    }
    return r;
}

// Relative error, with the denominator floored at `floor`. A GRU state is
// tanh of a 12-term dot product with terms up to ~1.5, mixed by (1 − z)·c +
// z·h: float rounding of those terms alone (FMA or not, in the scalar
// reference too) leaves an absolute error of ~3e-7, so states below 0.1 are
// compared absolutely (1e-6) rather than relatively. Outputs (sigmoid) are
// relative down to 1e-6.
double rel_err(float a, float ref, double floor) {
    return std::fabs(static_cast<double>(a) - ref) / std::max(std::fabs(static_cast<double>(ref)), floor);
}

}  // namespace

TEST_CASE("ndm engine: the scalar kernel is always available and the best kernel is supported") {
    const auto all = nn::supported_simd();
    REQUIRE(!all.empty());
    CHECK(all.front() == nn::Simd::scalar);
    CHECK(nn::supported(nn::best_simd()));
    CHECK(nn::parse_simd("avx2") == nn::Simd::avx2);
    CHECK(!nn::parse_simd("avx3"));
    MESSAGE("kernels on this machine: ", all.size(), ", best ", nn::simd_name(nn::best_simd()));
}

TEST_CASE("ndm engine: every kernel agrees with the scalar reference within 1e-5") {
    const auto m = random_model(7);
    for (const std::size_t n : {1U, 3U, 8U, 64U, 1000U}) {
        const auto ref = run(nn::Simd::scalar, m, n, 1234);
        for (const auto simd : nn::supported_simd()) {
            CAPTURE(nn::simd_name(simd));
            CAPTURE(n);
            const auto got = run(simd, m, n, 1234);
            double worst_out = 0;
            double worst_state = 0;
            const std::size_t stride = n + 5;
            for (std::size_t i = 0; i < n; ++i) {
                worst_out = std::max(worst_out, rel_err(got.output[i], ref.output[i], 1e-6));
                for (std::size_t r = 0; r < m.state_dim(); ++r) {
                    worst_state = std::max(worst_state, rel_err(got.state[r * stride + i],
                                                                 ref.state[r * stride + i], 0.1));
                }
            }
            CHECK(worst_out <= 1e-5);
            CHECK(worst_state <= 1e-5);
            // Padding lanes [n, stride) are never written.
            for (std::size_t i = n; i < stride; ++i) REQUIRE(got.output[i] == -7.0F);
        }
    }
}

TEST_CASE("ndm engine: the process-wide kernel can be forced") {
    const auto before = nn::active_simd();
    for (const auto simd : nn::supported_simd()) {
        nn::set_active_simd(simd);
        CHECK(nn::Engine{}.simd() == simd);
    }
    nn::set_active_simd(before);
    if (!nn::supported(nn::Simd::neon)) CHECK_THROWS_AS(nn::set_active_simd(nn::Simd::neon), std::invalid_argument);
}

TEST_CASE("ndm model: file round trip") {
    const auto m = random_model(11);
    const auto bytes = nn::serialize_model(m);
    const auto back = nn::parse_model(bytes);
    CHECK(back.input_dim == m.input_dim);
    CHECK(back.description == m.description);
    REQUIRE(back.layers.size() == m.layers.size());
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        CHECK(back.layers[i].kind == m.layers[i].kind);
        CHECK(back.layers[i].act == m.layers[i].act);
        CHECK(back.layers[i].in == m.layers[i].in);
        CHECK(back.layers[i].out == m.layers[i].out);
        CHECK(std::memcmp(back.layers[i].params.data(), m.layers[i].params.data(),
                          m.layers[i].params.size() * sizeof(float)) == 0);
    }
    CHECK(nn::serialize_model(back) == bytes);

    const std::string path = "ndm_engine_roundtrip_test.ndmm";
    nn::save_model(m, path);
    CHECK(nn::serialize_model(nn::load_model(path)) == bytes);
    std::remove(path.c_str());
}

namespace {

void reseal(std::vector<std::uint8_t>& b) {
    const auto crc = nn::crc32(std::span<const std::uint8_t>(b).first(b.size() - 4));
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

std::string load_error(const std::vector<std::uint8_t>& b) {
    try {
        (void)nn::parse_model(b);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(loaded)";
}

}  // namespace

TEST_CASE("ndm model: bad files are clear load errors") {
    const auto m = random_model(3);
    const auto good = nn::serialize_model(m);
    CHECK(nn::crc32(std::vector<std::uint8_t>{'1', '2', '3', '4', '5', '6', '7', '8', '9'}) ==
          0xCBF43926U);  // the standard CRC-32 check value

    SUBCASE("wrong magic") {
        auto b = good;
        b[0] = 'X';
        CHECK(load_error(b).find("bad magic") != std::string::npos);
    }
    SUBCASE("wrong version") {
        auto b = good;
        b[4] = 2;
        reseal(b);
        CHECK(load_error(b).find("unsupported model version 2") != std::string::npos);
    }
    SUBCASE("truncated") {
        for (const std::size_t len : {std::size_t{0}, std::size_t{10}, std::size_t{40}, good.size() - 1}) {
            CAPTURE(len);
            const std::vector<std::uint8_t> b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
            CHECK(load_error(b).find("truncated") != std::string::npos);
        }
    }
    SUBCASE("trailing bytes") {
        auto b = good;
        b.push_back(0);
        CHECK(load_error(b).find("size mismatch") != std::string::npos);
    }
    SUBCASE("layer size mismatch") {
        // First layer's "out" (GRU 12 -> 16) changed to 15: its parameter
        // count no longer matches.
        auto b = good;
        const std::size_t entry = 28 + m.description.size();
        b[entry + 12] = 15;
        reseal(b);
        CHECK(load_error(b).find("size mismatch: layer 0 (gru 12->15)") != std::string::npos);
    }
    SUBCASE("corrupted byte") {
        auto b = good;
        b[b.size() / 2] ^= 0x40;
        CHECK(load_error(b).find("checksum mismatch") != std::string::npos);
    }
    SUBCASE("NaN and infinite weights") {
        const std::size_t first_param = 28 + m.description.size() + 20 * m.layers.size();
        for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
            auto b = good;
            const auto u = std::bit_cast<std::uint32_t>(bad);
            for (int i = 0; i < 4; ++i) b[first_param + 4 * 5 + i] = static_cast<std::uint8_t>(u >> (8 * i));
            reseal(b);
            const auto err = load_error(b);
            CHECK(err.find("layer 0 (gru 12->16): parameter 5 is") != std::string::npos);
            CHECK(err.find(std::isnan(bad) ? "NaN" : "infinite") != std::string::npos);
        }
    }
    SUBCASE("a missing file names the path") {
        try {
            (void)nn::load_model("/nonexistent/x.ndmm");
            FAIL("loaded");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find("/nonexistent/x.ndmm") != std::string::npos);
        }
    }
    SUBCASE("the layers must chain") {
        auto bad = m;
        bad.layers[1].in = 15;
        bad.layers[1].params.resize(nn::Layer::param_count(nn::LayerKind::dense, 15, 13));
        CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("does not match the previous output size 16"),
                             std::invalid_argument);
    }
}
