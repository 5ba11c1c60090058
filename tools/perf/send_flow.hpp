// One flow of an ndm-send test, the state its client keeps and its report
// prints: one direction of one connection. -R and forward tests have one flow
// a connection; --bidir two (the second, `rev`, the server's sending), sharing it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "ndm/workload.hpp"
#include "tools/perf/perf_session.hpp"

namespace ndm::tools::send {

struct Flow {
    unsigned index = 0;
    bool rev = false;  // the server sends (-R, or --bidir's second flow)
    ConnectionHandle h = 0;
    TestParams params;
    StreamId data = 0;  // forward: our stream (also carries the report back)
    std::unique_ptr<PayloadPump> pump;  // forward
    workload::StreamHash hash;                 // reverse: what we read
    std::uint64_t received = 0;
    Instant last_byte{};
    std::vector<std::uint8_t> report;
    bool data_done = false;    // reverse: the server's data stream, FIN included, is read
    bool report_done = false;  // the other side's report is read (reverse: after all its data)
    std::uint64_t prev_bytes = 0, prev_retx = 0;  // at the last interval boundary
    std::uint64_t omit_sent = 0, omit_retx = 0, omit_received = 0;  // at the end of the -O period
    // Forward: the smoothed RTT (µs) and cwnd at the interval ends, for
    // iperf3's per-stream min/mean/max_rtt and max_snd_cwnd.
    PathSampler sampler;
    std::optional<SenderPath> path;  // at the end: ours, or (-R) from the server's report
    RemoteCpu remote_cpu;  // from the other side's report
    std::string receiver_cc;      // forward: the server's controller, from its report

    // Closing numbers, without the -O period; the totals decide byte-exactness.
    std::uint64_t sent_bytes = 0, retransmits = 0, recv_bytes = 0;
    std::uint64_t sent_total = 0, recv_total = 0;
    double sent_seconds = 0, recv_seconds = 0;
    bool exact = false;
    std::uint64_t mismatch_at = ReceiverReport::kNoMismatch;  // forward, checked payload: the first differing byte
    nlohmann::json ecn;  // this side's ECN counts at the end (RFC 9000 §13.4)
};

}  // namespace ndm::tools::send
