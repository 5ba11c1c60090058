// Writes a model as C++ source (the compiled-in default model's .inc): every
// float as an exact hexadecimal literal, so the compiled-in model serialises
// to the same bytes as the .ndmm file it came from.
#pragma once

#include <string>

#include "cc/ndm/model.hpp"

namespace ndm::train {

std::string model_to_cpp(const cc::ndm::Model& m, const std::string& source);

}  // namespace ndm::train
