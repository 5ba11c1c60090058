// The default model of the "ndm" controller, compiled in from
// default_model.inc: the exact C++ image (every float as a hexadecimal
// literal) of data/models/ndm-default.ndmm, both written by
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
#pragma once

#include <memory>

#include "cc/ndm/model.hpp"

namespace ndm::cc::ndm {

Model make_default_model();

// The compiled-in default, built once and shared by every connection.
const std::shared_ptr<const Model>& default_model();

}  // namespace ndm::cc::ndm
