// ndm-send's client of one test, everything after argument checking:
// connects the -P connections, runs the send phase (forward) or the receive
// phase (-R; --bidir both), collects the other side's reports, closes, and
// prints the text or the -J document (send_report.hpp).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "tools/emu/shared_path.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/send_options.hpp"

namespace ndm::tools::send {

// Runs the test `params` describes with `o`'s connections and path (`profile`:
// --emu or --profile). Returns the exit code (0 when the test completed
// byte-exact, 1 when it did not); throws std::runtime_error on a failed test
// (tools::Interrupted on Ctrl-C), with the -J interval records made so far in
// `intervals`.
int run_client(const Options& o, const TestParams& params, const std::optional<emu::Profile>& profile,
               nlohmann::json& intervals);

// The client's endpoint from `o`'s flags; `path` keeps the shared emulated
// path of --emu or --profile (its stats are printed at the end).
EndpointConfig client_endpoint_config(const Options& o, const std::optional<emu::Profile>& profile,
                                      std::optional<tools::SharedEmuPath>& path);

}  // namespace ndm::tools::send
