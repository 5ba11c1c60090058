#include "ndm/train.hpp"

namespace ndm::train {

namespace nn = cc::ndm;

nn::Model make_handset_model() {
    nn::Model m;
    m.input_dim = nn::kFeatureCount;
    m.description =
        "ndm-default v2: hand-set entropy-aware logistic (docs/ndm-controller.md 3.2), written by ndm-train handset: "
        "P = sigmoid(2 q_now + 4 q_p50 + 2 slope - 10 entropy + 2 loss_run - 1); inputs q_now q_p50 q_p90 slope "
        "entropy loss_rate rate_ratio loss_run";
    nn::Layer head;
    head.kind = nn::LayerKind::dense;
    head.act = nn::Act::sigmoid;
    head.in = nn::kFeatureCount;
    head.out = 1;
    head.params.assign(nn::Layer::param_count(nn::LayerKind::dense, head.in, 1), 0.0F);
    // Queueing delay now and typical in the round (Veno's signal, scale-free
    // through min_rtt), its trend, and a burst of losses (drop-tail's
    // signature) argue for congestion; spread argues against it: netem-style
    // jitter scatters the round's delays over many 0.1·min_rtt bins
    // (normalised entropy ~0.8), a standing or building queue keeps them in
    // one or two (~0.1–0.3). The p90, loss rate and delivery-rate ratio get
    // no weight: jitter moves the first, and the loss rate must not decide
    // (docs/ndm-controller.md §3.3).
    float* w = head.params.data();
    w[nn::kQueueNow] = 2.0F;
    w[nn::kQueueP50] = 4.0F;
    w[nn::kRttSlope] = 2.0F;
    w[nn::kEntropy] = -10.0F;
    w[nn::kLossRun] = 2.0F;
    w[nn::kFeatureCount] = -1.0F;  // bias
    m.layers.push_back(std::move(head));
    m.validate();
    return m;
}

}  // namespace ndm::train
