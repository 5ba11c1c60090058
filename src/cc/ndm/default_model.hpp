// The default model of the "ndm" controller, "ndm-default v1": hand-set
// weights, not learned (the learned model and its training pipeline are
// issue 7). make_default_model() is the documented generator: the shipped
// file data/models/ndm-default.ndmm is serialize_model(make_default_model()),
// which a test checks byte for byte, and the controller uses the compiled-in
// copy so that it needs no file.
//
// Shape: GRU(8 features → 2 units) then Dense(2 → 1, sigmoid) = P(loss is
// congestive), 75 parameters (docs/ndm-controller.md §3.2):
//   unit 0, "queue now": no memory (update gate z = σ(−6) ≈ 0.0025),
//     c0 = tanh(10·q_now + 4·q_p50 + 2·q_p90 + 10·slope + 3·run − 2);
//   unit 1, "queue lately": half-life of one round (z = σ(0) = 0.5),
//     c1 = tanh(4·q_p50 + 4·q_p90 − 1);
//   the reset gates are unused (W_hh = 0).
//   P = σ(5·h0 + 1.5·h1 + 1).
// Without a queue (q ≈ 0, medians in the first 0.1·min_rtt bin) P ≈ 0.01; P
// crosses 0.5 when the queueing delay at the loss reaches ~0.15·min_rtt
// (less when the RTT is rising), in the spirit of the Veno/Spike rule of
// ndm-spec.md §5.3 (q_at_loss < 0.1·min_rtt and slope ≤ 0 → random).
#pragma once

#include <memory>

#include "cc/ndm/model.hpp"

namespace ndm::cc::ndm {

Model make_default_model();

// The compiled-in default, built once and shared by every connection.
const std::shared_ptr<const Model>& default_model();

}  // namespace ndm::cc::ndm
