// ndm-recv's state of a test: its flows (one direction of one connection
// each) and the test they make up. The Server in tools/perf/ndm_recv.cpp drives them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "ndm/workload.hpp"
#include "tools/perf/cpu_meter.hpp"
#include "tools/perf/datagram_test.hpp"
#include "tools/perf/payload_file.hpp"
#include "tools/perf/perf_session.hpp"
#include "tools/perf/test_limits.hpp"

namespace ndm::tools::recv {

// One direction of one connection of a test: --bidir connections have two.
struct Flow {
    ConnectionHandle h = 0;
    TestParams params;
    bool sends = false;  // we send (-R, or --bidir's second flow)
    HostPort peer;  // where the client's connection comes from
    ProgressWatch progress;  // bytes read, or (sending) acknowledged: --rcv-timeout, --snd-timeout
    PathSampler path;  // sending: RTT and cwnd at the interval ends, for the report
    Instant start{};
    // Forward: what we read, checked against the client's payload or hashed
    // (TestParams::check_payload), and -F's file it goes to.
    std::optional<workload::PayloadCheck> check;
    workload::StreamHash hash;
    std::unique_ptr<FileSink> sink;
    std::unique_ptr<DatagramReceiver> dgram;  // -u: the datagrams' counts (bytes: their payload bytes)
    std::uint64_t bytes = 0;
    Instant last_byte{};
    // Reverse: what we send.
    StreamId data = 0;
    std::unique_ptr<PayloadPump> pump;
    Instant send_end = kNever;
    bool fin_sent = false;
    double sent_seconds = 0;
    std::uint64_t sent_bytes = 0, retransmits = 0;
    bool reported = false;  // our report went out (forward: after the client's FIN)
    StreamId report = 0;    // the stream it went out on
    bool closed = false;
    std::string close_reason;
    std::uint64_t prev_bytes = 0, prev_retx = 0;  // at the last interval boundary
    // At the end of the -O period: forward what we had read, reverse what we had sent.
    std::uint64_t omitted_bytes = 0, omit_sent = 0, omit_retx = 0;

    [[nodiscard]] bool done() const { return sends ? fin_sent : reported; }
};

struct Test {
    std::uint64_t id = 0;
    TestParams params;  // of the first connection (shared settings)
    Instant start{};
    std::chrono::system_clock::time_point wall_start{};  // for the provenance record
    Instant interval_begin{};
    Instant next_report{};
    Instant join_deadline = kNever;  // every -P connection must have arrived by then
    Instant deadline = kNever;       // the test is over then, whatever the client does (TestLimits)
    Instant next_watch{};            // the next check for progress
    std::string ended_by_server;     // why the server ended the test, if it did
    bool header_printed = false;     // the interval rows' header
    HostPort local;           // the address the server is bound to
    HostPort accepted;        // the client of the test's first connection (iperf3's accepted_connection)
    bool intervals_done = false;
    bool omitting = false;  // within the client's -O seconds
    Instant omit_end{};
    std::vector<Flow> flows;
    nlohmann::json intervals = nlohmann::json::array();
    std::string transcript;    // --get-server-output's text (Server::say)
    bool output_sent = false;  // --get-server-output
    std::optional<StreamId> output;  // the stream it went out on, if it did
    CpuMeter cpu;  // reported to the client, as iperf3's remote CPU

    Flow* find(ConnectionHandle h, bool sends) {
        for (Flow& f : flows)
            if (f.h == h && f.sends == sends) return &f;
        return nullptr;
    }
    [[nodiscard]] unsigned connections() const {
        return static_cast<unsigned>(flows.size()) / (params.bidir ? 2 : 1);
    }
};

}  // namespace ndm::tools::recv
