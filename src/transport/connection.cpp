// The connection state machine: handshake, packet assembly, frame dispatch,
// streams and flow control, glued to the recovery pieces (AckTracker,
// LossDetector, Pacer) and the congestion controller. Sans-I/O throughout.
#include "ndm/connection.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ndm/cc.hpp"
#include "transport/ack_tracker.hpp"
#include "transport/cwnd_usage.hpp"
#include "transport/flow_control.hpp"
#include "transport/frame.hpp"
#include "transport/loss_detector.hpp"
#include "transport/pacer.hpp"
#include "transport/packet.hpp"
#include "transport/sent_frame.hpp"
#include "transport/stream.hpp"
#include "transport/transport_params.hpp"
#include "util/rng.hpp"

namespace ndm {

using namespace transport;
namespace wf = wire::frame_type;

namespace {

constexpr std::size_t kInitialPacketSize = kMinDatagramSize;  // client hellos are padded to this
constexpr double kPacingGain = 1.25;                         // RFC 9002 §7.7
constexpr std::size_t kMinRecvRangeCap = 1024;  // out-of-order ranges a stream may hold, at least

wire::ConnectionId random_cid(std::uint64_t& state) {
    // Derived from the configured seed so that simulations are reproducible.
    std::uint64_t v = util::splitmix64_next(state);
    wire::ConnectionId cid;
    cid.length = wire::kShortCidLength;
    for (std::size_t i = 0; i < wire::kShortCidLength; ++i) cid.bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
    return cid;
}

bool is_client_stream(StreamId id) { return (id & 0x1) == 0; }
bool is_bidi_stream(StreamId id) { return (id & 0x2) == 0; }

// RFC 9000 §12.4: which frames each packet type may carry.
bool frame_allowed(const wire::Frame& f, wire::PacketType type) {
    bool long_header = type != wire::PacketType::one_rtt;
    if (std::holds_alternative<wire::CryptoFrame>(f)) return long_header;
    if (long_header) {
        return std::holds_alternative<wire::PaddingFrame>(f) || std::holds_alternative<wire::PingFrame>(f) ||
               std::holds_alternative<wire::AckFrame>(f) ||
               (std::holds_alternative<wire::ConnectionCloseFrame>(f) &&
                !std::get<wire::ConnectionCloseFrame>(f).application);
    }
    return true;
}

const char* frame_name(const wire::Frame& f) {
    static constexpr const char* names[] = {"PADDING",  "PING",        "ACK",          "CRYPTO",
                                            "STREAM",   "MAX_DATA",    "MAX_STREAM_DATA", "MAX_STREAMS",
                                            "DATA_BLOCKED", "STREAM_DATA_BLOCKED", "CONNECTION_CLOSE",
                                            "HANDSHAKE_DONE"};
    static_assert(std::size(names) == std::variant_size_v<wire::Frame>);
    return names[f.index()];
}

// Statistics group controller states into slow start (any variant, such as
// HyStart++'s conservative slow start), congestion avoidance, recovery, other.
std::size_t state_bucket_index(std::string_view state) {
    if (state.ends_with("slow_start")) return 0;
    if (state == "congestion_avoidance") return 1;
    if (state == "recovery") return 2;
    return 3;
}

// ---- tracing: wire structures to the public trace structs (observer only)
trace::PacketType trace_type(wire::PacketType t) {
    switch (t) {
        case wire::PacketType::initial: return trace::PacketType::initial;
        case wire::PacketType::handshake: return trace::PacketType::handshake;
        case wire::PacketType::version_negotiation: return trace::PacketType::version_negotiation;
        default: return trace::PacketType::one_rtt;
    }
}

trace::Frame trace_frame(const wire::Frame& frame) {
    using T = trace::Frame::Type;
    trace::Frame t;
    t.type = static_cast<T>(frame.index());  // same order as wire::Frame's alternatives
    std::visit(
        [&](const auto& f) {
            using F = std::decay_t<decltype(f)>;
            if constexpr (std::is_same_v<F, wire::PaddingFrame>) {
                t.length = f.length;
            } else if constexpr (std::is_same_v<F, wire::AckFrame>) {
                t.ack_delay = f.ack_delay;
                for (const auto& r : f.ranges) t.acked_ranges.emplace_back(r.smallest, r.largest);
            } else if constexpr (std::is_same_v<F, wire::CryptoFrame>) {
                t.offset = f.offset;
                t.length = f.data.size();
            } else if constexpr (std::is_same_v<F, wire::StreamFrame>) {
                t.stream_id = f.stream_id;
                t.offset = f.offset;
                t.length = f.data.size();
                t.fin = f.fin;
            } else if constexpr (std::is_same_v<F, wire::MaxDataFrame> || std::is_same_v<F, wire::MaxStreamsFrame>) {
                t.value = f.maximum;
            } else if constexpr (std::is_same_v<F, wire::MaxStreamDataFrame>) {
                t.stream_id = f.stream_id;
                t.value = f.maximum;
            } else if constexpr (std::is_same_v<F, wire::DataBlockedFrame>) {
                t.value = f.limit;
            } else if constexpr (std::is_same_v<F, wire::StreamDataBlockedFrame>) {
                t.stream_id = f.stream_id;
                t.value = f.limit;
            } else if constexpr (std::is_same_v<F, wire::ConnectionCloseFrame>) {
                t.value = f.error_code;
                t.application = f.application;
            }
        },
        frame);
    return t;
}
static_assert(static_cast<std::size_t>(trace::Frame::Type::handshake_done) + 1 == std::variant_size_v<wire::Frame>);

struct StreamState {
    StreamState(std::size_t send_buffer, std::uint64_t send_limit, std::uint64_t recv_window)
        : send(send_buffer), credit(send_limit), window(recv_window) {}
    SendStream send;
    RecvStream recv;
    SendCredit credit;     // the peer's MAX_STREAM_DATA
    ReceiveWindow window;  // ours
    bool max_stream_data_pending = false;
    std::uint64_t blocked_sent_at = UINT64_MAX;  // STREAM_DATA_BLOCKED already sent at this limit
    bool readable_notified = false;
    bool writable_wanted = false;
};

}  // namespace

struct Connection::Impl {
    Impl(const ConnectionConfig& config, bool is_client, Instant now);

    // ---- configuration and identity
    ConnectionConfig cfg;
    bool client;
    ConnectionState state = ConnectionState::handshaking;
    std::uint64_t rng;
    wire::ConnectionId local_cid, peer_cid, original_dcid;
    wire::TransportParams local_params, peer_params;
    bool have_peer_params = false;
    std::vector<std::uint8_t> hello;  // our encoded transport parameters
    bool crypto_pending = true;
    bool handshake_confirmed = false;
    bool handshake_done_pending = false;
    std::size_t mds;

    // ---- recovery and congestion control
    LossDetector loss;
    AckOutcome ack_out;  // reused by every ACK frame (keeps its vectors' storage)
    std::vector<wire::Frame> rx_frames;  // of the packet being read, reused likewise
    AckTracker acks;
    Pacer pacer;
    CwndUsage cwnd_usage;  // RFC 9002 §7.8: is the window the limit?
    std::unique_ptr<cc::Controller> cc;
    double pacing_rate = 0;  // bytes per second
    std::uint64_t largest_acked_by_peer = 0;
    bool peer_acked_any = false;
    unsigned probes_pending = 0;
    Instant last_eliciting_sent{};
    bool sent_eliciting_since_receive = false;

    // ---- flow control and streams
    SendCredit conn_credit;
    ReceiveWindow conn_window;
    std::uint64_t conn_received_total = 0;  // sum of highest offsets over streams
    bool max_data_pending = false;
    std::uint64_t data_blocked_sent_at = UINT64_MAX;
    std::map<StreamId, StreamState> streams;
    std::uint64_t next_local_index = 0;   // streams we opened
    std::uint64_t peer_next_index = 0;    // streams the peer opened (implicitly or not)
    std::uint64_t peer_max_streams = 0;   // how many we may open
    std::uint64_t local_max_streams = 0;  // how many the peer may open
    bool max_streams_pending = false;
    StreamId rr_cursor = 0;  // round-robin position among streams

    // ---- lifecycle
    std::deque<Event> events;
    CloseInfo close;
    bool close_frame_pending = false;
    bool send_version_negotiation = false;
    std::uint32_t offered_version = 0;
    Instant last_now{};  // the latest time the driver told us (next_timeout() has no clock)
    Instant idle_deadline = kNever;
    Instant handshake_deadline = kNever;
    Instant close_deadline = kNever;

    // ---- statistics
    ConnectionStats st;
    std::string cc_state;
    Instant cc_state_since{};
    Duration in_ss{0}, in_ca{0}, in_rec{0}, in_other{0};

    // ---- tracing: all of it behind `if (obs)`
    std::unique_ptr<trace::ConnectionObserver> obs;
    std::vector<trace::Frame> trace_frames;  // of the packet being built or read
    struct {
        std::uint64_t cwnd = 0, bytes_in_flight = 0, ssthresh = 0;
        Duration srtt{-1}, min_rtt{-1}, latest_rtt{-1}, rttvar{-1};
        double pacing = -1;
    } traced;  // the values the observer last saw
    void attach_observer(const trace::ObserverFactory& factory, Instant now);
    void trace_metrics(Instant now);
    void trace_state(const std::string& old_state, Instant now) {
        if (obs && old_state != cc_state) obs->on_congestion_state_updated({now, old_state, cc_state});
    }

    // ---- methods
    void make_controller(std::size_t datagram_size, Instant now);
    void on_datagram(std::span<const std::uint8_t> datagram, Instant now);
    std::size_t poll_datagram(std::span<std::uint8_t> out, Instant now);
    Instant next_timeout() const;
    void on_timeout(Instant now);

    bool process_frame(const wire::Frame& f, Instant now);
    void on_ack_frame(const wire::AckFrame& ack, Instant now);
    void on_lost_packets(std::vector<SentPacket>& lost, bool persistent, Instant now);
    void on_peer_params(std::span<const std::uint8_t> data, Instant now);
    bool on_stream_frame(const wire::StreamFrame& f, Instant now);
    StreamState* stream_for_peer_frame(StreamId id, bool& closed_ok, Instant now);
    void set_established(Instant now);
    void maybe_reap_stream(StreamId id);
    void on_consumed(StreamId id, StreamState& s, std::size_t n);
    // Creates a stream with our buffer and window and the peer's initial credit.
    void add_stream(StreamId id) {
        streams.try_emplace(id, cfg.stream_send_buffer, peer_params.initial_max_stream_data,
                            cfg.initial_max_stream_data);
    }

    void close_with_error(CloseCode code, std::string reason, Instant now);
    void start_close(std::uint64_t code, std::string reason, bool application, Instant now);
    void enter_draining(const wire::ConnectionCloseFrame& f, Instant now);
    void terminate();

    wire::PacketType send_packet_type() const;
    bool can_send_eliciting(Instant now) const;
    bool has_eliciting_data() const;
    bool stream_data_pending() const;
    std::uint64_t new_data_limit(const StreamState& s) const;
    std::uint64_t sendable_new_data(std::uint64_t enough) const;
    bool note_cwnd_usage(std::uint64_t pn, std::uint64_t in_flight, Instant now);
    void update_pacer();
    void track_cc_state(Instant now);
    Duration& state_bucket(std::string_view state) {
        Duration* b[] = {&in_ss, &in_ca, &in_rec, &in_other};
        return *b[state_bucket_index(state)];
    }
    Duration pto_period() const { return loss.rtt().pto_period(loss.max_ack_delay()); }
    Duration three_pto() const { return 3 * pto_period(); }
    void reset_idle_timer(Instant now);
    Duration effective_idle_timeout() const;
    void push_readable(StreamId id, StreamState& s);
};

// ============================================================================
// Construction

Connection::Impl::Impl(const ConnectionConfig& config, bool is_client, Instant now)
    : cfg(config),
      client(is_client),
      rng(config.seed),
      mds(config.max_datagram_size),
      loss(LossDetector::Config{config.max_ack_delay, config.max_pto_backoff}),
      acks(AckTracker::Config{config.max_ack_delay, 2, wire::kMaxAckRanges}),
      conn_credit(0),
      conn_window(config.initial_max_data) {
    if (cfg.max_datagram_size < kMinDatagramSize || cfg.max_datagram_size > kMaxDatagramSize) {
        throw std::invalid_argument(fmt::format("max datagram size {} outside {}..{} bytes",
                                                cfg.max_datagram_size, kMinDatagramSize, kMaxDatagramSize));
    }
    if (cfg.max_pto_backoff < Duration::zero()) throw std::invalid_argument("max_pto_backoff must not be negative");
    if (cfg.application_params.size() > wire::kMaxApplicationParams) {
        throw std::invalid_argument(fmt::format("application parameters of {} bytes exceed {} bytes",
                                                cfg.application_params.size(), wire::kMaxApplicationParams));
    }
    local_cid = random_cid(rng);
    local_params.max_idle_timeout_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.idle_timeout).count());
    local_params.max_datagram_size = cfg.max_datagram_size;
    local_params.initial_max_data = cfg.initial_max_data;
    local_params.initial_max_stream_data = cfg.initial_max_stream_data;
    local_params.initial_max_streams = cfg.initial_max_streams;
    local_params.max_ack_delay_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.max_ack_delay).count());
    local_params.application_params = cfg.application_params;
    hello.resize(64 + wire::kMaxApplicationParams);
    wire::Writer w(hello);
    if (!wire::encode_transport_params(w, local_params)) throw std::logic_error("transport parameters do not fit");
    hello.resize(w.position());
    local_max_streams = cfg.initial_max_streams;
    // Before the handshake, only the minimum datagram size is known to pass.
    mds = kMinDatagramSize;
    make_controller(mds, now);
    handshake_deadline = now + cfg.handshake_timeout;
    idle_deadline = now + cfg.idle_timeout;
    cc_state_since = now;
}

void Connection::Impl::make_controller(std::size_t datagram_size, Instant now) {
    cc::Params p;
    p.max_datagram_size = datagram_size;
    p.now = now;
    cc = cc::make(cfg.cc, p, cfg.cc_options);
    const std::string old = cc_state;
    cc_state = std::string(cc->state());
    trace_state(old, now);
    update_pacer();
}

void Connection::Impl::attach_observer(const trace::ObserverFactory& factory, Instant now) {
    if (!factory) return;
    obs = factory(trace::ConnectionInfo{client, original_dcid.span(), now});
    trace_metrics(now);
}

void Connection::Impl::trace_metrics(Instant now) {
    if (!obs) return;
    trace::MetricsUpdated m{};
    m.time = now;
    bool any = false;
    auto diff = [&](auto& last, auto current, auto& field) {
        if (last == current) return;
        last = current;
        field = current;
        any = true;
    };
    const auto& rtt = loss.rtt();
    diff(traced.cwnd, cc->cwnd(), m.cwnd);
    diff(traced.bytes_in_flight, loss.bytes_in_flight(), m.bytes_in_flight);
    if (cc->ssthresh() != UINT64_MAX) diff(traced.ssthresh, cc->ssthresh(), m.ssthresh);
    if (rtt.has_sample()) {
        diff(traced.srtt, rtt.smoothed(), m.smoothed_rtt);
        diff(traced.min_rtt, rtt.min(), m.min_rtt);
        diff(traced.latest_rtt, rtt.latest(), m.latest_rtt);
        diff(traced.rttvar, rtt.rttvar(), m.rtt_variance);
    }
    if (pacing_rate > 0) diff(traced.pacing, pacing_rate * 8, m.pacing_rate);
    if (any) obs->on_metrics_updated(m);
}

std::unique_ptr<Connection> Connection::connect(const ConnectionConfig& config, Instant now) {
    auto impl = std::make_unique<Impl>(config, true, now);
    impl->original_dcid = random_cid(impl->rng);
    impl->peer_cid = impl->original_dcid;
    impl->attach_observer(config.observer, now);
    spdlog::debug("ndm: client connection created, cc={}", config.cc);
    return std::unique_ptr<Connection>(new Connection(std::move(impl)));
}

std::unique_ptr<Connection> Connection::accept(const ConnectionConfig& config,
                                               std::span<const std::uint8_t> datagram, Instant now) {
    wire::ParsedPacket pkt;
    wire::Error err;
    if (!wire::parse_packet(datagram, 0, false, pkt, err)) return nullptr;
    if (pkt.header.type != wire::PacketType::initial) return nullptr;
    // Mix the client's CID into our seed so that every accepted connection
    // gets distinct IDs even with one server config.
    ConnectionConfig cfg = config;
    for (auto b : pkt.header.dcid.span()) cfg.seed = cfg.seed * 131 + b;
    auto impl = std::make_unique<Impl>(cfg, false, now);
    impl->original_dcid = pkt.header.dcid;
    impl->peer_cid = pkt.header.scid;
    impl->attach_observer(config.observer, now);
    impl->crypto_pending = false;  // we answer once we have read the client's hello
    if (pkt.header.version != kProtocolVersion) {
        impl->offered_version = pkt.header.version;
        impl->send_version_negotiation = true;
        impl->state = ConnectionState::closing;
        impl->close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
                       fmt::format("client offered version {:#010x}; this endpoint speaks {:#010x}",
                                   pkt.header.version, kProtocolVersion),
                       false, false};
        impl->events.push_back(event::Closed{impl->close});
        impl->close_deadline = now;
        return std::unique_ptr<Connection>(new Connection(std::move(impl)));
    }
    auto conn = std::unique_ptr<Connection>(new Connection(std::move(impl)));
    conn->on_datagram(datagram, now);
    // A first datagram without a valid hello is not a connection attempt.
    if (!conn->impl_->have_peer_params && conn->impl_->state == ConnectionState::handshaking) return nullptr;
    return conn;
}

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::~Connection() = default;

// ============================================================================
// Receiving

void Connection::Impl::on_datagram(std::span<const std::uint8_t> datagram, Instant now) {
    if (state == ConnectionState::closed || state == ConnectionState::draining) return;
    wire::ParsedPacket pkt;
    wire::Error err;
    if (!wire::parse_packet(datagram, acks.largest_received(), acks.has_received(), pkt, err)) {
        ++st.packets_dropped;
        spdlog::debug("ndm: dropped datagram of {} bytes: {}", datagram.size(), err.what);
        return;
    }
    const auto& h = pkt.header;
    if (h.type == wire::PacketType::version_negotiation) {
        if (client && state == ConnectionState::handshaking && h.dcid == local_cid) {
            std::string versions;
            for (auto v : pkt.supported_versions) versions += fmt::format("{}{:#010x}", versions.empty() ? "" : ", ", v);
            close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
                     fmt::format("peer does not speak version {:#010x} (it offers: {})", kProtocolVersion,
                                 versions.empty() ? "none" : versions),
                     true, false};
            events.push_back(event::Closed{close});
            terminate();
        } else {
            ++st.packets_dropped;
        }
        return;
    }
    if (h.type != wire::PacketType::one_rtt && h.version != kProtocolVersion) {
        ++st.packets_dropped;
        return;
    }
    bool cid_ok = h.dcid == local_cid || (!client && h.type == wire::PacketType::initial && h.dcid == original_dcid);
    // Clients send Initial packets, servers Handshake packets (RFC 9000 §17.2).
    bool type_ok = h.type == wire::PacketType::one_rtt ||
                   (client ? h.type == wire::PacketType::handshake : h.type == wire::PacketType::initial);
    if (!cid_ok || !type_ok) {
        ++st.packets_dropped;
        return;
    }
    if (state == ConnectionState::closing) {
        // RFC 9000 §10.2.1: answer with the close again, not with data.
        if (!send_version_negotiation) close_frame_pending = true;
        return;
    }

    // Decode every frame before acting on any, so that a malformed packet is
    // rejected whole.
    std::vector<wire::Frame>& frames = rx_frames;
    frames.clear();
    wire::Reader r(pkt.payload);
    bool ack_eliciting = false;
    while (!r.empty()) {
        wire::Frame f;
        if (!wire::decode_frame(r, f, err)) {
            close_with_error(CloseCode::frame_encoding_error, err.what, now);
            return;
        }
        if (!frame_allowed(f, h.type)) {
            close_with_error(CloseCode::protocol_violation,
                             fmt::format("{} frame not allowed in a {} packet", frame_name(f),
                                         h.type == wire::PacketType::one_rtt ? "1-RTT" : "handshake"),
                             now);
            return;
        }
        ack_eliciting |= wire::is_ack_eliciting(f);
        frames.push_back(std::move(f));
    }
    if (frames.empty()) {
        close_with_error(CloseCode::protocol_violation, "packet without frames", now);
        return;
    }
    if (!acks.on_packet_received(h.packet_number, ack_eliciting, now)) {
        ++st.packets_dropped;  // duplicate
        return;
    }
    ++st.packets_received;
    st.bytes_received += datagram.size();
    if (obs) {
        trace_frames.clear();
        for (const auto& f : frames) trace_frames.push_back(trace_frame(f));
        obs->on_packet_received({now, trace_type(h.type), h.packet_number, datagram.size(), trace_frames});
    }
    reset_idle_timer(now);
    sent_eliciting_since_receive = false;

    if (client && h.type == wire::PacketType::handshake) peer_cid = h.scid;
    // A server learns that the client has its hello when it sees a 1-RTT packet.
    if (!client && have_peer_params && h.type == wire::PacketType::one_rtt) set_established(now);
    for (const auto& f : frames) {
        if (!process_frame(f, now)) return;  // connection closed
    }
}

bool Connection::Impl::process_frame(const wire::Frame& frame, Instant now) {
    return std::visit(
        [&](const auto& f) -> bool {
            using T = std::decay_t<decltype(f)>;
            if constexpr (std::is_same_v<T, wire::PaddingFrame> || std::is_same_v<T, wire::PingFrame>) {
                return true;
            } else if constexpr (std::is_same_v<T, wire::AckFrame>) {
                on_ack_frame(f, now);
            } else if constexpr (std::is_same_v<T, wire::CryptoFrame>) {
                if (f.offset != 0) {
                    close_with_error(CloseCode::protocol_violation, "CRYPTO frame with non-zero offset", now);
                } else if (!have_peer_params) {
                    on_peer_params(f.data, now);
                }
            } else if constexpr (std::is_same_v<T, wire::StreamFrame>) {
                if (!on_stream_frame(f, now)) return false;
            } else if constexpr (std::is_same_v<T, wire::MaxDataFrame>) {
                if (conn_credit.raise(f.maximum)) {
                    for (auto& [id, s] : streams) {
                        if (s.writable_wanted) events.push_back(event::StreamWritable{id});
                        s.writable_wanted = false;
                    }
                }
            } else if constexpr (std::is_same_v<T, wire::MaxStreamDataFrame>) {
                bool closed_ok = false;
                StreamState* s = stream_for_peer_frame(f.stream_id, closed_ok, now);
                if (!s) return closed_ok;
                if (s->credit.raise(f.maximum) && s->writable_wanted) {
                    s->writable_wanted = false;
                    events.push_back(event::StreamWritable{f.stream_id});
                }
            } else if constexpr (std::is_same_v<T, wire::MaxStreamsFrame>) {
                peer_max_streams = std::max(peer_max_streams, f.maximum);
            } else if constexpr (std::is_same_v<T, wire::DataBlockedFrame> ||
                                 std::is_same_v<T, wire::StreamDataBlockedFrame>) {
                return true;  // informational: our windows slide as the application reads
            } else if constexpr (std::is_same_v<T, wire::ConnectionCloseFrame>) {
                enter_draining(f, now);
                return false;
            } else if constexpr (std::is_same_v<T, wire::HandshakeDoneFrame>) {
                if (!client) {
                    close_with_error(CloseCode::protocol_violation, "HANDSHAKE_DONE sent by a client", now);
                } else {
                    handshake_confirmed = true;
                }
            }
            return state == ConnectionState::handshaking || state == ConnectionState::established;
        },
        frame);
}

void Connection::Impl::on_peer_params(std::span<const std::uint8_t> data, Instant now) {
    wire::Error err;
    if (!wire::decode_transport_params(data, peer_params, err)) {
        close_with_error(CloseCode::transport_parameter_error, err.what, now);
        return;
    }
    have_peer_params = true;
    loss.set_max_ack_delay(std::chrono::milliseconds(peer_params.max_ack_delay_ms));
    conn_credit.raise(peer_params.initial_max_data);
    peer_max_streams = peer_params.initial_max_streams;
    if (client) {
        crypto_pending = false;  // the server's hello proves ours arrived
        set_established(now);
    } else {
        crypto_pending = true;  // answer with our hello
    }
}

void Connection::Impl::set_established(Instant now) {
    if (state != ConnectionState::handshaking) return;
    state = ConnectionState::established;
    handshake_deadline = kNever;
    std::size_t negotiated = std::min<std::size_t>(cfg.max_datagram_size, peer_params.max_datagram_size);
    if (negotiated != mds) {
        mds = negotiated;
        // The controller's windows are in units of the datagram size.
        make_controller(mds, now);
        cc_state_since = now;
    }
    if (!client) {
        // RFC 9001 §4.1.2: the server's handshake is confirmed on completion.
        handshake_confirmed = true;
        handshake_done_pending = true;
    }
    spdlog::debug("ndm: {} established, datagram size {}", client ? "client" : "server", mds);
    events.push_back(event::Established{});
}

StreamState* Connection::Impl::stream_for_peer_frame(StreamId id, bool& closed_ok, Instant now) {
    closed_ok = false;
    if (auto it = streams.find(id); it != streams.end()) return &it->second;
    if (!is_bidi_stream(id)) {
        close_with_error(CloseCode::stream_state_error, fmt::format("unidirectional stream {} not supported", id), now);
        return nullptr;
    }
    std::uint64_t index = id >> 2;
    bool peer_initiated = is_client_stream(id) != client;
    if (!peer_initiated) {
        if (index < next_local_index) {
            closed_ok = true;  // a stream of ours that already finished
        } else {
            close_with_error(CloseCode::stream_state_error, fmt::format("stream {} was never opened", id), now);
        }
        return nullptr;
    }
    if (index < peer_next_index) {
        closed_ok = true;  // already finished and forgotten: a late duplicate
        return nullptr;
    }
    if (index >= local_max_streams) {
        close_with_error(CloseCode::stream_limit_error,
                         fmt::format("stream {} exceeds the limit of {} streams", id, local_max_streams), now);
        return nullptr;
    }
    // Opening stream N implicitly opens the lower ones (RFC 9000 §3.2).
    for (std::uint64_t i = peer_next_index; i <= index; ++i) {
        StreamId sid = (i << 2) | (client ? 1u : 0u);
        add_stream(sid);
        events.push_back(event::StreamOpened{sid});
    }
    peer_next_index = index + 1;
    return &streams.at(id);
}

bool Connection::Impl::on_stream_frame(const wire::StreamFrame& f, Instant now) {
    bool closed_ok = false;
    StreamState* s = stream_for_peer_frame(f.stream_id, closed_ok, now);
    if (!s) return closed_ok;
    std::uint64_t end = f.offset + f.data.size();
    std::uint64_t prev_high = s->recv.highest_received();
    if (!s->window.on_received(end)) {
        close_with_error(CloseCode::flow_control_error,
                         fmt::format("stream {} data to offset {} exceeds its limit {}", f.stream_id, end,
                                     s->window.limit()),
                         now);
        return false;
    }
    if (end > prev_high) {
        std::uint64_t total = conn_received_total + (end - prev_high);
        if (!conn_window.on_received(total)) {
            close_with_error(CloseCode::flow_control_error,
                             fmt::format("connection data {} exceeds its limit {}", total, conn_window.limit()), now);
            return false;
        }
    }
    auto before = s->recv.readable();
    auto res = s->recv.on_frame(f.offset, f.data, f.fin);
    if (res == RecvStream::Result::final_size_error) {
        close_with_error(CloseCode::final_size_error,
                         fmt::format("stream {} final size changed or exceeded", f.stream_id), now);
        return false;
    }
    if (end > prev_high) conn_received_total += end - prev_high;
    // Holes cost memory and time per insertion: a peer sending 1-byte frames
    // at every other offset made millions. Real losses leave at most one hole
    // per lost packet in the window, far fewer than one per KiB.
    if (const std::size_t cap = std::max<std::uint64_t>(kMinRecvRangeCap, cfg.initial_max_stream_data / 1024);
        s->recv.range_count() > cap) {
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("stream {} too fragmented: more than {} out-of-order ranges", f.stream_id, cap), now);
        return false;
    }
    if (res == RecvStream::Result::ok) {
        if (s->recv.readable() > before || s->recv.fin_pending()) push_readable(f.stream_id, *s);
    }
    return true;
}

void Connection::Impl::push_readable(StreamId id, StreamState& s) {
    if (s.readable_notified) return;
    s.readable_notified = true;
    events.push_back(event::StreamReadable{id});
}

void Connection::Impl::on_ack_frame(const wire::AckFrame& ack, Instant now) {
    AckOutcome& out = ack_out;
    loss.on_ack_received(ack, now, handshake_confirmed, out);
    if (out.invalid) {
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("ACK of packet {} which was never sent", ack.largest()), now);
        return;
    }
    if (!peer_acked_any || ack.largest() > largest_acked_by_peer) largest_acked_by_peer = ack.largest();
    peer_acked_any = true;

    // The undo of an earlier reduction comes before this ACK's own losses,
    // and losses before acknowledgements (RFC 9002 A.7).
    if (out.spurious_congestion) cc->on_spurious_congestion(cc::SpuriousEvent{now});
    if (!out.lost.empty()) on_lost_packets(out.lost, out.persistent_congestion, now);
    if (state != ConnectionState::handshaking && state != ConnectionState::established) return;

    std::uint64_t acked_bytes = 0;
    std::uint64_t acked_packets = 0;
    auto release = [&](const SentPacket& p) {
        for (const auto& sf : p.frames) {
            if (auto* s = std::get_if<sent::Stream>(&sf)) {
                if (auto it = streams.find(s->id); it != streams.end()) {
                    st.stream_bytes_acked += it->second.send.on_acked(s->offset, s->length, s->fin);
                    if (it->second.writable_wanted && it->second.send.capacity() > 0) {
                        it->second.writable_wanted = false;
                        events.push_back(event::StreamWritable{s->id});
                    }
                    maybe_reap_stream(s->id);
                }
            } else if (auto* a = std::get_if<sent::Ack>(&sf)) {
                acks.on_ack_acknowledged(a->largest);
            } else if (std::holds_alternative<sent::Crypto>(sf)) {
                if (!client && have_peer_params) set_established(now);
            }
        }
    };
    for (const auto& p : out.acked) {
        release(p);
        if (p.in_flight) {
            acked_bytes += p.bytes;
            ++acked_packets;
        }
    }
    for (const auto& p : out.late_acked) {
        ++st.spurious_losses;
        release(p);
    }
    st.bytes_acked += acked_bytes;
    if (acked_packets > 0) {
        cc::AckEvent ev;
        ev.now = now;
        ev.bytes_acked = acked_bytes;
        ev.packets_acked = acked_packets;
        ev.has_rtt_sample = out.rtt_sample;
        const auto& rtt = loss.rtt();
        ev.latest_rtt = rtt.latest();
        ev.smoothed_rtt = rtt.smoothed();
        ev.rttvar = rtt.rttvar();
        ev.min_rtt = rtt.min();
        ev.prior_bytes_in_flight = out.prior_bytes_in_flight;
        ev.bytes_in_flight = loss.bytes_in_flight();
        ev.largest_acked_sent_time = out.largest_acked_time_sent;
        cwnd_usage.on_ack(loss.largest_acked());
        ev.app_limited = !cwnd_usage.cwnd_limited(cc->cwnd(), cc->ssthresh());
        cc->on_ack(ev);
    }
    track_cc_state(now);
    update_pacer();
    trace_metrics(now);
}

void Connection::Impl::on_lost_packets(std::vector<SentPacket>& lost, bool persistent, Instant now) {
    std::uint64_t lost_bytes = 0;
    std::uint64_t lost_packets = 0;
    Instant largest_sent{};
    for (auto& p : lost) {
        ++st.packets_lost;
        if (obs) obs->on_packet_lost({now, p.pn, p.bytes});
        if (p.in_flight) {
            lost_bytes += p.bytes;
            ++lost_packets;
            largest_sent = std::max(largest_sent, p.time_sent);
        }
        // RFC 9000 §13.3: retransmit information, not packets.
        for (const auto& sf : p.frames) {
            std::visit(
                [&](const auto& f) {
                    using T = std::decay_t<decltype(f)>;
                    if constexpr (std::is_same_v<T, sent::Stream>) {
                        if (auto it = streams.find(f.id); it != streams.end()) it->second.send.on_lost(f.offset, f.length, f.fin);
                    } else if constexpr (std::is_same_v<T, sent::Crypto>) {
                        if (state == ConnectionState::handshaking) crypto_pending = true;
                    } else if constexpr (std::is_same_v<T, sent::MaxData>) {
                        if (conn_window.limit() == f.maximum) max_data_pending = true;
                    } else if constexpr (std::is_same_v<T, sent::MaxStreamData>) {
                        if (auto it = streams.find(f.id); it != streams.end() && it->second.window.limit() == f.maximum)
                            it->second.max_stream_data_pending = true;
                    } else if constexpr (std::is_same_v<T, sent::MaxStreams>) {
                        if (local_max_streams == f.maximum) max_streams_pending = true;
                    } else if constexpr (std::is_same_v<T, sent::DataBlocked>) {
                        if (data_blocked_sent_at == f.limit) data_blocked_sent_at = UINT64_MAX;
                    } else if constexpr (std::is_same_v<T, sent::StreamDataBlocked>) {
                        if (auto it = streams.find(f.id); it != streams.end() && it->second.blocked_sent_at == f.limit)
                            it->second.blocked_sent_at = UINT64_MAX;
                    } else if constexpr (std::is_same_v<T, sent::HandshakeDone>) {
                        handshake_done_pending = true;
                    }
                },
                sf);
        }
    }
    if (lost_packets > 0) {
        ++st.congestion_events;
        if (persistent) ++st.persistent_congestions;
        cc::CongestionEvent ev;
        ev.now = now;
        ev.bytes_lost = lost_bytes;
        ev.packets_lost = lost_packets;
        ev.largest_lost_sent_time = largest_sent;
        ev.bytes_in_flight = loss.bytes_in_flight();
        ev.persistent = persistent;
        cc->on_congestion_event(ev);
        track_cc_state(now);
        update_pacer();
    }
    trace_metrics(now);
}

void Connection::Impl::maybe_reap_stream(StreamId id) {
    auto it = streams.find(id);
    if (it == streams.end()) return;
    const auto& s = it->second;
    if (!s.send.all_acked() || !s.recv.finished()) return;
    bool peer_initiated = is_client_stream(id) != client;
    streams.erase(it);
    if (peer_initiated) {
        // Let the peer open one more in its place (RFC 9000 §4.6).
        ++local_max_streams;
        max_streams_pending = true;
    }
}

// ============================================================================
// Closing

void Connection::Impl::close_with_error(CloseCode code, std::string reason, Instant now) {
    spdlog::debug("ndm: closing with error {:#x}: {}", static_cast<std::uint64_t>(code), reason);
    start_close(static_cast<std::uint64_t>(code), std::move(reason), false, now);
}

void Connection::Impl::start_close(std::uint64_t code, std::string reason, bool application, Instant now) {
    if (state != ConnectionState::handshaking && state != ConnectionState::established) return;
    if (reason.size() > wire::kMaxReasonLength) reason.resize(wire::kMaxReasonLength);
    close = {code, std::move(reason), false, application};
    state = ConnectionState::closing;
    close_frame_pending = true;
    close_deadline = now + three_pto();  // RFC 9000 §10.2
    probes_pending = 0;
    events.push_back(event::Closed{close});
}

void Connection::Impl::enter_draining(const wire::ConnectionCloseFrame& f, Instant now) {
    close = {f.error_code, std::string(f.reason), true, f.application};
    spdlog::debug("ndm: peer closed: code {:#x} {:?}", f.error_code, f.reason);  // escaped: the peer's bytes
    state = ConnectionState::draining;
    close_deadline = now + three_pto();
    probes_pending = 0;
    events.push_back(event::Closed{close});
}

void Connection::Impl::terminate() {
    state = ConnectionState::closed;
    loss.discard_all();
    close_deadline = idle_deadline = handshake_deadline = kNever;
    probes_pending = 0;
}

// ============================================================================
// Sending

wire::PacketType Connection::Impl::send_packet_type() const {
    if (state == ConnectionState::established) return wire::PacketType::one_rtt;
    if (state == ConnectionState::closing && have_peer_params && (client || handshake_confirmed))
        return wire::PacketType::one_rtt;
    return client ? wire::PacketType::initial : wire::PacketType::handshake;
}

std::uint64_t Connection::Impl::new_data_limit(const StreamState& s) const {
    return std::min(s.credit.limit(), s.send.sent_end() + conn_credit.available());
}

bool Connection::Impl::stream_data_pending() const {
    if (state != ConnectionState::established) return false;
    for (const auto& [id, s] : streams) {
        if (s.send.has_pending(new_data_limit(s))) return true;
    }
    return false;
}

// New stream data flow control lets go now, counted up to `enough`.
std::uint64_t Connection::Impl::sendable_new_data(std::uint64_t enough) const {
    const std::uint64_t conn = conn_credit.available();
    std::uint64_t total = 0;
    for (const auto& [id, s] : streams) {
        const std::uint64_t end = std::min(s.send.written(), s.credit.limit());
        if (end > s.send.sent_end()) total += end - s.send.sent_end();
        if (total >= enough || total >= conn) break;
    }
    return std::min(total, conn);
}

// After an in-flight packet was counted (and paced): tells cwnd_usage how
// much of the window is used, and returns whether the window is not what
// limits the sender now (PacketSent::app_limited).
bool Connection::Impl::note_cwnd_usage(std::uint64_t pn, std::uint64_t in_flight, Instant now) {
    CwndUsage::Send s;
    s.pn = pn;
    s.bytes_in_flight = in_flight;
    s.cwnd = cc->cwnd();
    s.paced_out = cfg.pacing && !pacer.can_send(now);
    if (s.paced_out && in_flight < s.cwnd) s.sendable = sendable_new_data(s.cwnd - in_flight);
    cwnd_usage.on_packet_sent(s);
    return !cwnd_usage.cwnd_limited(s.cwnd, cc->ssthresh());
}

bool Connection::Impl::has_eliciting_data() const {
    if (crypto_pending) return true;
    if (state != ConnectionState::established) return false;
    if (handshake_done_pending || max_data_pending || max_streams_pending) return true;
    for (const auto& [id, s] : streams) {
        if (s.max_stream_data_pending) return true;
    }
    return stream_data_pending();
}

bool Connection::Impl::can_send_eliciting(Instant now) const {
    if (probes_pending > 0) return true;
    if (loss.bytes_in_flight() >= cc->cwnd()) return false;
    return !cfg.pacing || pacer.next_send_time(now) <= now;
}

void Connection::Impl::update_pacer() {
    if (!cfg.pacing) return;
    double rate = 0;
    if (auto r = cc->pacing_rate()) {
        rate = *r;
    } else {
        double srtt = to_seconds(loss.rtt().smoothed());
        if (srtt > 0) rate = kPacingGain * static_cast<double>(cc->cwnd()) / srtt;
    }
    pacing_rate = rate;
    pacer.set_rate(rate, mds);
}

std::size_t Connection::Impl::poll_datagram(std::span<std::uint8_t> out, Instant now) {
    if (state == ConnectionState::closed || state == ConnectionState::draining) return 0;
    if (out.size() < mds) throw std::invalid_argument("poll_datagram: buffer smaller than the datagram size");

    if (send_version_negotiation) {
        send_version_negotiation = false;
        const std::uint32_t versions[] = {kProtocolVersion};
        std::size_t n = wire::write_version_negotiation(out, peer_cid, original_dcid, versions);
        terminate();
        st.bytes_sent += n;
        ++st.packets_sent;
        return n;
    }

    bool closing = state == ConnectionState::closing;
    if (closing && !close_frame_pending) return 0;
    bool ack_due = !closing && acks.ack_pending() && acks.ack_deadline() <= now;
    bool send_eliciting = !closing && has_eliciting_data() && can_send_eliciting(now);
    bool probe = !closing && probes_pending > 0;
    if (!closing && !ack_due && !send_eliciting && !probe) return 0;

    wire::PacketHeader h;
    h.type = send_packet_type();
    h.version = kProtocolVersion;
    h.dcid = peer_cid;
    h.scid = local_cid;
    h.packet_number = loss.next_packet_number();
    // At least 2 bytes: RFC 9000 §A.2's minimum assumes reordering within
    // the window, and jittered paths reorder bursts past 1 byte's 128
    // packets (such a packet would decode wrongly and fail its tag).
    h.pn_length = std::max<std::size_t>(
        2, wire::packet_number_length(h.packet_number, largest_acked_by_peer, peer_acked_any));

    std::size_t limit = (h.type == wire::PacketType::one_rtt ? mds : kInitialPacketSize) - wire::kIntegrityTagSize;
    wire::Writer w(out.first(limit));
    if (!wire::write_header(w, h)) throw std::logic_error("packet header does not fit");
    std::size_t header_end = w.position();

    SentFrames sent_frames;
    bool eliciting = false;
    bool retransmission = false;
    if (obs) trace_frames.clear();
    auto put = [&](const wire::Frame& f) {
        if (!wire::encode_frame(w, f)) return false;
        eliciting |= wire::is_ack_eliciting(f);
        if (obs) trace_frames.push_back(trace_frame(f));
        return true;
    };

    if (closing) {
        wire::ConnectionCloseFrame f;
        f.error_code = close.code;
        f.reason = close.reason;
        f.application = close.application && h.type == wire::PacketType::one_rtt;
        put(f);
        close_frame_pending = false;
    } else {
        if (acks.ack_pending()) {
            auto ack = acks.build_ack(now);
            if (put(ack)) {
                sent_frames.push_back(sent::Ack{ack.largest()});
                acks.on_ack_sent(now);
            }
        }
        if (send_eliciting || probe) {
            if (crypto_pending) {
                if (put(wire::CryptoFrame{0, hello})) {
                    sent_frames.push_back(sent::Crypto{hello.size()});
                    crypto_pending = false;
                }
            }
            if (state == ConnectionState::established) {
                if (handshake_done_pending && put(wire::HandshakeDoneFrame{})) {
                    sent_frames.push_back(sent::HandshakeDone{});
                    handshake_done_pending = false;
                }
                if (max_data_pending || conn_window.should_update()) {
                    std::uint64_t m = conn_window.update();
                    if (put(wire::MaxDataFrame{m})) {
                        sent_frames.push_back(sent::MaxData{m});
                        max_data_pending = false;
                    }
                }
                if (max_streams_pending && put(wire::MaxStreamsFrame{local_max_streams})) {
                    sent_frames.push_back(sent::MaxStreams{local_max_streams});
                    max_streams_pending = false;
                }
                for (auto& [id, s] : streams) {
                    if (!s.max_stream_data_pending) continue;
                    std::uint64_t m = s.window.update();
                    if (!put(wire::MaxStreamDataFrame{id, m})) break;
                    sent_frames.push_back(sent::MaxStreamData{id, m});
                    s.max_stream_data_pending = false;
                }
                // Stream data, round-robin from the cursor so no stream starves.
                if (!streams.empty()) {
                    auto it = streams.lower_bound(rr_cursor);
                    std::size_t visited = 0;
                    const std::size_t n = streams.size();
                    while (visited < n && w.remaining() > 16) {
                        if (it == streams.end()) it = streams.begin();
                        auto& [id, s] = *it;
                        std::uint64_t lim = new_data_limit(s);
                        std::size_t overhead = 1 + wire::varint_size(id) + wire::varint_size(s.send.written()) +
                                               wire::varint_size(w.remaining());
                        if (w.remaining() <= overhead) break;
                        auto chunk = s.send.next_chunk(w.remaining() - overhead, lim);
                        if (!chunk) {
                            // Tell the peer when flow control, not the application, holds data back.
                            if (s.send.blocked_at(lim)) {
                                if (lim == s.credit.limit() && s.blocked_sent_at != lim &&
                                    put(wire::StreamDataBlockedFrame{id, lim})) {
                                    sent_frames.push_back(sent::StreamDataBlocked{id, lim});
                                    s.blocked_sent_at = lim;
                                } else if (conn_credit.available() == 0 && data_blocked_sent_at != conn_credit.limit() &&
                                           put(wire::DataBlockedFrame{conn_credit.limit()})) {
                                    sent_frames.push_back(sent::DataBlocked{conn_credit.limit()});
                                    data_blocked_sent_at = conn_credit.limit();
                                }
                            }
                            ++it;
                            ++visited;
                            continue;
                        }
                        std::uint64_t prev_end = s.send.sent_end();
                        if (!put(wire::StreamFrame{id, chunk->offset, chunk->data, chunk->fin})) break;
                        s.send.on_sent(*chunk);
                        // The next packets' bytes were written long ago (a bulk send buffer
                        // is megabytes deep): start loading them while this one is finished.
                        if (!chunk->retransmission) s.send.prefetch(s.send.sent_end() + 2 * chunk->data.size(), chunk->data.size());
                        std::uint64_t fresh = s.send.sent_end() - prev_end;
                        conn_credit.consume(fresh);
                        st.stream_bytes_sent += fresh;
                        if (chunk->retransmission) {
                            st.stream_bytes_retransmitted += chunk->data.size();
                            retransmission = true;
                        }
                        sent_frames.push_back(sent::Stream{id, chunk->offset, chunk->data.size(), chunk->fin});
                        // Stay on this stream while it fills the packet; move on once it has nothing.
                        if (!s.send.has_pending(new_data_limit(s))) {
                            ++it;
                            ++visited;
                        }
                    }
                    rr_cursor = it == streams.end() ? 0 : it->first;
                }
            }
            if (probe && !eliciting && put(wire::PingFrame{})) sent_frames.push_back(sent::Ping{});
        }
    }

    if (w.position() == header_end) return 0;  // nothing fit (cannot happen with >= 1200-byte packets)
    // Client hellos are padded so that the path is known to carry 1200-byte datagrams.
    bool padded = false;
    if (h.type == wire::PacketType::initial && !closing) {
        std::size_t pad = w.remaining();
        if (pad > 0) {
            put(wire::PaddingFrame{pad});
            padded = true;
        }
    }
    std::size_t len = w.position() + wire::kIntegrityTagSize;
    wire::seal(out.first(len), h);

    SentPacket p;
    p.pn = h.packet_number;
    p.time_sent = now;
    p.bytes = static_cast<std::uint32_t>(len);
    p.ack_eliciting = eliciting;
    p.in_flight = eliciting || padded;  // RFC 9002 §2
    p.frames = std::move(sent_frames);
    if (p.in_flight) {
        if (loss.bytes_in_flight() == 0 && last_eliciting_sent != Instant{} && now - last_eliciting_sent > pto_period()) {
            cc->on_idle_restart(now);
        }
        const std::uint64_t in_flight = loss.bytes_in_flight() + len;
        if (cfg.pacing) pacer.on_sent(now, len);
        const bool app_limited = note_cwnd_usage(p.pn, in_flight, now);
        cc->on_packet_sent(cc::PacketSent{now, p.pn, len, in_flight, app_limited});
    }
    if (eliciting) {
        last_eliciting_sent = now;
        // RFC 9000 §10.1: the first ack-eliciting packet after a receive restarts the idle timer.
        if (!sent_eliciting_since_receive) reset_idle_timer(now);
        sent_eliciting_since_receive = true;
        if (probes_pending > 0) --probes_pending;
    }
    if (retransmission) ++st.packets_retransmitted;
    loss.on_packet_sent(std::move(p));
    ++st.packets_sent;
    st.bytes_sent += len;
    if (obs) {
        obs->on_packet_sent({now, trace_type(h.type), h.packet_number, len, trace_frames});
        trace_metrics(now);
    }
    return len;
}

// ============================================================================
// Timers

Duration Connection::Impl::effective_idle_timeout() const {
    Duration local = cfg.idle_timeout;
    // RFC 9000 §10.1: the smaller of both sides' values. The peer's may be any
    // varint (up to 2^62-1 ms, past what Duration holds in nanoseconds), so it
    // is compared in milliseconds and converted only when it is the smaller.
    const std::uint64_t peer_ms = have_peer_params ? peer_params.max_idle_timeout_ms : 0;
    const auto local_ms = std::chrono::ceil<std::chrono::milliseconds>(local).count();
    if (peer_ms > 0 && local_ms > 0 && peer_ms < static_cast<std::uint64_t>(local_ms)) {
        local = std::min(local, Duration(std::chrono::milliseconds(static_cast<std::int64_t>(peer_ms))));
    }
    // RFC 9000 §10.1: never shorter than three PTOs.
    return std::max(local, three_pto());
}

void Connection::Impl::reset_idle_timer(Instant now) { idle_deadline = now + effective_idle_timeout(); }

Instant Connection::Impl::next_timeout() const {
    if (state == ConnectionState::closed) return kNever;
    if (state == ConnectionState::closing || state == ConnectionState::draining) {
        return close_frame_pending || send_version_negotiation ? Instant::min() : close_deadline;
    }
    Instant t = std::min({loss.timer(), idle_deadline, handshake_deadline});
    if (acks.ack_pending()) t = std::min(t, acks.ack_deadline());
    if (probes_pending > 0) return Instant::min();
    if (has_eliciting_data() && loss.bytes_in_flight() < cc->cwnd()) {
        t = std::min(t, cfg.pacing ? pacer.next_send_time(last_now) : last_now);
    }
    return t;
}

void Connection::Impl::on_timeout(Instant now) {
    if (state == ConnectionState::closed) return;
    if (state == ConnectionState::closing || state == ConnectionState::draining) {
        if (now >= close_deadline) terminate();
        return;
    }
    if (now >= idle_deadline) {
        close = {static_cast<std::uint64_t>(CloseCode::idle_timeout),
                 fmt::format("idle timeout: nothing heard from the peer for {} ms",
                             std::chrono::duration_cast<std::chrono::milliseconds>(effective_idle_timeout()).count()),
                 false, false};
        events.push_back(event::Closed{close});
        terminate();  // RFC 9000 §10.1: silently
        return;
    }
    if (now >= handshake_deadline) {
        close = {static_cast<std::uint64_t>(CloseCode::handshake_timeout),
                 fmt::format("handshake timeout: no answer from the peer within {} ms",
                             std::chrono::duration_cast<std::chrono::milliseconds>(cfg.handshake_timeout).count()),
                 false, false};
        events.push_back(event::Closed{close});
        terminate();
        return;
    }
    if (loss.timer() <= now) {
        auto out = loss.on_timeout(now);
        if (!out.lost.empty()) on_lost_packets(out.lost, out.persistent_congestion, now);
        if (out.pto) {
            ++st.pto_count;
            probes_pending = out.probes;
            // During the handshake the best probe is the hello itself.
            if (state == ConnectionState::handshaking && (client || have_peer_params)) crypto_pending = true;
            spdlog::debug("ndm: PTO #{} ({} in flight)", loss.pto_count(), loss.bytes_in_flight());
        }
        trace_metrics(now);
    }
}

void Connection::Impl::track_cc_state(Instant now) {
    std::string_view current = cc->state();
    if (current == cc_state) return;
    state_bucket(cc_state) += now - cc_state_since;
    const std::string old = obs ? cc_state : std::string();
    cc_state = std::string(current);
    cc_state_since = now;
    trace_state(old, now);
}

// ============================================================================
// Public API

void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now) {
    impl_->last_now = now;
    impl_->on_datagram(datagram, now);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now) {
    impl_->last_now = now;
    return impl_->poll_datagram(out, now);
}
Instant Connection::next_timeout() const { return impl_->next_timeout(); }
void Connection::on_timeout(Instant now) {
    impl_->last_now = now;
    impl_->on_timeout(now);
}

std::optional<Event> Connection::poll_event() {
    if (impl_->events.empty()) return std::nullopt;
    Event e = std::move(impl_->events.front());
    impl_->events.pop_front();
    return e;
}

std::optional<StreamId> Connection::open_stream() {
    auto& d = *impl_;
    if (d.state != ConnectionState::established) return std::nullopt;
    if (d.next_local_index >= d.peer_max_streams) return std::nullopt;
    StreamId id = (d.next_local_index++ << 2) | (d.client ? 0u : 1u);
    d.add_stream(id);
    return id;
}

namespace {
StreamState& require_stream(std::map<StreamId, StreamState>& streams, StreamId id) {
    auto it = streams.find(id);
    if (it == streams.end()) throw std::invalid_argument(fmt::format("stream {} is not open", id));
    return it->second;
}

// The stream the application may write to now, or nullptr before the
// handshake completes or after the connection ends.
StreamState* writable_stream(Connection::Impl& d, StreamId id) {
    if (d.state != ConnectionState::established) return nullptr;
    auto& s = require_stream(d.streams, id);
    if (s.send.finished()) throw std::logic_error(fmt::format("stream {}: write after finish", id));
    return &s;
}
}  // namespace

std::size_t Connection::write(StreamId id, std::span<const std::uint8_t> data, bool fin) {
    StreamState* s = writable_stream(*impl_, id);
    if (!s) return 0;
    std::size_t n = s->send.write(data);
    if (n < data.size()) s->writable_wanted = true;
    if (fin && n == data.size()) s->send.finish();
    return n;
}

std::span<std::uint8_t> Connection::prepare(StreamId id, std::size_t max) {
    StreamState* s = writable_stream(*impl_, id);
    if (!s) return {};
    // Short for want of buffer space (not just where the ring wraps): the
    // application waits for StreamWritable, as after a partial write().
    if (s->send.capacity() < max) s->writable_wanted = true;
    return s->send.prepare(max);
}

void Connection::commit(StreamId id, std::size_t n, bool fin) {
    StreamState* s = writable_stream(*impl_, id);
    if (!s) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: commit without a prepared buffer", id));
        return;
    }
    s->send.commit(n);
    if (fin) s->send.finish();
}

void Connection::finish(StreamId id) {
    auto& d = *impl_;
    if (d.state != ConnectionState::established) return;
    require_stream(d.streams, id).send.finish();
}

std::size_t Connection::read(StreamId id, std::span<std::uint8_t> out) {
    auto& d = *impl_;
    auto it = d.streams.find(id);
    if (it == d.streams.end()) return 0;
    it->second.readable_notified = false;
    const std::size_t n = it->second.recv.read(out);
    d.on_consumed(id, it->second, n);
    return n;
}

std::span<const std::uint8_t> Connection::peek(StreamId id) {
    auto it = impl_->streams.find(id);
    if (it == impl_->streams.end()) return {};
    // Looked at, maybe not taken: more data must raise StreamReadable again.
    it->second.readable_notified = false;
    return it->second.recv.peek();
}

void Connection::consume(StreamId id, std::size_t n) {
    auto& d = *impl_;
    auto it = d.streams.find(id);
    if (it == d.streams.end()) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: consume of bytes never peeked", id));
        return;
    }
    it->second.readable_notified = false;
    it->second.recv.consume(n);
    d.on_consumed(id, it->second, n);
}

// Bytes the application took: flow-control credit back to the peer, and the
// stream's end once its FIN has been read. May reap the stream (s dangles then).
void Connection::Impl::on_consumed(StreamId id, StreamState& s, std::size_t n) {
    if (n > 0) {
        st.stream_bytes_delivered += n;
        s.window.on_consumed(n);
        conn_window.on_consumed(n);
        if (s.window.should_update() && !s.recv.finished()) s.max_stream_data_pending = true;
        if (conn_window.should_update()) max_data_pending = true;
    }
    if (s.recv.finished()) {
        s.recv.mark_fin_reported();
        maybe_reap_stream(id);
    }
}

bool Connection::stream_finished(StreamId id) const {
    auto it = impl_->streams.find(id);
    if (it == impl_->streams.end()) {
        // Reaped streams were finished both ways.
        std::uint64_t index = id >> 2;
        bool ours = is_client_stream(id) == impl_->client;
        return index < (ours ? impl_->next_local_index : impl_->peer_next_index);
    }
    return it->second.recv.finished();
}

std::size_t Connection::stream_send_capacity(StreamId id) const {
    auto it = impl_->streams.find(id);
    if (it == impl_->streams.end() || impl_->state != ConnectionState::established) return 0;
    return it->second.send.capacity();
}

void Connection::set_congestion_control(const std::string& name, const std::string& options) {
    auto& d = *impl_;
    cc::Params p;
    p.max_datagram_size = d.mds;
    p.now = d.last_now;
    auto fresh = cc::make(name, p, options);  // throws before anything changes
    d.cfg.cc = name;
    d.cfg.cc_options = options;
    if (d.last_now > d.cc_state_since) d.state_bucket(d.cc_state) += d.last_now - d.cc_state_since;
    d.cc = std::move(fresh);
    const std::string old = d.cc_state;
    d.cc_state = std::string(d.cc->state());
    d.cc_state_since = d.last_now;
    d.trace_state(old, d.last_now);
    d.update_pacer();
    d.trace_metrics(d.last_now);
}

void Connection::close(std::uint64_t code, std::string reason, Instant now, bool application) {
    impl_->start_close(code, std::move(reason), application, now);
}

ConnectionState Connection::state() const { return impl_->state; }
const CloseInfo& Connection::close_info() const { return impl_->close; }
bool Connection::is_client() const { return impl_->client; }
std::size_t Connection::max_datagram_size() const { return impl_->mds; }
std::span<const std::uint8_t> Connection::peer_application_params() const {
    return impl_->peer_params.application_params;
}
std::span<const std::uint8_t> Connection::local_cid() const { return impl_->local_cid.span(); }

ConnectionStats Connection::stats(Instant now) const {
    const auto& d = *impl_;
    ConnectionStats s = d.st;
    s.stream_bytes_received = d.conn_received_total;
    s.cwnd = d.cc->cwnd();
    s.ssthresh = d.cc->ssthresh();
    s.bytes_in_flight = d.loss.bytes_in_flight();
    s.pacing_rate = d.pacing_rate;
    const auto& rtt = d.loss.rtt();
    s.smoothed_rtt = rtt.smoothed();
    s.rttvar = rtt.rttvar();
    s.min_rtt = rtt.min();
    s.latest_rtt = rtt.latest();
    s.cc_state = d.cc_state;
    s.time_in_slow_start = d.in_ss;
    s.time_in_congestion_avoidance = d.in_ca;
    s.time_in_recovery = d.in_rec;
    s.time_in_other_states = d.in_other;
    Duration current = now > d.cc_state_since ? now - d.cc_state_since : Duration{0};
    Duration* bucket[] = {&s.time_in_slow_start, &s.time_in_congestion_avoidance, &s.time_in_recovery,
                          &s.time_in_other_states};
    *bucket[state_bucket_index(d.cc_state)] += current;
    return s;
}

}  // namespace ndm
