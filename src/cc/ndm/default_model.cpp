#include "cc/ndm/default_model.hpp"

#include <array>

#include "cc/ndm/features.hpp"

namespace ndm::cc::ndm {

Model make_default_model() {
    constexpr std::uint32_t kF = kFeatureCount;
    constexpr std::uint32_t kH = 2;  // the two wired units; no dead units to pay for per inference
    Model m;
    m.input_dim = kF;
    m.description =
        "ndm-default v1: hand-set queueing-evidence model (docs/ndm-controller.md 3.2); "
        "inputs q_now q_p50 q_p90 slope entropy loss_rate rate_ratio loss_run";

    Layer gru;
    gru.kind = LayerKind::gru;
    gru.in = kF;
    gru.out = kH;
    gru.params.assign(Layer::param_count(LayerKind::gru, kF, kH), 0.0F);
    float* w_ih = gru.params.data();        // [3H][F], gate rows r, z, n
    float* b_ih = w_ih + 3 * kH * kF + 3 * kH * kH;  // after W_hh [3H][H] (all 0)
    auto w = [&](std::uint32_t row, Feature f) -> float& { return w_ih[row * kF + f]; };
    constexpr std::uint32_t kZ = kH;
    constexpr std::uint32_t kN = 2 * kH;
    // Unit 0, "queue now".
    b_ih[kZ + 0] = -6.0F;
    w(kN + 0, kQueueNow) = 10.0F;
    w(kN + 0, kQueueP50) = 4.0F;
    w(kN + 0, kQueueP90) = 2.0F;
    w(kN + 0, kRttSlope) = 10.0F;
    w(kN + 0, kLossRun) = 3.0F;
    b_ih[kN + 0] = -2.0F;
    // Unit 1, "queue lately".
    b_ih[kZ + 1] = 0.0F;
    w(kN + 1, kQueueP50) = 4.0F;
    w(kN + 1, kQueueP90) = 4.0F;
    b_ih[kN + 1] = -1.0F;
    m.layers.push_back(std::move(gru));

    Layer head;
    head.kind = LayerKind::dense;
    head.act = Act::sigmoid;
    head.in = kH;
    head.out = 1;
    head.params.assign(Layer::param_count(LayerKind::dense, kH, 1), 0.0F);
    head.params[0] = 5.0F;
    head.params[1] = 1.5F;
    head.params[kH] = 1.0F;  // bias
    m.layers.push_back(std::move(head));
    m.validate();
    return m;
}

const std::shared_ptr<const Model>& default_model() {
    static const std::shared_ptr<const Model> m = std::make_shared<const Model>(make_default_model());
    return m;
}

}  // namespace ndm::cc::ndm
