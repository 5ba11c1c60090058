// The hand-set default model of the ndm controller ("ndm-default v2"), written
// by `ndm-train handset` (docs/ndm-controller.md §3.2).
#pragma once

#include "cc/ndm/model.hpp"

namespace ndm::train {

// An entropy-aware logistic rule over the controller's eight features: a
// loss is congestive when the queueing delay at it is large *and* consistent
// across the round (low entropy), random when the delays are noisy (jitter)
// or near zero.
cc::ndm::Model make_handset_model();

}  // namespace ndm::train
