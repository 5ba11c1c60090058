#include "cc/ndm/model.hpp"

#include "util/input_file.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace ndm::cc::ndm {
namespace {

constexpr std::array<std::uint8_t, 4> kMagic{'N', 'D', 'M', 'M'};
constexpr std::size_t kHeaderBytes = 28;
constexpr std::size_t kLayerEntryBytes = 20;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string kind_name(LayerKind k) { return k == LayerKind::gru ? "gru" : "dense"; }

std::string layer_name(std::size_t i, const Layer& l) {
    return "layer " + std::to_string(i) + " (" + kind_name(l.kind) + " " + std::to_string(l.in) +
           "->" + std::to_string(l.out) + ")";
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
// resize + memcpy rather than vector::insert: GCC 12 reports a false
// -Wstringop-overflow for insert after reserve.
void put_bytes(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
    const std::size_t at = out.size();
    out.resize(at + n);
    if (n > 0) std::memcpy(out.data() + at, p, n);
}
std::uint32_t get_u32(const std::uint8_t* p) {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
}
std::uint64_t get_u64(const std::uint8_t* p) {
    return std::uint64_t{get_u32(p)} | std::uint64_t{get_u32(p + 4)} << 32;
}

constexpr std::array<std::uint32_t, 256> make_crc_table() {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto kCrcTable = make_crc_table();

}  // namespace

std::uint32_t crc32(std::span<const std::uint8_t> bytes) noexcept {
    std::uint32_t c = 0xFFFFFFFFU;
    for (const auto b : bytes) c = kCrcTable[(c ^ b) & 0xFFU] ^ (c >> 8);
    return c ^ 0xFFFFFFFFU;
}

std::size_t Layer::param_count(LayerKind kind, std::uint32_t in, std::uint32_t out) noexcept {
    const std::size_t i = in;
    const std::size_t o = out;
    return kind == LayerKind::gru ? 3 * o * i + 3 * o * o + 6 * o : o * i + o;
}

std::uint32_t Model::output_dim() const noexcept { return layers.empty() ? 0 : layers.back().out; }

std::uint32_t Model::state_dim() const noexcept {
    std::uint32_t s = 0;
    for (const auto& l : layers) {
        if (l.kind == LayerKind::gru) s += l.out;
    }
    return s;
}

void Model::validate() const {
    if (layers.empty() || layers.size() > kMaxLayers) {
        fail("model: " + std::to_string(layers.size()) + " layers (1.." +
             std::to_string(kMaxLayers) + " allowed)");
    }
    if (input_dim == 0 || input_dim > kMaxLayerWidth) {
        fail("model: input size " + std::to_string(input_dim) + " out of range 1.." +
             std::to_string(kMaxLayerWidth));
    }
    if (description.size() > kMaxDescription) fail("model: description longer than 4096 bytes");
    std::uint32_t prev = input_dim;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const Layer& l = layers[i];
        const auto name = layer_name(i, l);
        if (l.kind != LayerKind::dense && l.kind != LayerKind::gru) {
            fail("model: layer " + std::to_string(i) + ": unknown kind " +
                 std::to_string(static_cast<std::uint32_t>(l.kind)));
        }
        if (static_cast<std::uint32_t>(l.act) > static_cast<std::uint32_t>(Act::relu)) {
            fail("model: " + name + ": unknown activation " +
                 std::to_string(static_cast<std::uint32_t>(l.act)));
        }
        if (l.kind == LayerKind::gru && l.act != Act::linear) {
            fail("model: " + name + ": a GRU takes no activation (its gates are fixed)");
        }
        if (l.in != prev) {
            fail("model: " + name + ": input size " + std::to_string(l.in) +
                 " does not match the previous output size " + std::to_string(prev));
        }
        // 3H gate rows must fit the kernels' tail buffers too.
        const std::uint32_t max_out =
            l.kind == LayerKind::gru ? kMaxLayerWidth / 3 : kMaxLayerWidth;
        if (l.out == 0 || l.out > max_out) {
            fail("model: " + name + ": output size out of range 1.." + std::to_string(max_out));
        }
        const auto expect = Layer::param_count(l.kind, l.in, l.out);
        if (l.params.size() != expect) {
            fail("model: " + name + ": " + std::to_string(expect) + " parameters expected, got " +
                 std::to_string(l.params.size()));
        }
        for (std::size_t k = 0; k < l.params.size(); ++k) {
            if (!std::isfinite(l.params[k])) {
                fail("model: " + name + ": parameter " + std::to_string(k) + " is " +
                     (std::isnan(l.params[k]) ? "NaN" : "infinite"));
            }
        }
        prev = l.out;
    }
}

std::vector<std::uint8_t> serialize_model(const Model& model) {
    model.validate();
    std::size_t params = 0;
    for (const auto& l : model.layers) params += l.params.size();
    std::vector<std::uint8_t> out;
    out.reserve(kHeaderBytes + model.description.size() + kLayerEntryBytes * model.layers.size() +
                4 * params + 4);
    put_bytes(out, kMagic.data(), kMagic.size());
    put_u32(out, Model::kVersion);
    put_u32(out, model.input_dim);
    put_u32(out, static_cast<std::uint32_t>(model.layers.size()));
    put_u32(out, static_cast<std::uint32_t>(model.description.size()));
    put_u64(out, params);
    put_bytes(out, model.description.data(), model.description.size());
    for (const auto& l : model.layers) {
        put_u32(out, static_cast<std::uint32_t>(l.kind));
        put_u32(out, static_cast<std::uint32_t>(l.act));
        put_u32(out, l.in);
        put_u32(out, l.out);
        put_u32(out, static_cast<std::uint32_t>(l.params.size()));
    }
    for (const auto& l : model.layers) {
        for (const float f : l.params) put_u32(out, std::bit_cast<std::uint32_t>(f));
    }
    put_u32(out, crc32(out));
    return out;
}

Model parse_model(std::span<const std::uint8_t> b) {
    if (b.size() < kHeaderBytes + 4) {
        fail("truncated: " + std::to_string(b.size()) + " bytes, shorter than the " +
             std::to_string(kHeaderBytes + 4) + "-byte minimum");
    }
    if (std::memcmp(b.data(), kMagic.data(), kMagic.size()) != 0) {
        fail("not an NDM model file (bad magic; expected \"NDMM\")");
    }
    const std::uint32_t version = get_u32(b.data() + 4);
    if (version != Model::kVersion) {
        fail("unsupported model version " + std::to_string(version) + " (this build reads " +
             std::to_string(Model::kVersion) + ")");
    }
    Model m;
    m.input_dim = get_u32(b.data() + 8);
    const std::uint32_t layer_count = get_u32(b.data() + 12);
    const std::uint32_t desc = get_u32(b.data() + 16);
    const std::uint64_t params = get_u64(b.data() + 20);
    if (layer_count == 0 || layer_count > Model::kMaxLayers) {
        fail("bad header: " + std::to_string(layer_count) + " layers (1..16 allowed)");
    }
    if (desc > Model::kMaxDescription) fail("bad header: description longer than 4096 bytes");
    // Bounds every later size: a layer holds at most 3·128·128·2 + 6·128 floats.
    constexpr std::uint64_t kMaxParams = std::uint64_t{Model::kMaxLayers} * 128 * 128 * 8;
    if (params > kMaxParams) fail("bad header: " + std::to_string(params) + " parameters");
    const std::uint64_t expect =
        kHeaderBytes + desc + std::uint64_t{kLayerEntryBytes} * layer_count + 4 * params + 4;
    if (b.size() < expect) {
        fail("truncated: " + std::to_string(b.size()) + " bytes, the header describes " +
             std::to_string(expect));
    }
    if (b.size() > expect) {
        fail("size mismatch: " + std::to_string(b.size()) + " bytes, the header describes " +
             std::to_string(expect) + " (trailing data)");
    }
    const std::uint32_t stored = get_u32(b.data() + expect - 4);
    const std::uint32_t actual = crc32(b.first(expect - 4));
    if (stored != actual) fail("checksum mismatch (file corrupted)");

    const std::uint8_t* p = b.data() + kHeaderBytes;
    m.description.assign(reinterpret_cast<const char*>(p), desc);
    p += desc;
    std::uint64_t total = 0;
    m.layers.resize(layer_count);
    for (std::uint32_t i = 0; i < layer_count; ++i, p += kLayerEntryBytes) {
        Layer& l = m.layers[i];
        l.kind = static_cast<LayerKind>(get_u32(p));
        const std::uint32_t act = get_u32(p + 4);
        l.act = static_cast<Act>(act > 255 ? 255 : act);
        l.in = get_u32(p + 8);
        l.out = get_u32(p + 12);
        const std::uint32_t count = get_u32(p + 16);
        const auto name = layer_name(i, l);
        if (l.kind != LayerKind::dense && l.kind != LayerKind::gru) {
            fail("layer " + std::to_string(i) + ": unknown kind " +
                 std::to_string(get_u32(p)));
        }
        if (l.in > kMaxLayerWidth || l.out > kMaxLayerWidth) {
            fail(name + ": size out of range 1.." + std::to_string(kMaxLayerWidth));
        }
        const auto want = Layer::param_count(l.kind, l.in, l.out);
        if (count != want) {
            fail("size mismatch: " + name + ": " + std::to_string(want) +
                 " parameters expected, the file says " + std::to_string(count));
        }
        total += count;
    }
    if (total != params) {
        fail("size mismatch: the layers hold " + std::to_string(total) +
             " parameters, the header says " + std::to_string(params));
    }
    for (auto& l : m.layers) {
        const auto count = Layer::param_count(l.kind, l.in, l.out);
        l.params.resize(count);
        for (std::size_t k = 0; k < count; ++k, p += 4) l.params[k] = std::bit_cast<float>(get_u32(p));
    }
    m.validate();
    return m;
}

Model load_model(const std::filesystem::path& path) {
    std::vector<std::uint8_t> bytes;
    try {
        const std::string text = util::read_input_file(path.string(), util::kMaxModelFileBytes);
        bytes.assign(text.begin(), text.end());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("model file \"" + path.string() + "\": cannot open: " + e.what());
    }
    try {
        return parse_model(bytes);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("model file \"" + path.string() + "\": " + e.what());
    }
}

void save_model(const Model& model, const std::filesystem::path& path) {
    const auto bytes = serialize_model(model);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("model file \"" + path.string() + "\": write failed");
}

}  // namespace ndm::cc::ndm
