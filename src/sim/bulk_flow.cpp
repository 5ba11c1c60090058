#include "sim/bulk_flow.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

namespace ndm::sim {

namespace {

constexpr std::size_t kChunk = 64 * 1024;

std::string describe(const CloseInfo& c) {
    return "code " + std::to_string(c.code) + (c.by_peer ? " by peer" : "") + (c.reason.empty() ? "" : ": " + c.reason);
}

Connection& client_of(Simulator& sim) {
    if (sim.client() == nullptr) throw std::logic_error("BulkFlow: the simulator has no client; connect() first");
    return *sim.client();
}

}  // namespace

BulkFlow::BulkFlow(Simulator& sim, Instant start, std::uint64_t total, Instant send_until, std::uint64_t payload_seed)
    : sim_(sim),
      client_(client_of(sim)),
      start_(start),
      total_(total),
      send_until_(send_until),
      by_time_(total == UINT64_MAX),
      payload_(payload_seed),
      sample_begin_(start) {}

void BulkFlow::pump() {
    pump_receiver();
    pump_sender();
}

unsigned BulkFlow::pump(unsigned sides) {
    if (sides & Simulator::kServerSide) pump_receiver();
    const bool finish_due = by_time_ && tx_ && !tx_finished_ && sim_.now() >= send_until_;
    if ((sides & Simulator::kClientSide) || finish_due) {
        pump_sender();
        sides |= Simulator::kClientSide;
    }
    return sides;
}

// Keeps the stream's send buffer full. Runs after every step, which covers
// StreamWritable (writes are cheap no-ops while the buffer is full).
void BulkFlow::pump_sender() {
    while (auto ev = client_.poll_event()) {
        if (const auto* closed = std::get_if<event::Closed>(&*ev))
            spdlog::debug("sim: client closed: {}", describe(closed->info));
    }
    if (tx_finished_) return;
    if (!tx_) {
        if (!client_.is_established()) return;
        tx_ = client_.open_stream();
        if (!tx_) return;
        // The stream makes the payload into each packet: stored nowhere, it
        // costs no memory traffic however many flows run (issue 18).
        if (!client_.set_stream_source(*tx_, [p = payload_](std::uint64_t offset, std::span<std::uint8_t> out) {
                p.fill(offset, out);
            }))
            throw std::logic_error("BulkFlow: a new stream refused its payload source");
    }
    if (by_time_ && sim_.now() >= send_until_) {
        spdlog::debug("sim: t={:.6f} s: send time is up after {} bytes; finishing the stream",
                      to_seconds(sim_.now() - start_), written_);
        client_.finish(*tx_);
        tx_finished_ = true;
        return;
    }
    // In timed mode keep only about two windows queued ahead of the network
    // (as a socket buffer would), so the flow stops soon after send_until
    // instead of draining megabytes buffered in advance.
    std::uint64_t ahead_limit = UINT64_MAX;
    if (by_time_) {
        const ConnectionStats s = client_.stats(sim_.now());
        const std::uint64_t budget = std::max<std::uint64_t>(2 * s.cwnd, kChunk);
        const std::uint64_t unsent = written_ - std::min(written_, s.stream_bytes_sent);
        if (unsent >= budget) return;
        ahead_limit = budget - unsent;
    }
    while (written_ < total_ && ahead_limit > 0) {
        const std::size_t cap = static_cast<std::size_t>(
            std::min<std::uint64_t>(client_.stream_send_capacity(*tx_), ahead_limit));
        if (cap == 0) break;
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>({cap, kChunk, total_ - written_}));
        const std::size_t taken = client_.generate(*tx_, n);
        if (taken == 0) break;
        tx_hash_.update(payload_, written_, taken);
        written_ += taken;
        ahead_limit -= taken;
    }
    if (written_ == total_) {
        client_.finish(*tx_);
        tx_finished_ = true;
    }
}

void BulkFlow::pump_receiver() {
    Connection* server = sim_.server();
    if (server == nullptr) return;
    while (auto ev = server->poll_event()) {
        std::optional<StreamId> id;
        if (const auto* opened = std::get_if<event::StreamOpened>(&*ev)) id = opened->id;
        if (const auto* readable = std::get_if<event::StreamReadable>(&*ev)) id = readable->id;
        if (id && !rx_) {
            rx_ = id;
            // Hashed straight from each opened packet: no receive buffer, which
            // with many flows was a cold one per flow.
            if (!server->set_stream_sink(*id, [this](std::uint64_t, std::span<const std::uint8_t> bytes) {
                    rx_hash_.update(bytes);
                    received_ += bytes.size();
                    interval_bytes_ += bytes.size();
                }))
                throw std::logic_error("BulkFlow: the server's stream refused a sink");
        }
    }
    if (!rx_ || rx_done_) return;
    if (server->stream_finished(*rx_)) rx_done_ = true;
}

std::string BulkFlow::failure(unsigned sides) const {
    if ((sides & Simulator::kClientSide) && client_.is_closed())
        return "client closed (" + describe(client_.close_info()) + ")";
    const Connection* server = std::as_const(sim_).server();  // a look: the simulator keeps its timer
    if ((sides & Simulator::kServerSide) && server != nullptr && server->is_closed())
        return "server closed (" + describe(server->close_info()) + ")";
    return {};
}

IntervalSample BulkFlow::take_sample(Instant at) {
    const ConnectionStats s = client_.stats(at);
    IntervalSample sample;
    sample.begin = sample_begin_ - start_;
    sample.end = at - start_;
    sample.bytes = interval_bytes_;
    sample.bytes_sent = s.stream_bytes_sent - prev_sent_;
    sample.retransmits = s.packets_retransmitted - prev_retx_;
    sample.packets_lost = s.packets_lost - prev_lost_;
    sample.cwnd = s.cwnd;
    sample.bytes_in_flight = s.bytes_in_flight;
    sample.srtt = s.smoothed_rtt;
    prev_retx_ = s.packets_retransmitted;
    prev_lost_ = s.packets_lost;
    prev_sent_ = s.stream_bytes_sent;
    interval_bytes_ = 0;
    sample_begin_ = at;
    samples.push_back(sample);
    return sample;
}

void BulkFlow::finish(Instant end, TransferResult& r) const {
    r.duration = end - start_;
    r.bytes_sent = written_;
    r.bytes_delivered = received_;
    r.sender_hash = tx_hash_.digest();
    r.receiver_hash = rx_hash_.digest();
    r.completed = rx_done_ && tx_finished_;
    r.hash_match = r.completed && received_ == written_ && r.receiver_hash == r.sender_hash;
    if (rx_done_ && !r.hash_match) r.failure = "payload mismatch";
    r.client_stats = client_.stats(end);
    if (sim_.server() != nullptr) r.server_stats = sim_.server()->stats(end);
    r.samples = samples;
}

void BulkFlow::close_gracefully() {
    // The closing period is a few PTOs, so a short bounded grace suffices.
    if (rx_done_ && sim_.server() != nullptr && !sim_.server()->is_closed()) {
        sim_.server()->close(0, "transfer complete", sim_.now());
    }
    sim_.run_until(
        [&] {
            pump();
            return client_.is_closed() && (sim_.server() == nullptr || sim_.server()->is_closed());
        },
        sim_.now() + std::chrono::seconds(10));
}

}  // namespace ndm::sim
