// The default model of the "ndm" controller, compiled in from
// default_model.inc: the exact C++ image (every float as a hexadecimal
// literal) of data/models/ndm-default.ndmm written by ndm-train
// (`ndm-train handset --root .` writes both; `ndm-train export-cpp` turns
// any model file into such an image, and `ndm-train ship --name ndm-default`
// would make a learned model the default; docs/ndm-training.md §6). So
// serialize_model(make_default_model()) is the shipped file byte for byte
// (tested) and the controller needs no file.
//
// The shipped default is the hand-set "ndm-default v2", an entropy-aware
// logistic rule (Dense(8 → 1, sigmoid), docs/ndm-controller.md §3.2): in the
// controller it beats the learned GRU (data/models/ndm-learned.ndmm,
// model=PATH) on the evaluation's congestion cases (bench/RESULTS.md).
#pragma once

#include <memory>

#include "cc/ndm/model.hpp"

namespace ndm::cc::ndm {

Model make_default_model();

// The compiled-in default, built once and shared by every connection.
const std::shared_ptr<const Model>& default_model();

}  // namespace ndm::cc::ndm
