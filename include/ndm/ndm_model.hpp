// The "ndm" controller's loss classifier as a value (docs/ndm-controller.md
// §2, §5): the model type, its .ndmm (de)serialisation, the feature vector it
// is fed, and the compiled-in default. Public because the model is what the
// controller's `model=PATH` option loads and what ndm-train (ndm/train.hpp)
// writes; the inference engine and its SIMD kernels stay private
// (ndm::train::predict runs a model exactly as the controller does).
//
// A model is a chain of dense (MLP) layers and GRU cells with float32 weights.
// File format (".ndmm"), version 1, all integers and floats little-endian:
//   offset  size
//   0       4    magic "NDMM"
//   4       4    u32 version (1)
//   8       4    u32 input_dim
//   12      4    u32 layer_count (1..16)
//   16      4    u32 description_bytes (0..4096)
//   20      8    u64 param_count: float32 parameters in the whole file
//   28      d    description, UTF-8, not terminated
//   28+d    20·L layer table: u32 kind (1 dense, 2 gru), u32 activation
//                (0 linear, 1 sigmoid, 2 tanh, 3 relu; 0 for gru),
//                u32 in, u32 out (GRU: hidden size), u32 param_count
//   ...     4·P  parameters, layer after layer (see Layer)
//   end−4   4    u32 CRC-32 (IEEE 802.3, as zlib) of every preceding byte
// Loading checks, in this order: header length, magic, version, header
// limits, total size (truncated / trailing bytes), checksum, per-layer
// parameter counts, the layer chain, and that every weight is finite. Each
// failure is a std::invalid_argument naming the problem.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::cc::ndm {

// ---------------------------------------------------------------- the inputs

// The model's inputs, in this order (docs/ndm-controller.md §2), computed per
// round trip from raw RTT samples by the controller's feature tracker.
enum Feature : std::size_t {
    kQueueNow = 0,  // q = rtt − min_rtt of the latest sample (at a loss: q at the loss), / min_rtt
    kQueueP50,      // median q of the round, / min_rtt (resolution 0.1)
    kQueueP90,      // 90th percentile of q, / min_rtt
    kRttSlope,      // least-squares d(rtt)/dt over the round (s/s), clipped to [−1, 1]
    kEntropy,       // Shannon entropy of the round's q histogram / log2(16), 0..1
    kLossRate,      // packets lost / (acked + lost) in the round
    kRateRatio,     // delivery rate / its recent maximum (BBR-style), 0..1
    kLossRun,       // (packets lost in the event − 1) / 8, clipped to [0, 1]
    kFeatureCount
};

using FeatureVector = std::array<float, kFeatureCount>;

// ---------------------------------------------------------------- the model

enum class Act : std::uint8_t { linear = 0, sigmoid = 1, tanh = 2, relu = 3 };

enum class LayerKind : std::uint32_t { dense = 1, gru = 2 };

struct Layer {
    LayerKind kind = LayerKind::dense;
    Act act = Act::linear;  // dense only; a GRU's activations are fixed (σ, tanh)
    std::uint32_t in = 0;
    std::uint32_t out = 0;  // a GRU's hidden size H
    // dense: W [out][in] row-major, then b [out].
    // gru (PyTorch layout, gates r, z, n): W_ih [3H][in], W_hh [3H][H],
    //      b_ih [3H], b_hh [3H].
    std::vector<float> params;

    [[nodiscard]] static std::size_t param_count(LayerKind kind, std::uint32_t in,
                                                 std::uint32_t out) noexcept;
};

struct Model {
    static constexpr std::uint32_t kVersion = 1;
    static constexpr std::uint32_t kMaxLayers = 16;
    static constexpr std::uint32_t kMaxDescription = 4096;

    std::uint32_t input_dim = 0;
    std::vector<Layer> layers;
    std::string description;

    [[nodiscard]] std::uint32_t output_dim() const noexcept;
    // Floats of recurrent state per connection: the sum of the GRU sizes.
    [[nodiscard]] std::uint32_t state_dim() const noexcept;
    // Throws std::invalid_argument when the layers do not chain, a size is out
    // of the engine's range (1..128 wide, a GRU 1..42 units), a parameter
    // count is wrong or a weight is NaN or infinite.
    void validate() const;
};

// The byte image of a valid model (validate() first; throws if invalid).
std::vector<std::uint8_t> serialize_model(const Model& model);
// Parses and validates a byte image; throws std::invalid_argument.
Model parse_model(std::span<const std::uint8_t> bytes);
// File wrappers; errors name the path: "model file \"x.ndmm\": truncated: ...".
Model load_model(const std::filesystem::path& path);
void save_model(const Model& model, const std::filesystem::path& path);

// ---------------------------------------------------------------- the default

// The default model of the "ndm-cubic" controller, compiled in from
// src/cc/ndm/default_model.inc: the exact C++ image (every float as a
// hexadecimal literal) of data/models/ndm-default.ndmm, both written by
// `ndm-train ship --root . --name ndm-default` (docs/ndm-training.md §6;
// `ndm-train export-cpp` turns any model file into such an image). So
// serialize_model(make_default_model()) is the shipped file byte for byte
// (tested) and the controller needs no file.
//
// The shipped default is trained: a logistic model (Dense(8 → 1, sigmoid))
// fitted on the seed-1 dataset and chosen among candidates by its outcome in
// this controller on training-distribution scenarios in virtual time. The
// hand-set "ndm-default v2" it replaced is data/models/ndm-handset-v2.ndmm
// (`ndm-train handset`), and the learned GRU data/models/ndm-learned.ndmm.
Model make_default_model();

// The compiled-in default, built once and shared by every connection.
const std::shared_ptr<const Model>& default_model();

// The default model of the "ndm" controller (BBRv3 with loss
// discrimination, docs/ndm-controller.md §7): a GRU trained on the loss
// events of ndm, bbr and cubic senders, compiled in from
// src/cc/ndm/ndm_bbr_model.inc, the image of data/models/ndm-bbr.ndmm, both
// written by `ndm-train ship --root . --name ndm-bbr` (docs/ndm-training.md §6).
Model make_ndm_bbr_model();
const std::shared_ptr<const Model>& ndm_bbr_model();

}  // namespace ndm::cc::ndm

#pragma GCC visibility pop
