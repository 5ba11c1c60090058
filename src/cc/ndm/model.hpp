// A small feed-forward/recurrent network for the NDM inference engine: a chain
// of dense (MLP) layers and GRU cells with float32 weights, and its versioned
// binary file format (".ndmm", docs/ndm-controller.md §5).
//
// File format, version 1, all integers and floats little-endian:
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

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cc/ndm/kernels.hpp"

namespace ndm::cc::ndm {

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
    // of range (1..kMaxLayerWidth), a parameter count is wrong or a weight is
    // NaN or infinite.
    void validate() const;
};

// The byte image of a valid model (validate() first; throws if invalid).
std::vector<std::uint8_t> serialize_model(const Model& model);
// Parses and validates a byte image; throws std::invalid_argument.
Model parse_model(std::span<const std::uint8_t> bytes);
// File wrappers; errors name the path: "model file \"x.ndmm\": truncated: ...".
Model load_model(const std::filesystem::path& path);
void save_model(const Model& model, const std::filesystem::path& path);

// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib's crc32()).
std::uint32_t crc32(std::span<const std::uint8_t> bytes) noexcept;

}  // namespace ndm::cc::ndm
