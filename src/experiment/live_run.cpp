// One timed bulk transfer over real UDP sockets on loopback (ndm/experiment.hpp).
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "ndm/bulk_writer.hpp"
#include "ndm/cc.hpp"
#include "ndm/experiment.hpp"
#include "ndm/workload.hpp"
#include "experiment/run_links.hpp"

namespace ndm::experiment {

TlsOptions loopback_tls() {
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"localhost", "127.0.0.1"}, std::chrono::system_clock::now());
    TlsOptions o;
    o.certificate = creds;
    o.trust = tls::ClientCredentials::pinned(creds.fingerprint());
    return o;
}

namespace {
double seconds_between(Instant a, Instant b) { return to_seconds(b - a); }

TlsOptions tls_of(const LiveRunSpec& spec) { return spec.tls ? *spec.tls : loopback_tls(); }

// The receiving side: its own endpoint on its own thread; reads, counts and
// hashes what arrives until destroyed.
class LoopbackReceiver {
public:
    explicit LoopbackReceiver(const LiveRunSpec& spec) : server_(config(spec)) {
        server_.on_event([this](ConnectionHandle h, const Event& ev) {
            const auto* readable = std::get_if<event::StreamReadable>(&ev);
            if (!readable) return;
            Connection* c = server_.connection(h);
            if (!c) return;
            workload::drain(*c, readable->id, [&](std::span<const std::uint8_t> data) {
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
    static EndpointConfig config(const LiveRunSpec& spec) {
        EndpointConfig scfg;
        scfg.bind_address = "127.0.0.1";
        scfg.accept_connections = true;
        scfg.backend = spec.backend;
        scfg.connection.max_datagram_size = spec.packet_size;
        scfg.connection.seed = spec.seed * 2 + 2;
        scfg.connection.idle_timeout = from_seconds(spec.idle_timeout_s);
        scfg.connection.tls = tls_of(spec);
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

// The client's endpoint: the controller, the emulator links and TLS of the spec.
EndpointConfig client_config(const LiveRunSpec& spec, RunLinks& links) {
    const cc::Entry entry = cc::parse_entry(spec.cc);
    EndpointConfig ccfg;
    ccfg.bind_address = "127.0.0.1";
    ccfg.backend = spec.backend;
    ccfg.connection.cc = entry.name;
    ccfg.connection.cc_options = entry.options;
    ccfg.connection.max_datagram_size = spec.packet_size;
    ccfg.connection.seed = spec.seed * 2 + 1;
    ccfg.connection.idle_timeout = from_seconds(spec.idle_timeout_s);
    ccfg.connection.loss_detection = spec.loss_detection;
    ccfg.connection.tls = tls_of(spec);
    ccfg.egress_link = links.factory(spec.profile, emu::Direction::up, spec.seed);
    ccfg.ingress_link = links.factory(spec.profile, emu::Direction::down, spec.seed);
    return ccfg;
}

// Runs the endpoint until the handshake of h completes; throws
// std::runtime_error("connection failed: <reason>") when it does not.
Connection& await_established(Endpoint& ep, ConnectionHandle h) {
    ep.run_until([&] { const Connection* c = ep.find(h); return !c || c->is_established() || c->is_closed(); },
                 std::chrono::seconds(15));
    Connection* c = ep.connection(h);
    if (!c || !c->is_established()) {
        const CloseInfo* ci = ep.close_info(h);
        throw std::runtime_error(ci ? "connection failed: " + ci->reason : "connection failed: handshake did not complete");
    }
    return *c;
}

// The timed send phase of connection h, with a sample every interval.
class SendPhase {
public:
    SendPhase(const LiveRunSpec& spec, Endpoint& client, ConnectionHandle h, LoopbackReceiver& rx, RunResult& out)
        : spec_(spec), client_(client), h_(h), rx_(rx), out_(out), writer_(spec.seed) {}

    void run() {
        Connection* c = &await_established(client_, h_);
        id_ = *c->open_stream();
        start_ = sample_begin_ = steady_now();
        const Instant end = start_ + from_seconds(spec_.seconds);
        Instant next_sample = start_ + from_seconds(spec_.interval);
        for (Instant now = steady_now(); now < end; now = steady_now()) {
            c = client_.connection(h_);
            if (!c || c->is_closed() || c->state() != ConnectionState::established) break;
            writer_.write(*c, id_, c->stats(now));
            client_.run_once(std::min({next_sample, end, now + std::chrono::milliseconds(2)}));
            now = steady_now();
            if (now >= next_sample) {
                sample(now);
                next_sample += from_seconds(spec_.interval);
            }
        }
        if (seconds_between(sample_begin_, steady_now()) > spec_.interval / 10) sample(steady_now());
        out_.sender_seconds = seconds_between(start_, steady_now());
        if (Connection* cc = client_.connection(h_); cc && cc->is_established()) cc->finish(id_);
    }
    [[nodiscard]] Instant start() const { return start_; }
    [[nodiscard]] const workload::BulkWriter& writer() const { return writer_; }

private:
    void sample(Instant now) {
        const Connection* cc = client_.find(h_);
        if (!cc) return;
        const ConnectionStats st = cc->stats(now);
        const std::uint64_t rx_now = rx_.received();
        out_.intervals.push_back({seconds_between(start_, sample_begin_), seconds_between(start_, now),
                                  st.stream_bytes_sent - prev_sent_, rx_now - prev_rx_,
                                  st.packets_retransmitted - prev_retx_, st.cwnd,
                                  std::chrono::duration<double, std::milli>(st.smoothed_rtt).count()});
        prev_sent_ = st.stream_bytes_sent;
        prev_retx_ = st.packets_retransmitted;
        prev_rx_ = rx_now;
        sample_begin_ = now;
        if (spec_.progress) spec_.progress(seconds_between(start_, now));
    }

    const LiveRunSpec& spec_;
    Endpoint& client_;
    ConnectionHandle h_;
    LoopbackReceiver& rx_;
    RunResult& out_;
    workload::BulkWriter writer_;
    StreamId id_ = 0;
    Instant start_{}, sample_begin_{};
    std::uint64_t prev_sent_ = 0, prev_retx_ = 0, prev_rx_ = 0;
};

// The sending side: the send phase, then waiting for the receiver to have
// read everything; fills `out`.
void run_sender(const LiveRunSpec& spec, LoopbackReceiver& rx, RunLinks& links, RunResult& out) {
    Endpoint client(client_config(spec, links));
    const ConnectionHandle h = client.connect("127.0.0.1", rx.port());
    SendPhase phase(spec, client, h, rx, out);
    phase.run();
    const std::uint64_t written = phase.writer().written();
    // Bounded: a stalled path fails the run.
    const bool done = client.run_until([&] { return rx.fin() && rx.received() == written; }, std::chrono::seconds(60));
    if (const Connection* cc = client.find(h)) {
        const ConnectionStats st = cc->stats(steady_now());
        out.sender_bytes = st.stream_bytes_sent;
        out.retransmits = st.packets_retransmitted;
        out.packets_lost = st.packets_lost;
        out.spurious_losses = st.spurious_losses;
        out.ecn_state = std::string(to_string(st.ecn_state));
        out.ecn_ce_reported = st.ecn_ce_reported;
    }
    const LoopbackReceiver::Totals got = rx.totals();
    out.receiver_bytes = got.bytes;
    out.receiver_seconds = got.last_byte > phase.start() ? seconds_between(phase.start(), got.last_byte) : 0;
    out.byte_exact = done && got.digest == phase.writer().digest();
    if (!done) {
        const CloseInfo* ci = client.close_info(h);
        out.error = ci ? "connection closed: " + ci->reason
                       : fmt::format("receiver got {} of {} bytes within 60 s after the send phase", rx.received(), written);
    } else if (!out.byte_exact) {
        out.error = "received data differs from what was sent";
    }
    if (Connection* cc = client.connection(h)) cc->close(0, "done", steady_now());
    client.run_until([&] { return client.find(h) == nullptr || client.find(h)->is_closed(); }, std::chrono::milliseconds(300));
}

}  // namespace

RunResult run_live(const LiveRunSpec& spec) {
    const cc::Entry entry = cc::parse_entry(spec.cc);
    cc::Params p;
    p.max_datagram_size = spec.packet_size;
    (void)cc::make(entry.name, p, entry.options);  // a bad name or option fails before any socket opens
    RunResult out;
    out.controller = spec.cc;
    out.seed = spec.seed;
    out.repeat = spec.repeat;
    RunLinks links;
    {
        LoopbackReceiver rx(spec);
        try {
            run_sender(spec, rx, links, out);
        } catch (const std::exception& e) {
            out.error = e.what();
        }
    }
    out.path = links.metrics();
    return out;
}

}  // namespace ndm::experiment
