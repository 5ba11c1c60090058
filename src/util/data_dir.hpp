// Where the library finds the data ndm ships (data/traces, data/models): one
// search path for every kind, so an installed program, a relocated install
// and a build in a source checkout all find the same files.
#pragma once

#include <string>
#include <vector>

namespace ndm::util {

// The data directories, in the order they are searched:
//   1. share/ndm of the installation the running program belongs to
//      (/proc/self/exe's directory, then the install's bindir → datadir/ndm),
//      so an installed tree can be moved;
//   2. the install prefix's datadir/ndm compiled in;
//   3. $NDM_DATA_DIR, when set;
//   4. data/ of the source tree the library was built from (developers).
// Directories that do not exist are left out.
std::vector<std::string> data_dirs();

// `name` itself when a file by that name exists or when it contains a '/';
// otherwise the first regular file <dir>/<kind>/<name> over data_dirs().
// Throws std::invalid_argument "cannot read WHAT 'NAME': no such file
// (searched DIRS)" when there is none.
std::string resolve_data_file(const std::string& name, const std::string& kind, const std::string& what);

}  // namespace ndm::util
