// ndm-send -u: the client of a datagram test (tools/perf/datagram_test.hpp),
// as iperf3 -u's: DATAGRAM frames (RFC 9221) at -b's rate, each as long as
// the connection's datagrams allow, with a sequence number and send time;
// then the receiver's count, which is the truth of the test's loss, jitter
// and order. Nothing is resent.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "ndm/emu.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/send_options.hpp"

namespace ndm::tools::send {

// Runs the datagram test `params` describes (TestParams::datagram). Returns
// the exit code (0: the test completed and every datagram that arrived was
// intact and arrived once; loss is the measurement, not a failure); throws
// std::runtime_error on a failed test, with the -J interval records so far in
// `intervals`.
int run_datagram_client(const Options& o, const TestParams& params, const std::optional<emu::Profile>& profile,
                        nlohmann::json& intervals);

}  // namespace ndm::tools::send
