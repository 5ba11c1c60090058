// run_transfer: one bulk transfer client → server in virtual time, checked
// byte for byte (a hash of what was written vs. what was read) and sampled
// every interval like an iperf3 report.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "ndm/sim.hpp"
#include "sim/rng.hpp"
#include "sim/payload.hpp"
#include "sim/stream_hash.hpp"

namespace ndm::sim {

namespace {

constexpr std::size_t kChunk = 64 * 1024;

std::string describe(const CloseInfo& c) {
    return "code " + std::to_string(c.code) + (c.by_peer ? " by peer" : "") + (c.reason.empty() ? "" : ": " + c.reason);
}

}  // namespace

TransferResult run_transfer(const TransferSpec& spec, const std::function<void(const IntervalSample&)>& on_sample) {
    if (spec.interval <= Duration::zero()) throw std::invalid_argument("run_transfer: interval must be positive");
    if (spec.deadline <= Duration::zero()) throw std::invalid_argument("run_transfer: deadline must be positive");

    auto make_link = [](const LinkFactory& factory, const SimpleLinkConfig& config) -> std::unique_ptr<Link> {
        if (factory) {
            auto link = factory();
            if (!link) throw std::invalid_argument("run_transfer: link factory returned null");
            return link;
        }
        return std::make_unique<SimpleLink>(config);
    };
    Simulator sim(make_link(spec.client_to_server_factory, spec.client_to_server),
                  make_link(spec.server_to_client_factory, spec.server_to_client), spec.start);
    Connection& client = sim.connect(spec.client, spec.server);

    const Instant start = spec.start;
    const Instant deadline = start + spec.deadline;
    const bool by_time = spec.send_for > Duration::zero();
    const Instant send_until = by_time ? start + spec.send_for : kNever;
    const std::uint64_t total = by_time ? UINT64_MAX : spec.bytes;

    TransferResult r;
    const Payload payload(spec.seed);
    std::vector<std::uint8_t> chunk(kChunk);

    // Sender state.
    std::optional<StreamId> tx;
    bool tx_finished = false;
    std::uint64_t written = 0;
    StreamHash tx_hash;
    // Receiver state.
    std::optional<StreamId> rx;
    bool rx_done = false;
    std::uint64_t received = 0;
    StreamHash rx_hash;
    std::uint64_t interval_bytes = 0;

    // Keeps the stream's send buffer full. Runs after every step, which covers
    // StreamWritable (writes are cheap no-ops while the buffer is full).
    auto pump_sender = [&] {
        while (auto ev = client.poll_event()) {
            if (const auto* closed = std::get_if<event::Closed>(&*ev))
                spdlog::debug("sim: client closed: {}", describe(closed->info));
        }
        if (tx_finished) return;
        if (!tx) {
            if (!client.is_established()) return;
            tx = client.open_stream();
            if (!tx) return;
        }
        if (by_time && sim.now() >= send_until) {
            spdlog::debug("sim: t={:.6f} s: send time is up after {} bytes; finishing the stream",
                          to_seconds(sim.now() - start), written);
            client.finish(*tx);
            tx_finished = true;
            return;
        }
        // In timed mode keep only about two windows queued ahead of the
        // network (as a socket buffer would), so the flow stops soon after
        // send_for instead of draining megabytes buffered in advance.
        std::uint64_t ahead_limit = UINT64_MAX;
        if (by_time) {
            const ConnectionStats s = client.stats(sim.now());
            const std::uint64_t budget = std::max<std::uint64_t>(2 * s.cwnd, kChunk);
            const std::uint64_t unsent = written - std::min(written, s.stream_bytes_sent);
            if (unsent >= budget) return;
            ahead_limit = budget - unsent;
        }
        while (written < total && ahead_limit > 0) {
            const std::size_t cap = static_cast<std::size_t>(
                std::min<std::uint64_t>(client.stream_send_capacity(*tx), ahead_limit));
            if (cap == 0) break;
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>({cap, kChunk, total - written}));
            payload.fill(written, {chunk.data(), n});
            const std::size_t taken = client.write(*tx, {chunk.data(), n});
            if (taken == 0) break;
            tx_hash.update({chunk.data(), taken});
            written += taken;
            ahead_limit -= taken;
        }
        if (written == total) {
            client.finish(*tx);
            tx_finished = true;
        }
    };

    auto pump_receiver = [&] {
        Connection* server = sim.server();
        if (server == nullptr) return;
        while (auto ev = server->poll_event()) {
            if (const auto* opened = std::get_if<event::StreamOpened>(&*ev)) {
                if (!rx) rx = opened->id;
            } else if (const auto* readable = std::get_if<event::StreamReadable>(&*ev)) {
                if (!rx) rx = readable->id;
            }
        }
        if (!rx || rx_done) return;
        while (const std::size_t n = server->read(*rx, chunk)) {
            rx_hash.update({chunk.data(), n});
            received += n;
            interval_bytes += n;
        }
        if (server->stream_finished(*rx)) rx_done = true;
    };

    Instant sample_begin = start;
    Instant next_sample = start + spec.interval;
    std::uint64_t prev_retx = 0;
    std::uint64_t prev_lost = 0;
    std::uint64_t prev_sent = 0;
    auto take_sample = [&](Instant at) {
        const ConnectionStats s = client.stats(at);
        IntervalSample sample;
        sample.begin = sample_begin - start;
        sample.end = at - start;
        sample.bytes = interval_bytes;
        sample.bytes_sent = s.stream_bytes_sent - prev_sent;
        sample.retransmits = s.packets_retransmitted - prev_retx;
        sample.packets_lost = s.packets_lost - prev_lost;
        sample.cwnd = s.cwnd;
        sample.bytes_in_flight = s.bytes_in_flight;
        sample.srtt = s.smoothed_rtt;
        prev_retx = s.packets_retransmitted;
        prev_lost = s.packets_lost;
        prev_sent = s.stream_bytes_sent;
        interval_bytes = 0;
        sample_begin = at;
        r.samples.push_back(sample);
        if (on_sample) on_sample(sample);
    };

    pump_sender();
    while (!rx_done) {
        if (client.is_closed() || (sim.server() != nullptr && sim.server()->is_closed())) {
            r.failure = client.is_closed() ? "client closed (" + describe(client.close_info()) + ")"
                                           : "server closed (" + describe(sim.server()->close_info()) + ")";
            break;
        }
        sim.flush();
        const Instant t = sim.next_event_time();
        if (t == kNever) {
            r.failure = "stalled: no event scheduled";
            break;
        }
        // Events at exactly the boundary still belong to the closing interval.
        if (t > next_sample && next_sample <= deadline) {
            sim.run_until(next_sample);
            take_sample(next_sample);
            next_sample += spec.interval;
            continue;
        }
        if (t > deadline) {
            sim.run_until(deadline);
            r.failure = "deadline reached";
            break;
        }
        sim.step();
        pump_receiver();
        pump_sender();
    }

    const Instant end = sim.now();
    if (end > sample_begin) take_sample(end);
    r.duration = end - start;
    r.bytes_sent = written;
    r.bytes_delivered = received;
    r.sender_hash = tx_hash.digest();
    r.receiver_hash = rx_hash.digest();
    r.completed = rx_done && tx_finished;
    r.hash_match = r.completed && received == written && r.receiver_hash == r.sender_hash;
    if (rx_done && !r.hash_match) r.failure = "payload mismatch";
    r.client_stats = client.stats(end);
    if (sim.server() != nullptr) r.server_stats = sim.server()->stats(end);

    // Close gracefully so both sides report how the connection ended; the
    // closing period is a few PTOs, so a short bounded grace suffices.
    if (rx_done && sim.server() != nullptr && !sim.server()->is_closed()) {
        sim.server()->close(0, "transfer complete", sim.now());
    }
    sim.run_until(
        [&] {
            pump_receiver();
            pump_sender();
            return client.is_closed() && (sim.server() == nullptr || sim.server()->is_closed());
        },
        sim.now() + std::chrono::seconds(10));

    r.client_closed = client.state() == ConnectionState::closed || client.state() == ConnectionState::draining ||
                      client.state() == ConnectionState::closing;
    r.client_close = client.close_info();
    if (Connection* server = sim.server()) {
        r.server_closed = server->state() != ConnectionState::handshaking && server->state() != ConnectionState::established;
        r.server_close = server->close_info();
    }
    r.client_to_server = sim.client_to_server_stats();
    r.server_to_client = sim.server_to_client_stats();
    r.steps = sim.steps();
    return r;
}

}  // namespace ndm::sim
