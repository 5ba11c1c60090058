#include "common/live_transfer.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/perf_session.hpp"
#include "common/printable.hpp"
#include "common/tls_flags.hpp"
#include "ndm/workload.hpp"

namespace ndm::tools {

namespace {
double seconds_between(Instant a, Instant b) { return to_seconds(b - a); }

// The receiving side: its own endpoint on its own thread; reads, counts and
// hashes what arrives until destroyed.
class LoopbackReceiver {
public:
    explicit LoopbackReceiver(const LiveSpec& spec) : server_(config(spec)) {
        server_.on_event([this](ConnectionHandle h, const Event& ev) {
            const auto* readable = std::get_if<event::StreamReadable>(&ev);
            if (!readable) return;
            Connection* c = server_.connection(h);
            if (!c) return;
            tools::drain(*c, readable->id, [&](std::span<const std::uint8_t> data) {
                std::lock_guard lock(m_);
                hash_.update(data);
                received_ += data.size();
                last_byte_ = steady_now();
            });
            if (c->stream_finished(readable->id)) fin_ = true;
        });
        thread_ = std::thread([this] {
            while (!stop_) server_.run_once(steady_now() + std::chrono::milliseconds(20));
        });
    }
    ~LoopbackReceiver() {
        stop_ = true;
        thread_.join();
    }
    LoopbackReceiver(const LoopbackReceiver&) = delete;
    LoopbackReceiver& operator=(const LoopbackReceiver&) = delete;

    [[nodiscard]] std::uint16_t port() const { return server_.local_port(); }
    [[nodiscard]] std::uint64_t received() const { return received_; }
    [[nodiscard]] bool fin() const { return fin_; }
    // The count, the time of the last byte and the digest, taken together.
    struct Totals {
        std::uint64_t bytes;
        Instant last_byte;
        std::uint64_t digest;
    };
    [[nodiscard]] Totals totals() {
        std::lock_guard lock(m_);
        return {received_, last_byte_, hash_.digest()};
    }

private:
    static EndpointConfig config(const LiveSpec& spec) {
        EndpointConfig scfg;
        scfg.bind_address = "127.0.0.1";
        scfg.accept_connections = true;
        scfg.backend = spec.backend;
        scfg.connection.max_datagram_size = spec.packet_size;
        scfg.connection.seed = spec.seed * 2 + 2;
        scfg.connection.idle_timeout = spec.idle_timeout;
        scfg.connection.tls = in_process_tls();
        return scfg;
    }

    Endpoint server_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> received_{0};
    std::atomic<bool> fin_{false};
    std::mutex m_;  // guards hash_ and last_byte_
    workload::StreamHash hash_;
    Instant last_byte_{};
    std::thread thread_;
};

// The sending side: the timed send phase with interval samples, then waiting
// for the receiver to have read everything; fills `out`.
void run_sender(const LiveSpec& spec, LoopbackReceiver& rx, RunResult& out) {
    EndpointConfig ccfg;
    ccfg.bind_address = "127.0.0.1";
    ccfg.backend = spec.backend;
    ccfg.connection.cc = spec.cc;
    ccfg.connection.cc_options = spec.cc_options;
    ccfg.connection.max_datagram_size = spec.packet_size;
    ccfg.connection.seed = spec.seed * 2 + 1;
    ccfg.connection.idle_timeout = spec.idle_timeout;
    ccfg.connection.loss_detection = spec.loss_detection;
    ccfg.connection.tls = in_process_tls();
    ccfg.egress_link = spec.up;
    ccfg.ingress_link = spec.down;
    Endpoint client(ccfg);
    const ConnectionHandle h = client.connect("127.0.0.1", rx.port());
    Connection* c = &await_established(client, h, std::chrono::seconds(15));
    StreamId id = *c->open_stream();
    PayloadPump pump(spec.seed);

    const Instant start = steady_now();
    const Instant end = start + from_seconds(spec.seconds);
    Instant sample_begin = start;
    Instant next_sample = start + from_seconds(spec.interval);
    std::uint64_t prev_sent = 0, prev_retx = 0, prev_rx = 0;
    auto sample = [&](Instant now) {
        const Connection* cc = client.find(h);
        if (!cc) return;
        ConnectionStats st = cc->stats(now);
        std::uint64_t rx_now = rx.received();
        out.intervals.push_back({seconds_between(start, sample_begin), seconds_between(start, now),
                                 st.stream_bytes_sent - prev_sent, rx_now - prev_rx,
                                 st.packets_retransmitted - prev_retx, st.cwnd,
                                 std::chrono::duration<double, std::milli>(st.smoothed_rtt).count()});
        prev_sent = st.stream_bytes_sent;
        prev_retx = st.packets_retransmitted;
        prev_rx = rx_now;
        sample_begin = now;
        if (spec.progress) spec.progress(seconds_between(start, now));
    };

    for (Instant now = steady_now(); now < end; now = steady_now()) {
        c = client.connection(h);
        if (!c || c->is_closed() || c->state() != ConnectionState::established) break;
        pump.pump(*c, id, now);
        client.run_once(std::min({next_sample, end, now + std::chrono::milliseconds(2)}));
        now = steady_now();
        if (now >= next_sample) {
            sample(now);
            next_sample += from_seconds(spec.interval);
        }
    }
    if (seconds_between(sample_begin, steady_now()) > spec.interval / 10) sample(steady_now());
    out.sender_seconds = seconds_between(start, steady_now());
    if (Connection* cc = client.connection(h); cc && cc->is_established()) cc->finish(id);

    // Wait for the receiver to read everything (bounded: a stalled path fails the run).
    bool done = client.run_until([&] { return rx.fin() && rx.received() == pump.written(); }, std::chrono::seconds(60));
    if (const Connection* cc = client.find(h)) {
        ConnectionStats st = cc->stats(steady_now());
        out.sender_bytes = st.stream_bytes_sent;
        out.retransmits = st.packets_retransmitted;
        out.packets_lost = st.packets_lost;
        out.spurious_losses = st.spurious_losses;
        out.ecn_state = std::string(to_string(st.ecn_state));
        out.ecn_ce_reported = st.ecn_ce_reported;
    }
    const LoopbackReceiver::Totals got = rx.totals();
    out.receiver_bytes = got.bytes;
    out.receiver_seconds = got.last_byte > start ? seconds_between(start, got.last_byte) : 0;
    out.byte_exact = done && got.digest == pump.digest();
    if (!done) {
        const CloseInfo* ci = client.close_info(h);
        out.error = ci ? "connection closed: " + printable(ci->reason)
                       : fmt::format("receiver got {} of {} bytes within 60 s after the send phase", rx.received(), pump.written());
    } else if (!out.byte_exact) {
        out.error = "received data differs from what was sent";
    }
    if (Connection* cc = client.connection(h)) cc->close(0, "done", steady_now());
    client.run_until([&] { return client.find(h) == nullptr || client.find(h)->is_closed(); }, std::chrono::milliseconds(300));
}

}  // namespace

RunResult run_live(const LiveSpec& spec) {
    RunResult out;
    out.controller = spec.cc;
    out.seed = spec.seed;
    LoopbackReceiver rx(spec);
    try {
        run_sender(spec, rx, out);
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    return out;
}

}  // namespace ndm::tools
