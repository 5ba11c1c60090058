// One bulk transfer client → server on a single stream, driven step by step
// by whoever owns the Simulator: keeps the sender's stream buffer full, reads
// and hashes what the server receives, and takes iperf3-style interval
// samples. run_transfer drives one; run_shared_path drives several flows
// whose simulators share a bottleneck.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ndm/sim.hpp"
#include "ndm/workload.hpp"

namespace ndm::sim {

class BulkFlow {
public:
    // Sends `total` bytes, or (total == UINT64_MAX) until `send_until` and
    // then finishes the stream. `start` is the origin of sample times.
    BulkFlow(Simulator& sim, Instant start, std::uint64_t total, Instant send_until, std::uint64_t payload_seed);

    // Moves data: server → application first, then application → client.
    // Call after every simulator step.
    void pump();
    // The same after Simulator::advance(), given the connections its event
    // reached: a half whose connection was not reached would find nothing
    // new, and is skipped (the sender's timed finish, which time alone
    // brings, excepted). Returns the connections written to, to flush.
    unsigned pump(unsigned sides);
    [[nodiscard]] bool done() const noexcept { return rx_done_; }
    // Why the flow cannot go on (a connection closed), or empty. `sides`
    // (Simulator::kClientSide | kServerSide): only those connections are
    // looked at, as only a connection an event reached can have closed.
    [[nodiscard]] std::string failure(unsigned sides = Simulator::kClientSide | Simulator::kServerSide) const;
    // Closes the interval [previous sample, at) into `samples`.
    IntervalSample take_sample(Instant at);
    [[nodiscard]] Instant last_sample() const noexcept { return sample_begin_; }
    // Totals, statistics and close information at `end` (fields of r other
    // than samples, links and steps).
    void finish(Instant end, TransferResult& r) const;
    // Closes both connections gracefully (bounded grace) after a complete
    // transfer, so both sides report how the connection ended.
    void close_gracefully();

    std::vector<IntervalSample> samples;

private:
    void pump_sender();
    // Timed mode and its send time over: the stream is (to be) finished.
    [[nodiscard]] bool send_time_up() const { return by_time_ && sim_.now() >= send_until_; }
    void pump_receiver();

    Simulator& sim_;
    Connection& client_;
    Instant start_;
    std::uint64_t total_;
    Instant send_until_;
    bool by_time_;
    workload::Payload payload_;
    // Sender.
    std::optional<StreamId> tx_;
    bool tx_finished_ = false;
    std::uint64_t written_ = 0;
    workload::StreamHash tx_hash_;
    // Receiver.
    std::optional<StreamId> rx_;
    bool rx_done_ = false;
    std::uint64_t received_ = 0;
    workload::StreamHash rx_hash_;
    // Sampling.
    std::uint64_t interval_bytes_ = 0;
    Instant sample_begin_;
    std::uint64_t prev_retx_ = 0;
    std::uint64_t prev_lost_ = 0;
    std::uint64_t prev_sent_ = 0;
};

}  // namespace ndm::sim
