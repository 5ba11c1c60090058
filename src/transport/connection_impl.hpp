// Connection::Impl, the private state of ndm::Connection, shared by the files
// that implement it, one job each: connection.cpp (the public facade),
// connection_lifecycle.cpp (construction, close, timers),
// connection_receive.cpp (packets and frames in), connection_tls.cpp (the
// TLS handshake, packet keys, the peer's transport parameters),
// connection_recovery.cpp (sent packets, ACKs, ECN and losses into the
// controller's events), connection_send.cpp (packet assembly),
// connection_trace.cpp (tracing, statistics and congestion-state time
// accounting), connection_datagram.cpp (RFC 9221's DATAGRAM frames, through
// DatagramQueue) and, through StreamSet, stream_set.cpp (streams, flow control,
// STREAM frame scheduling).
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ndm/cc.hpp"
#include "ndm/connection.hpp"
#include "transport/ack_frequency.hpp"
#include "transport/ack_tracker.hpp"
#include "crypto/key_phase.hpp"
#include "crypto/packet_protection.hpp"
#include "tls/tls_session.hpp"
#include "transport/crypto_stream.hpp"
#include "transport/cwnd_usage.hpp"
#include "transport/datagram_queue.hpp"
#include "transport/delivery_rate.hpp"
#include "transport/early_packets.hpp"
#include "transport/ecn_validator.hpp"
#include "wire/frame.hpp"
#include "transport/frame_sink.hpp"
#include "transport/local_connection_ids.hpp"
#include "transport/loss_detector.hpp"
#include "transport/pacer.hpp"
#include "transport/paths.hpp"
#include "transport/peer_connection_ids.hpp"
#include "wire/packet.hpp"
#include "wire/packet_codec.hpp"
#include "transport/packet_space.hpp"
#include "transport/pn_skip.hpp"
#include "transport/send_coalescing.hpp"
#include "transport/spin_bit.hpp"
#include "transport/stream_set.hpp"
#include "wire/transport_params.hpp"

namespace ndm {

namespace transport {
// The trace form of a packet type.
trace::PacketType trace_type(wire::PacketType t);

// Where a datagram's packets are opened (connection_receive.cpp): one buffer
// per thread, at least `size` bytes.
std::span<std::uint8_t> open_buffer(std::size_t size);

// The type of a packet number space's packets.
inline wire::PacketType type_of(PacketSpace s) {
    if (s == PacketSpace::initial) return wire::PacketType::initial;
    if (s == PacketSpace::handshake) return wire::PacketType::handshake;
    return wire::PacketType::one_rtt;
}
// RFC 9000 §13.2.1: Initial and Handshake packets are acknowledged at once.
inline AckTracker::Config ack_config(PacketSpace s, const ConnectionConfig& cfg) {
    if (s != PacketSpace::application) return {Duration::zero(), 1, wire::kMaxAckRanges, cfg.limits.ack_ranges_tracked};
    return {cfg.max_ack_delay, 2, cfg.max_ack_ranges, cfg.limits.ack_ranges_tracked};
}
// The ACK Delay exponent of a packet's ACK frames (RFC 9000 §18.2): the
// sender's own in 1-RTT packets, the default in Initial and Handshake ones
// (whose receiver may not have the sender's parameters yet, §19.3).
inline unsigned ack_delay_exponent(wire::PacketType type, const wire::TransportParams* sender_params) {
    if (type != wire::PacketType::one_rtt || !sender_params) return wire::kDefaultAckDelayExponent;
    return static_cast<unsigned>(sender_params->ack_delay_exponent);
}
}  // namespace transport

struct Connection::Impl {
    Impl(const ConnectionConfig& config, bool is_client, Instant now);

    // Connection::connect and accept, with an optional edit of this side's
    // transport parameters before they are encoded: how tests play a peer
    // that states values no ConnectionConfig would (RFC 9000 §18.2's extremes);
    // and of the encoded bytes, for what no encoder writes (duplicates,
    // out-of-range values, server-only parameters from a client).
    using ParamsEdit = std::function<void(wire::TransportParams&)>;
    using ParamsBytesEdit = std::function<void(std::vector<std::uint8_t>&)>;
    static std::unique_ptr<Connection> connect(const ConnectionConfig& config, Instant now, const ParamsEdit& edit,
                                               const ParamsBytesEdit& bytes_edit = nullptr);
    static std::unique_ptr<Connection> accept(const ConnectionConfig& config, std::span<const std::uint8_t> datagram,
                                              Instant now, const ParamsEdit& edit,
                                              const RetryValidation* retry = nullptr, Ecn ecn = Ecn::not_ect,
                                              const ParamsBytesEdit& bytes_edit = nullptr);
    // Tests and the tools' hostile-peer probe play this side's peer or
    // forge this side's packets through these (a nested class may reach impl_).
    static Impl& of(Connection& c) { return *c.impl_; }
    // A packet whose payload is `payload` (encoded frames, or bytes that are
    // not) in `space`, packet number pn, sealed with this side's write keys
    // for its peer's connection ID, and recorded nowhere (loss recovery never
    // hears of it). Its size; 0 when it does not fit or the space has no keys.
    std::size_t seal_payload(std::span<std::uint8_t> out, transport::PacketSpace space, std::uint64_t pn,
                             std::span<const std::uint8_t> payload, std::size_t pad_to = 0);

    // ---- configuration and identity
    ConnectionConfig cfg;
    bool client;
    ConnectionState state = ConnectionState::handshaking;
    std::uint64_t rng;
    wire::ConnectionId local_cid, peer_cid, original_dcid;
    // The Destination Connection ID of the client's Initial packets, from
    // which the Initial keys derive (RFC 9001 §5.2): original_dcid, or after
    // a Retry the Source Connection ID the Retry chose (RFC 9000 §17.2.5.2).
    wire::ConnectionId initial_dcid;
    // RFC 9000 §8.1.2, §17.2.5: a client keeps the token of the one Retry it
    // accepts for every later Initial, and both sides the Retry's Source
    // Connection ID, which the server's retry_source_connection_id states (§7.3).
    std::vector<std::uint8_t> retry_token;
    std::optional<wire::ConnectionId> retry_scid;
    wire::TransportParams local_params, peer_params;
    bool have_peer_params = false;
    std::vector<std::uint8_t> encoded_params;  // local_params as the TLS extension carries them

    // ---- the TLS handshake (RFC 9001 §4): one CRYPTO stream per packet
    // number space; a space sends once this side has its keys
    std::optional<tls::TlsSession> tls;
    std::array<transport::CryptoStream, transport::kPacketSpaces> crypto;
    transport::CryptoStream& crypto_of(transport::PacketSpace s) { return crypto[static_cast<std::size_t>(s)]; }
    const transport::CryptoStream& crypto_of(transport::PacketSpace s) const {
        return crypto[static_cast<std::size_t>(s)];
    }
    // ---- packet protection (RFC 9001 §5): Initial keys from the client's
    // first DCID (§5.2), Handshake and 1-RTT keys from TLS's secrets. A space
    // sends once it has write keys and reads once it has read keys (§4.1.4).
    std::optional<crypto::LevelKeys> initial;
    std::optional<crypto::DirectionKeys> handshake_read, handshake_write;
    std::optional<crypto::OneRttKeys> one_rtt;
    std::optional<tls::SecretEvent> one_rtt_read_secret, one_rtt_write_secret;  // until both are known
    crypto::DirectionKeys* read_keys_of(transport::PacketSpace s);
    crypto::DirectionKeys* write_keys_of(transport::PacketSpace s);
    bool has_write_keys(transport::PacketSpace s) const;
    bool has_read_keys(transport::PacketSpace s) const;
    void install_initial_keys();
    void install_secret(const tls::SecretEvent& e);
    bool tls_input_seen = false;      // a CRYPTO frame reached TLS (accept: a real connection attempt)
    bool handshake_complete = false;  // TLS finished: 1-RTT packets go both ways
    bool handshake_confirmed = false;
    bool handshake_done_pending = false;
    bool new_token_pending = false;  // server: cfg.token_to_issue goes in a NEW_TOKEN frame (RFC 9000 §8.1.3)
    transport::AckFrequencyRequester ack_frequency;  // used when both sides run the extension
    bool immediate_ack_pending = false;              // one found no room in its packet
    bool handshake_discard_due = false;  // server: confirmed while reading a packet (RFC 9001 §4.9.2)
    // RFC 9000 §8.1: until a server has validated the client's address it
    // sends at most three times the bytes it received from it, so a spoofed
    // Initial cannot turn the server into an amplifier. Validated when a
    // packet carries the server's own (unpredictable) connection ID, which
    // only a client that received the server's packets knows (§8.1.1's
    // Handshake-packet rule, for this wire).
    bool address_validated = true;  // a server starts unvalidated (accept)
    std::uint64_t unvalidated_received = 0;
    std::uint64_t unvalidated_sent = 0;
    bool amplification_wait = false;  // the next packet did not fit the budget: wait for the client
    // The IDs the peer issued (peer_cid is the one in use); the limit is the
    // active_connection_id_limit we advertise (ConnectionLimits).
    transport::PeerConnectionIds peer_cids;
    // ---- connection IDs this side issues and the paths (connection_paths.cpp)
    transport::LocalConnectionIds local_cids;
    transport::PathSet paths{PathId{}};
    PathId rx_path{};                          // the path of the datagram being read
    std::span<const std::uint8_t> rx_dcid;     // the Destination Connection ID of the packet being read
    wire::ConnectionId new_local_cid();        // connection_lifecycle.cpp: from the configured random source
    void issue_connection_ids();
    bool accept_path(std::size_t datagram_size);  // false: drop the datagram (an unknown path)
    std::size_t rx_new_path_bytes = 0;            // the datagram's size, on a path not yet recorded
    transport::Path& rx_path_record();            // the record of rx_path, made once a packet of it authenticates
    void on_path_challenge(const wire::PathChallengeFrame& f);
    void on_path_response(const wire::PathResponseFrame& f, Instant now);
    bool on_retire_connection_id(const wire::RetireConnectionIdFrame& f, Instant now);
    void on_new_peer_connection_id(const wire::NewConnectionIdFrame& f, Instant now);
    void after_packet_paths(bool newest, Instant now);
    void on_peer_migrated(Instant now);
    bool start_migration(PathId path, Instant now);
    void on_path_timeout(Instant now);
    void adopt_active_path(const transport::Path& previous, Instant now);
    std::size_t write_path_probe(std::span<std::uint8_t> out, transport::Path& p, Instant now);
    [[nodiscard]] Duration path_validation_timeout() const;
    bool rx_opened = false;  // some packet of the datagram being read was authenticated
    std::size_t mds;

    // ---- recovery and congestion control
    transport::LossDetector loss;
    transport::AckOutcome ack_out;  // reused by every ACK frame (keeps its vectors' storage)
    transport::PacketNumberSkip pn_skip;  // 1-RTT numbers skipped against optimistic ACKs
    transport::SpinBit spin;              // the latency spin bit (RFC 9000 §17.4)
    std::vector<wire::Frame> rx_frames;  // of the packet being read, reused likewise
    // RFC 9000 §12.3: one receive record per packet number space.
    std::array<transport::AckTracker, transport::kPacketSpaces> acks;
    transport::AckTracker& acks_of(transport::PacketSpace s) { return acks[static_cast<std::size_t>(s)]; }
    const transport::AckTracker& acks_of(transport::PacketSpace s) const { return acks[static_cast<std::size_t>(s)]; }
    transport::Pacer pacer;
    transport::SendCoalescing coalescing;  // small writes into full packets (Connection::set_send_coalescing)
    transport::CwndUsage cwnd_usage;  // RFC 9002 §7.8: is the window the limit?
    transport::DeliveryRate delivery;  // rate samples for AckEvent::rate
    transport::EcnValidator ecn;       // RFC 9000 §13.4.2: what to mark, whether the peer's counts hold
    Ecn rx_ecn = Ecn::not_ect;         // the codepoint of the datagram being read
    Ecn tx_ecn = Ecn::not_ect;         // the codepoint of the datagram being built
    wire::EcnCounts ecn_received_discarded;  // what the discarded spaces' trackers had counted
    std::unique_ptr<cc::Controller> cc;
    double pacing_rate = 0;  // bytes per second
    unsigned probes_pending = 0;
    transport::PacketSpace probe_space = transport::PacketSpace::application;  // where they go (RFC 9002 §6.2.4)
    Instant last_eliciting_sent{};
    bool sent_eliciting_since_receive = false;

    // ---- lifecycle
    std::deque<Event> events;
    CloseInfo close;
    bool close_frame_pending = false;
    bool send_version_negotiation = false;
    std::uint32_t offered_version = 0;
    // The connection's QUIC version (RFC 9369): a client's choice, or the
    // version of the client's first Initial at a server.
    crypto::QuicVersion version = crypto::QuicVersion::v1;
    Instant last_now{};  // the latest time the driver told us (next_timeout() has no clock)
    Instant idle_deadline = kNever;
    // Both sides' max_idle_timeout, the smaller, as far as known (set where the
    // peer's arrives): every packet received restarts the idle timer, and the
    // config and transport parameters it comes from are cold by then.
    Duration idle_timeout{0};
    Instant handshake_deadline = kNever;
    Instant close_deadline = kNever;

    // ---- streams and flow control (pushes its events to `events`)
    transport::StreamSet streams;
    // ---- unreliable datagrams, RFC 9221 (connection_datagram.cpp; events to `events`)
    transport::DatagramQueue datagrams;
    [[nodiscard]] std::size_t max_datagram_payload() const;
    // A received DATAGRAM frame: checked against what this side advertised
    // (RFC 9221 §3) and queued; false when the connection closed.
    bool on_datagram_frame(const wire::DatagramFrame& f, Instant now);

    // ---- statistics (connection_trace.cpp)
    ConnectionStats st;
    std::string cc_state;  // the controller's state() as last seen
    cc::StateClass cc_state_class = cc::StateClass::other;
    Instant cc_state_since{};
    std::array<Duration, cc::kStateClasses> state_time{};  // closed periods per class
    // Takes the controller's current state name (and its class) without
    // counting time: the caller settles the period that ends.
    void adopt_cc_state(Instant now);
    // Counts the period in the current state up to now.
    void account_cc_state(Instant now) {
        state_time[static_cast<std::size_t>(cc_state_class)] += now - cc_state_since;
    }
    void track_cc_state(Instant now);
    ConnectionStats stats(Instant now) const;

    // ---- tracing: all of it behind `if (obs)` (connection_trace.cpp)
    std::unique_ptr<trace::ConnectionObserver> obs;
    std::vector<trace::Frame> trace_frames;  // of the packet being built or read
    struct {
        std::uint64_t cwnd = 0, bytes_in_flight = 0, ssthresh = 0;
        Duration srtt{-1}, min_rtt{-1}, latest_rtt{-1}, rttvar{-1};
        double pacing = -1;
    } traced;  // the values the observer last saw
    void attach_observer(const trace::ObserverFactory& factory, Instant now);
    void trace_metrics(Instant now);
    void trace_received(wire::PacketType type, std::uint64_t pn, std::size_t size, Instant now);
    void trace_sent(wire::PacketType type, std::uint64_t pn, std::size_t size, Instant now);
    EcnState traced_ecn_state = EcnState::disabled;  // last reported to the observer
    // Reports a change of the ECN validation state (RFC 9000 §13.4.2).
    void trace_ecn_state(Instant now);

    // ---- construction (connection_lifecycle.cpp)
    void make_controller(std::size_t datagram_size, Instant now);
    void encode_local_params(const ParamsEdit& edit, const ParamsBytesEdit& bytes_edit);

    // ---- 0-RTT (RFC 9001 §4.6) and packets early for their keys (§5.7): early_data.cpp
    std::optional<crypto::DirectionKeys> zero_rtt_keys;  // client: write; server: read
    enum class EarlyData : std::uint8_t { none, attempted, accepted, rejected };
    EarlyData early_data = EarlyData::none;
    wire::TransportParams remembered_params;  // client: the ticket's (RFC 9000 §7.4.1)
    transport::EarlyPackets early_packets{0};  // capped at cfg.limits.early_packets (constructor)
    bool rx_zero_rtt = false;  // the packet being read is a 0-RTT packet
    // A client writes 0-RTT packets from its first flight until it has 1-RTT keys.
    bool sending_zero_rtt() const { return client && zero_rtt_keys.has_value() && !one_rtt.has_value(); }
    // Streams take data: established, or a client's 0-RTT.
    bool can_write() const {
        return state == ConnectionState::established || (state == ConnectionState::handshaking && sending_zero_rtt());
    }
    void start_early_data();
    bool on_early_data_outcome(Instant now);
    // A packet whose keys are not usable yet: held (true) or to be dropped.
    bool hold_early_packet(const wire::quic::PacketView& v);
    void replay_early_packets(Instant now);
    [[nodiscard]] const char* early_data_outcome() const;

    // ---- the handshake (connection_tls.cpp; the keys' functions are above)
    void start_tls();
    void configure_resumption(tls::TlsConfig& c) const;
    void take_tickets();
    void on_crypto_frame(const wire::CryptoFrame& f, transport::PacketSpace space, Instant now);
    void drive_tls(Instant now);
    void on_tls_error(Instant now);
    // Discarded first: it reads no more than the loss detector's first lines.
    bool crypto_pending(transport::PacketSpace s) const {
        return !loss.discarded(s) && has_write_keys(s) && crypto_of(s).has_pending();
    }
    void on_peer_params(std::span<const std::uint8_t> data, Instant now);
    bool check_peer_cids(Instant now);
    bool check_peer_versions(Instant now);
    void set_established(Instant now);
    void discard_space(transport::PacketSpace space);

    // ---- receiving (connection_receive.cpp)
    void on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn, PathId path);
    // One packet of `datagram`, opened into `into` (at the packet's offset);
    // false: read no further packets of it.
    bool on_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> into,
                   const wire::quic::PacketView& view, bool& counted, Instant now);
    bool decode_frames(std::span<const std::uint8_t> payload, wire::PacketType type, bool& ack_eliciting, Instant now);
    bool on_open_error(wire::quic::OpenError err, Instant now);
    bool process_frame(const wire::Frame& f, transport::PacketSpace space, Instant now);
    bool on_stream_result(transport::StreamResult r, Instant now);
    void on_v1_frame(const wire::Frame& f, Instant now);
    // The receipt of the ACK frequency extension's two frames (ack-frequency-14 §4, §5).
    bool on_ack_frequency_frame(const wire::Frame& frame, Instant now);
    void on_version_negotiation(const wire::quic::PacketView& vn);
    void on_retry(const wire::quic::PacketView& retry, Instant now);
    // Sequence 0 of the peer's IDs, which a client learns from the server's first packet.
    void set_initial_peer_cid(const wire::ConnectionId& cid) {
        peer_cids.set_initial(cid);
        peer_cid = peer_cids.current();
    }

    // ---- recovery: sent packets, ACKs, ECN, losses and the controller (connection_recovery.cpp)
    void on_packet_built(std::uint64_t pn, transport::PacketSpace space, std::size_t len, transport::SentFrames frames,
                         bool eliciting, bool padded, bool retransmission, Instant now);
    bool note_cwnd_usage(std::uint64_t pn, std::uint64_t in_flight, Instant now);
    void update_pacer();
    void note_app_limited();
    void on_ack_frame(const wire::AckFrame& ack, transport::PacketSpace space, Instant now);
    void on_ack_ecn(const wire::AckFrame& ack, transport::PacketSpace space, bool largest_is_new, Instant now);
    void release_acked(const transport::SentPacket& p, transport::PacketSpace space, bool late = false);
    void on_acked_bytes(std::uint64_t bytes, std::uint64_t packets, const cc::RateSample& rate, Instant now);
    void on_lost_packets(std::vector<transport::SentPacket>& lost, bool persistent, transport::PacketSpace space,
                         Instant now);

    // ---- closing (connection_lifecycle.cpp)
    void close_with_error(CloseCode code, std::string reason, Instant now);
    void start_close(std::uint64_t code, std::string reason, bool application, Instant now);
    void enter_draining(const wire::ConnectionCloseFrame& f, Instant now);
    void on_stateless_reset(Instant now);
    void terminate();

    // ---- sending (connection_send.cpp)
    std::size_t poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn_out, PathId& path_out);
    bool request_key_update();  // Connection::request_key_update (RFC 9001 §6)
    void use_current_peer_cid();  // peer_cid from peer_cids, the spin bit restarted on a change
    std::size_t write_version_negotiation(std::span<std::uint8_t> out);
    std::size_t pn_length(transport::PacketSpace space) const;
    // Writes one packet of `space` at datagram[pos..]: its frames (the close
    // when closing), padded until the datagram reaches pad_to. Returns its
    // size, 0 when it carried no frame (nothing written) or the keys refused.
    std::size_t write_packet(std::span<std::uint8_t> datagram, std::size_t pos, transport::PacketSpace space,
                             bool closing, std::size_t pad_to, Instant now);
    bool space_wants(transport::PacketSpace s, Instant now) const;
    wire::quic::PacketBuilder builder(std::span<std::uint8_t> datagram, std::size_t pos, transport::PacketSpace space,
                                      std::uint64_t pn, std::size_t pn_len, std::size_t& overhead);
    std::size_t seal(wire::quic::PacketBuilder& b, transport::PacketSpace space, std::size_t payload_len,
                     std::size_t pad_to);
    bool ack_due(transport::PacketSpace space, Instant now) const;
    // The ACK frequency extension: whether to ask the peer for it, and the
    // frames that do (ack-frequency-14 §4, §5).
    [[nodiscard]] bool requests_ack_frequency() const;
    void write_ack_frequency(transport::FrameSink& sink, Instant now);
    void write_immediate_ack(transport::FrameSink& sink, bool stream_data_written, bool probe);
    void write_close_frame(transport::FrameSink& sink, wire::PacketType type);
    void write_ack_frame(transport::FrameSink& sink, transport::PacketSpace space, Instant now);
    bool write_eliciting_frames(transport::FrameSink& sink, transport::PacketSpace space, bool probe, Instant now);
    transport::PacketSpace close_space() const;
    bool can_send_eliciting(Instant now) const;
    bool has_eliciting_data() const;
    bool application_frames_pending(Instant now) const;
    // send_coalescing.hpp: new stream data short of a packet and nothing
    // else waits; whether it still waits at `now`; until when (or kNever).
    bool coalescing_holdable() const;
    bool coalescing_holds(Instant now) const;
    Instant coalescing_deadline() const;

    // ---- timers (connection_lifecycle.cpp)
    Instant next_timeout() const;
    // Bytes the anti-amplification limit still allows (unbounded once validated).
    std::uint64_t amplification_budget() const;
    // Less than the smallest useful packet may be sent (the server must wait).
    bool amplification_blocked() const;
    void on_timeout(Instant now);
    Duration pto_period() const { return loss.rtt().pto_period(loss.max_ack_delay()); }
    Duration three_pto() const { return 3 * pto_period(); }
    void reset_idle_timer(Instant now);
    Duration negotiated_idle_timeout() const;
    Duration effective_idle_timeout() const;

    // The stream the application may write to now, or nullptr before the
    // handshake completes, after the connection ends, or once the peer's
    // STOP_SENDING reset the stream (event::StreamStopped says so).
    transport::StreamState* writable_stream(StreamId id) {
        if (!can_write()) return nullptr;
        transport::StreamState& s = streams.writable(id);
        return s.stopped_by_peer ? nullptr : &s;
    }
};

}  // namespace ndm
