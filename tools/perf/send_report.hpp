// What ndm-send prints: the header of a test, its interval rows (text or -J
// records) and its closing sender and receiver lines or -J document
// (iperf3's start/intervals/end shape, docs/ndm-send-json.md). The client
// (send_client.cpp) runs the test and hands its state over as a TestView.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "tools/emu/shared_path.hpp"
#include "tools/perf/cpu_meter.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/send_flow.hpp"
#include "tools/perf/send_options.hpp"

namespace ndm::tools::send {

// A test as its client holds it.
struct TestView {
    const Options& o;
    const TestParams& base;
    std::span<const Flow> flows;  // the forward (or -R) flows first, then --bidir's server flows
    const Endpoint& ep;
    const EndpointConfig& cfg;
    std::size_t mds = 0;  // the negotiated max datagram size
    const HandshakeSummary& handshake;
    const std::string& profile_name;
    const std::optional<SharedEmuPath>& path;  // --emu, --profile
    // At the end only.
    const nlohmann::json& intervals;              // -J's interval records
    CpuPercent cpu{};                             // this process over the test
    const std::string& server_output;             // --get-server-output, escaped
    const nlohmann::json& server_output_json;     // --get-server-output with -J
};

// The directions of the test's flows: false = we send, true = the server sends.
[[nodiscard]] std::vector<bool> directions(const Options& o);

// The closing numbers of one direction and its verdict.
struct Totals {
    std::uint64_t sent = 0, recv = 0, retr = 0;
    double sent_s = 0, recv_s = 0;
    bool all_exact = true;
    std::string error;  // the first connection's failure, empty when all were byte-exact
};
[[nodiscard]] Totals totals(std::span<const Flow> flows, bool rev);

// This side's ECN view of a connection: validation state, the ECT(0)
// packets it marked, the codepoints it received and the CE marks the peer
// reported in ACK_ECN frames (RFC 9000 §13.4).
[[nodiscard]] nlohmann::json ecn_json(const ConnectionStats& st);

// The lines before the first interval: each connection, the controller and
// profile, -V's parameters, the rows' header.
void print_header(const TestView& t);

// One interval row of a flow (id "[  1]") or a direction's sum (id "[SUM]").
[[nodiscard]] std::string row_text(const Options& o, const std::string& id, bool rev, double b, double e,
                                   const SenderRow& r, bool omitted);
// The -J record of an interval: each flow's numbers and each direction's sum.
[[nodiscard]] nlohmann::json interval_json(const Options& o, std::span<const Flow> flows,
                                           std::span<const SenderRow> rows, const std::array<SenderRow, 2>& sums,
                                           double b, double e, bool omitted);

// The closing sender and receiver lines (and -V's), as iperf3's.
void print_closing_text(const TestView& t);
// The -J document.
void print_json(const TestView& t);

}  // namespace ndm::tools::send
