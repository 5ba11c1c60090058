// What ndm-recv prints of a test besides its interval rows: the closing
// sender and receiver lines, or the -J document (iperf3's server keys), and
// the labels and keys its rows share with them. The Server in ndm_recv.cpp
// prints them at a test's end and sends them for --get-server-output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/perf/perf_session.hpp"
#include "tools/perf/recv_test.hpp"

namespace ndm::tools::recv {

// iperf3's row label: "[  1]", with --bidir "[  1][RX-S]" / "[  1][TX-S]".
[[nodiscard]] std::string label(const TestParams& p, const std::string& id, bool sends);
// The directions of the test's flows: false = we receive, true = we send.
[[nodiscard]] std::vector<bool> directions(const TestParams& p);
// The -J key of a direction's sums: iperf3's --bidir suffixes the reverse (our sending).
[[nodiscard]] std::string sum_key(const TestParams& p, const std::string& key, bool sends);

// The client's send phase a forward -t test's drain is measured from: -t
// seconds from its start (the sender stops writing then). None in reverse mode
// (we are the sender) and for -n (the sender's phase ends with its last ACK).
[[nodiscard]] std::optional<double> drain_reference(const TestParams& p);

// The closing lines (or, as_json, the -J document, with `title` as -T's key)
// of test `t`. `failure`: why a connection ended before its report, empty if
// none did.
[[nodiscard]] std::string closing_report(const Test& t, const std::string& failure, bool as_json,
                                         const std::string& title);

}  // namespace ndm::tools::recv
