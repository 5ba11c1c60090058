// The controllers compiled into the library. The registry calls this once,
// from its accessor, instead of relying on static registration objects in
// each controller's translation unit: the linker drops such objects from a
// static library when nothing else refers to their object file.
#pragma once

#include <functional>

#include "ndm/cc.hpp"

namespace ndm::cc {

// Hands every built-in controller's Registration to add. Add new controllers
// (cubic, ndm, ndm-lkm) in builtin.cpp.
void register_builtin_controllers(const std::function<void(Registration)>& add);

}  // namespace ndm::cc
