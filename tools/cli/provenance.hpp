// The provenance object every JSON document of the tools carries under the
// top-level key "provenance" (results.json, compete.json, ndm-send -J,
// ndm-recv -J, ndm-sim --json): ndm version, git commit, command line, start
// time, host and kernel (include/ndm/version.hpp).
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

namespace ndm::tools {

// For a run (a test, an experiment) that started at `start`.
nlohmann::json provenance_json(std::chrono::system_clock::time_point start);

// iperf3's start.timestamp: {"time": RFC 1123 date in GMT, "timesecs": Unix seconds}.
nlohmann::json timestamp_json(std::chrono::system_clock::time_point start);

}  // namespace ndm::tools
