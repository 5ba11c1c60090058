// Typed access to congestion-control options (private to the library and its
// tests). Every getter validates the value and throws std::invalid_argument
// with a one-line message naming the controller, the key and what is
// accepted, e.g.
//   congestion controller "reno": option "beta" must be a number in [0.1, 0.95], got "2"
// A key that is absent yields the default, which is not range-checked.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "ndm/cc.hpp"

namespace ndm::cc {

// A finite decimal number in [min, max].
double get_double(const Options& opts, std::string_view key, double def, double min, double max,
                  std::string_view controller);

// A non-negative decimal integer in [min, max].
std::uint64_t get_uint(const Options& opts, std::string_view key, std::uint64_t def,
                       std::uint64_t min, std::uint64_t max, std::string_view controller);

// on/off, true/false, 1/0 (ASCII case-insensitive).
bool get_bool(const Options& opts, std::string_view key, bool def, std::string_view controller);

// Throws when opts holds a key not in known, so a typo ("bata=0.7") is an
// error rather than a silently ignored setting.
void reject_unknown(const Options& opts, std::initializer_list<std::string_view> known,
                    std::string_view controller);

}  // namespace ndm::cc
