// A directory a tool writes its results into, checked before any work.
#pragma once

#include <string>
#include <string_view>

namespace ndm::tools {

// An output directory (ndm-compare --out): created with its parents if
// missing, and writable. Throws std::invalid_argument naming `flag`, the
// path and the problem (a file in the way, a parent that cannot be made,
// no write permission), so a tool refuses it before any work.
void make_output_dir(const std::string& path, std::string_view flag);

}  // namespace ndm::tools
