// One controller's timed bulk transfer through an emulator profile in
// virtual time: what ndm-compare --virtual runs per controller and repeat.
#include <algorithm>
#include <chrono>
#include <memory>

#include "ndm/cc.hpp"
#include "ndm/experiment.hpp"
#include "experiment/run_links.hpp"

namespace ndm::experiment {

VirtualRun run_virtual(const VirtualRunSpec& o, const std::function<void(const sim::IntervalSample&)>& on_sample) {
    sim::TransferSpec spec;
    const cc::Entry entry = cc::parse_entry(o.cc);
    spec.client.cc = entry.name;
    spec.client.cc_options = entry.options;
    spec.client.max_datagram_size = spec.server.max_datagram_size = o.packet_size;
    spec.client.seed = o.seed * 2 + 1;
    spec.server.seed = o.seed * 2 + 2;
    spec.client.idle_timeout = spec.server.idle_timeout = from_seconds(o.idle_timeout_s);
    spec.client.loss_detection = o.loss_detection;
    RunLinks links;  // common random numbers: the seed's impairment streams
    spec.client_to_server_factory = links.factory(o.profile, emu::Direction::up, o.seed);
    spec.server_to_client_factory = links.factory(o.profile, emu::Direction::down, o.seed);
    spec.send_for = from_seconds(o.seconds);
    spec.interval = from_seconds(o.interval);
    // Room for a stall that lasts up to the idle timeout after the send phase.
    spec.deadline = from_seconds(o.seconds + std::max(60.0, 2 * o.idle_timeout_s));
    spec.seed = o.seed;

    VirtualRun run;
    run.transfer = sim::run_transfer(spec, on_sample);
    const sim::TransferResult& r = run.transfer;
    RunResult& out = run.result;
    out.controller = o.cc;
    out.repeat = o.repeat;
    out.seed = o.seed;
    out.sender_bytes = r.client_stats.stream_bytes_sent;
    out.sender_seconds = o.seconds;
    out.receiver_bytes = r.bytes_delivered;
    out.receiver_seconds = to_seconds(r.duration);
    out.retransmits = r.client_stats.packets_retransmitted;
    out.packets_lost = r.client_stats.packets_lost;
    out.spurious_losses = r.client_stats.spurious_losses;
    out.ecn_state = std::string(to_string(r.client_stats.ecn_state));
    out.ecn_ce_reported = r.client_stats.ecn_ce_reported;
    out.byte_exact = r.completed && r.hash_match;
    out.path = links.metrics();
    if (!r.completed) out.error = r.failure.empty() ? "transfer did not complete" : r.failure;
    else if (!r.hash_match) out.error = "received data differs from what was sent";
    for (const auto& s : r.samples) {
        // Intervals after the sender stopped only drain the receiver; the
        // sender-side table ends with the sending time as iperf3's does.
        if (to_seconds(s.begin) >= o.seconds - 1e-9) break;
        out.intervals.push_back({to_seconds(s.begin), to_seconds(s.end), s.bytes_sent, s.bytes, s.retransmits, s.cwnd,
                                 std::chrono::duration<double, std::milli>(s.srtt).count()});
    }
    return run;
}

}  // namespace ndm::experiment
