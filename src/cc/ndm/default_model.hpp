// The default model of the "ndm" controller, compiled in from
// default_model.inc: the exact C++ image (every float as a hexadecimal
// literal) of data/models/ndm-default.ndmm written by ndm-train
// (`ndm-train export-cpp -m data/models/ndm-default.ndmm -o
// src/cc/ndm/default_model.inc`, or `ndm-train ship --root .`, which trains
// a new default and writes both; docs/ndm-training.md §6). So
// serialize_model(make_default_model()) is the shipped file byte for byte
// (tested) and the controller needs no file.
//
// The shipped default is still the hand-set "ndm-default v1" (a GRU of 2
// units, docs/ndm-controller.md §3.2); the learned model is
// data/models/ndm-learned.ndmm (model=PATH) until the controller's tests are
// moved to it. Either way: GRU(8 features → H ≤ 8 units), then
// Dense(H → 1, sigmoid) = P(loss is congestive).
#pragma once

#include <memory>

#include "cc/ndm/model.hpp"

namespace ndm::cc::ndm {

Model make_default_model();

// The compiled-in default, built once and shared by every connection.
const std::shared_ptr<const Model>& default_model();

}  // namespace ndm::cc::ndm
