// The connection state machine: handshake, frame dispatch, packet assembly
// and timers, glued to the recovery pieces (AckTracker, LossDetector, Pacer),
// the congestion controller and the stream set (stream_set.cpp). Tracing and
// statistics are in connection_trace.cpp. Sans-I/O throughout.
#include "ndm/connection.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/connection_impl.hpp"
#include "util/rng.hpp"

namespace ndm {

using namespace transport;

namespace {

constexpr double kPacingGain = 1.25;                         // RFC 9002 §7.7
constexpr std::uint64_t kAmplificationFactor = 3;             // RFC 9000 §8.1
// Below this budget no packet is built: a long header (27 bytes), the tag and
// an ACK or a close frame need about this much.
constexpr std::uint64_t kMinAmplificationPacket = 64;
// ConnectionLimits bounds: more active IDs than this only cost memory (ndm
// never migrates); fewer tracked packets than this would close real flows.
constexpr std::uint64_t kMaxActiveConnectionIds = 64;
constexpr std::size_t kMinSentPacketsTracked = 1024;

// From the configured random source, else derived from the seed so that
// simulations are reproducible (ConnectionConfig::random_bytes).
wire::ConnectionId random_cid(const ConnectionConfig& cfg, std::uint64_t& state) {
    wire::ConnectionId cid;
    cid.length = wire::kShortCidLength;
    if (cfg.random_bytes) {
        cfg.random_bytes(std::span<std::uint8_t>(cid.bytes.data(), cid.length));
        return cid;
    }
    const std::uint64_t v = util::splitmix64_next(state);
    for (std::size_t i = 0; i < wire::kShortCidLength; ++i) cid.bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
    return cid;
}
// ConnectionLimits' documented ranges (std::invalid_argument outside them).
void check_limits(const ConnectionLimits& l) {
    if (l.crypto_buffer < kMinCryptoBuffer)
        throw std::invalid_argument(fmt::format("CRYPTO buffer of {} bytes is below RFC 9000 §7.5's {}",
                                                l.crypto_buffer, kMinCryptoBuffer));
    if (l.active_connection_ids < wire::kMinActiveConnectionIdLimit || l.active_connection_ids > kMaxActiveConnectionIds)
        throw std::invalid_argument(fmt::format("active connection ID limit {} outside {}..{}", l.active_connection_ids,
                                                wire::kMinActiveConnectionIdLimit, kMaxActiveConnectionIds));
    if (l.stream_ranges_total == 0) throw std::invalid_argument("stream ranges in all must be at least 1");
    if (l.ack_ranges_tracked < 4 * wire::kMaxAckRanges)
        throw std::invalid_argument(fmt::format("ACK ranges tracked {} below {}", l.ack_ranges_tracked,
                                                4 * wire::kMaxAckRanges));
    if (l.sent_packets_tracked < kMinSentPacketsTracked)
        throw std::invalid_argument(fmt::format("sent packets tracked {} below {}", l.sent_packets_tracked,
                                                kMinSentPacketsTracked));
}
const ConnectionConfig& checked(const ConnectionConfig& c) {
    check_limits(c.limits);
    return c;
}

// ndm's own ACK Delay resolution: microseconds, as before QUIC's exponent
// (RFC 9000 §18.2 allows 0..20; 0 keeps every RTT sample exact).
constexpr unsigned kAckDelayExponent = 0;
// The min_ack_delay we advertise (draft-ietf-quic-ack-frequency-14 §3): the
// timer granularity of RFC 9002 §6.1.2.
constexpr std::uint64_t kMinAckDelayUs = 1000;

// RFC 9000 §12.4 Table 3.
bool frame_allowed(const wire::Frame& f, wire::PacketType type) {
    const bool one_rtt = type == wire::PacketType::one_rtt;
    const auto kind = one_rtt ? wire::PacketKind::one_rtt
                      : type == wire::PacketType::initial ? wire::PacketKind::initial
                                                          : wire::PacketKind::handshake;
    return wire::frame_allowed(f, kind);
}

// RFC 9001 §4.1.4: the encryption level whose CRYPTO data a space carries.
crypto::EncryptionLevel level_of(PacketSpace s) {
    if (s == PacketSpace::initial) return crypto::EncryptionLevel::initial;
    if (s == PacketSpace::handshake) return crypto::EncryptionLevel::handshake;
    return crypto::EncryptionLevel::one_rtt;
}
wire::PacketType type_of(PacketSpace s) {
    if (s == PacketSpace::initial) return wire::PacketType::initial;
    if (s == PacketSpace::handshake) return wire::PacketType::handshake;
    return wire::PacketType::one_rtt;
}
// RFC 9000 §13.2.1: Initial and Handshake packets are acknowledged at once.
AckTracker::Config ack_config(PacketSpace s, const ConnectionConfig& cfg) {
    if (s != PacketSpace::application) return {Duration::zero(), 1, wire::kMaxAckRanges, cfg.limits.ack_ranges_tracked};
    return {cfg.max_ack_delay, 2, cfg.max_ack_ranges, cfg.limits.ack_ranges_tracked};
}
CryptoStream::Config crypto_config(const ConnectionConfig& cfg) { return {cfg.limits.crypto_buffer}; }

// The ACK Delay exponent of a packet's ACK frames (RFC 9000 §18.2): the
// sender's own in 1-RTT packets, the default in Initial and Handshake ones
// (whose receiver may not have the sender's parameters yet, §19.3).
unsigned ack_delay_exponent(wire::PacketType type, const wire::TransportParams* sender_params) {
    if (type != wire::PacketType::one_rtt || !sender_params) return wire::kDefaultAckDelayExponent;
    return static_cast<unsigned>(sender_params->ack_delay_exponent);
}

// The secret that places skipped packet numbers (transport/pn_skip.hpp).
std::uint64_t skip_seed(const ConnectionConfig& cfg) {
    std::uint64_t seed = cfg.seed ^ 0x5b1d'9e37'79b9'7f4aull;
    if (cfg.random_bytes) {
        std::array<std::uint8_t, 8> b{};
        cfg.random_bytes(b);
        seed = 0;
        for (const std::uint8_t x : b) seed = seed << 8 | x;
    }
    return util::splitmix64(seed);
}

}  // namespace

// ============================================================================
// Construction

Connection::Impl::Impl(const ConnectionConfig& config, bool is_client, Instant now)
    : cfg(checked(config)),
      client(is_client),
      rng(config.seed),
      crypto{CryptoStream(crypto_config(config)), CryptoStream(crypto_config(config)),
             CryptoStream(crypto_config(config))},
      peer_cids(config.limits.active_connection_ids),
      mds(config.max_datagram_size),
      loss(LossDetector::Config{config.max_ack_delay, config.max_pto_backoff, config.loss_detection}),
      pn_skip(skip_seed(config), config.skip_packet_numbers),
      acks{AckTracker(ack_config(PacketSpace::initial, config)), AckTracker(ack_config(PacketSpace::handshake, config)),
           AckTracker(ack_config(PacketSpace::application, config))},
      ecn(config.ecn),
      streams(StreamSet::Config{is_client, config.stream_send_buffer, config.initial_max_data,
                                config.initial_max_stream_data, config.autotune_receive_windows, config.initial_max_streams,
                                config.initial_max_streams_uni, config.limits.stream_ranges,
                                config.limits.stream_ranges_total},
              events) {
    if (cfg.max_datagram_size < kMinDatagramSize || cfg.max_datagram_size > kMaxDatagramSize) {
        throw std::invalid_argument(fmt::format("max datagram size {} outside {}..{} bytes",
                                                cfg.max_datagram_size, kMinDatagramSize, kMaxDatagramSize));
    }
    if (cfg.max_pto_backoff < Duration::zero()) throw std::invalid_argument("max_pto_backoff must not be negative");
    if (cfg.max_ack_ranges < 1 || cfg.max_ack_ranges > wire::kMaxAckRanges)
        throw std::invalid_argument(
            fmt::format("max ACK ranges {} outside 1..{}", cfg.max_ack_ranges, wire::kMaxAckRanges));
    if (cfg.application_params.size() > wire::kMaxApplicationParams) {
        throw std::invalid_argument(fmt::format("application parameters of {} bytes exceed {} bytes",
                                                cfg.application_params.size(), wire::kMaxApplicationParams));
    }
    local_cid = random_cid(cfg, rng);
    local_params.max_idle_timeout_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.idle_timeout).count());
    local_params.max_udp_payload_size = cfg.max_datagram_size;
    local_params.initial_max_data = cfg.initial_max_data;
    // One receive window for every stream; the unidirectional one only
    // where the peer may open such streams (ndm's own protocol uses none).
    local_params.initial_max_stream_data_bidi_local = cfg.initial_max_stream_data;
    local_params.initial_max_stream_data_bidi_remote = cfg.initial_max_stream_data;
    local_params.initial_max_streams_bidi = cfg.initial_max_streams;
    local_params.initial_max_streams_uni = cfg.initial_max_streams_uni;
    if (cfg.initial_max_streams_uni > 0) local_params.initial_max_stream_data_uni = cfg.initial_max_stream_data;
    local_params.ack_delay_exponent = kAckDelayExponent;
    // draft-ietf-quic-ack-frequency-14 §3: ACK timers run to RFC 9002's
    // granularity (1 ms); never above max_ack_delay.
    if (cfg.ack_frequency)
        local_params.min_ack_delay_us = std::min<std::uint64_t>(
            kMinAckDelayUs, static_cast<std::uint64_t>(
                                std::chrono::duration_cast<std::chrono::microseconds>(cfg.max_ack_delay).count()));
    local_params.active_connection_id_limit = cfg.limits.active_connection_ids;
    local_params.max_ack_delay_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(cfg.max_ack_delay).count());
    local_params.application_params = cfg.application_params;
    // RFC 9002 §6.2.2.1: no application probe timeout before confirmation,
    // and a client arms the anti-deadlock timer until the server has
    // validated its address (here: until confirmation).
    loss.set_handshake_confirmed(false);
    loss.set_peer_completed_address_validation(!client);
    // Before the handshake, only the minimum datagram size is known to pass.
    mds = kMinDatagramSize;
    make_controller(mds, now);
    handshake_deadline = now + cfg.handshake_timeout;
    idle_timeout = negotiated_idle_timeout();
    idle_deadline = now + cfg.idle_timeout;
    cc_state_since = now;
    traced_ecn_state = ecn.state();
}

void Connection::Impl::make_controller(std::size_t datagram_size, Instant now) {
    cc::Params p;
    p.max_datagram_size = datagram_size;
    p.now = now;
    cc = cc::make(cfg.cc, p, cfg.cc_options);
    adopt_cc_state(now);
    update_pacer();
}

// Our transport parameters, once the connection IDs they name are known.
// RFC 9000 §7.3: both sides state the Source Connection ID of their first
// packet, and the server the Destination Connection ID of the client's first
// one, so that a rewritten ID in an unprotected header is caught.
void Connection::Impl::encode_local_params(const ParamsEdit& edit, const ParamsBytesEdit& bytes_edit) {
    local_params.initial_source_connection_id = local_cid;
    if (!client) local_params.original_destination_connection_id = original_dcid;
    if (!client) local_params.retry_source_connection_id = retry_scid;
    if (!client && cfg.stateless_reset_token) local_params.stateless_reset_token = cfg.stateless_reset_token(local_cid.span());
    if (edit) edit(local_params);
    encoded_params.resize(128 + wire::kMaxApplicationParams);
    wire::Writer w(encoded_params);
    if (!wire::encode_transport_params(w, local_params, client ? wire::Role::client : wire::Role::server))
        throw std::logic_error("transport parameters do not fit");
    encoded_params.resize(w.position());
    if (bytes_edit) bytes_edit(encoded_params);
}

// The TLS session, given this side's transport parameters (RFC 9001 §8.2);
// a client's ClientHello is ready in its Initial CRYPTO stream at once.
void Connection::Impl::start_tls() {
    const TlsOptions& o = cfg.tls;
    tls::TlsConfig c;
    c.role = client ? tls::Role::client : tls::Role::server;
    c.alpn = o.alpn;
    c.server_name = o.server_name;
    c.transport_parameters = encoded_params;
    if (client) {
        c.client_credentials = o.trust ? *o.trust : tls::ClientCredentials::system();
    } else {
        if (!o.certificate) throw std::invalid_argument("TLS: a server needs a certificate (TlsOptions::certificate)");
        c.server_credentials = *o.certificate;
    }
    for (const std::string& name : o.cipher_suites) {
        const auto suite = crypto::parse_cipher_suite(name);
        if (!suite)
            throw std::invalid_argument(fmt::format(
                "TLS: unknown cipher suite '{}' (expected aes128-gcm, aes256-gcm or chacha20)", name));
        c.cipher_suites.push_back(*suite);
    }
    c.keylog = o.keylog;
    c.fixed_sizes = o.fixed_sizes;
    c.now = o.wall_time;
    try {
        tls.emplace(std::move(c));
    } catch (const tls::TlsSetupError& e) {
        throw std::invalid_argument(e.what());
    }
    tls->start();
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application}) {
        const auto out = tls->take_output(level_of(s));
        if (!out.empty()) crypto_of(s).write(out);
    }
}

std::unique_ptr<Connection> Connection::connect(const ConnectionConfig& config, Instant now) {
    return Impl::connect(config, now, nullptr);
}

std::unique_ptr<Connection> Connection::Impl::connect(const ConnectionConfig& config, Instant now,
                                                      const ParamsEdit& edit, const ParamsBytesEdit& bytes_edit) {
    auto impl = std::make_unique<Impl>(config, true, now);
    impl->original_dcid = random_cid(impl->cfg, impl->rng);
    impl->initial_dcid = impl->original_dcid;
    impl->set_initial_peer_cid(impl->original_dcid);  // until the server's first packet names its own
    impl->encode_local_params(edit, bytes_edit);
    impl->install_initial_keys();
    impl->start_tls();
    impl->attach_observer(config.observer, now);
    spdlog::debug("ndm: client connection created, cc={}", config.cc);
    return std::unique_ptr<Connection>(new Connection(std::move(impl)));
}

std::unique_ptr<Connection> Connection::accept(const ConnectionConfig& config,
                                               std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
    return Impl::accept(config, datagram, now, nullptr, nullptr, ecn);
}

std::unique_ptr<Connection> Connection::accept(const ConnectionConfig& config,
                                               std::span<const std::uint8_t> datagram, Instant now,
                                               const RetryValidation& retry, Ecn ecn) {
    return Impl::accept(config, datagram, now, nullptr, &retry, ecn);
}

std::unique_ptr<Connection> Connection::Impl::accept(const ConnectionConfig& config,
                                                     std::span<const std::uint8_t> datagram, Instant now,
                                                     const ParamsEdit& edit, const RetryValidation* retry, Ecn ecn,
                                                     const ParamsBytesEdit& bytes_edit) {
    wire::quic::PacketView first;
    if (wire::quic::parse_packet_header(datagram, wire::kShortCidLength, first) != wire::quic::HeaderError::none)
        return nullptr;
    const bool other_version = first.kind == wire::quic::PacketKind::unknown_version;
    if (first.kind != wire::quic::PacketKind::initial && !other_version) return nullptr;
    // RFC 9000 §14.1: a server discards an Initial in a datagram under 1200
    // bytes; it could not answer it within the amplification limit anyway.
    // (§6.1: a Version Negotiation answers only such datagrams, too.)
    if (datagram.size() < kMinDatagramSize) return nullptr;
    // RFC 9000 §7.2: the client's first DCID is at least 8 bytes; ndm's IDs
    // are 8, and the other version's may be up to 255 (RFC 8999 §5.1).
    if (first.dcid.size() > wire::kMaxCidLength || first.scid.size() > wire::kMaxCidLength) return nullptr;
    if (retry && (other_version || retry->original_dcid.size() > wire::kMaxCidLength)) return nullptr;
    // Mix the client's CID into our seed so that every accepted connection
    // gets distinct IDs even with one server config.
    ConnectionConfig cfg = config;
    for (auto b : first.dcid) cfg.seed = cfg.seed * 131 + b;
    auto impl = std::make_unique<Impl>(cfg, false, now);
    impl->initial_dcid = wire::ConnectionId::from(first.dcid);
    impl->original_dcid = retry ? wire::ConnectionId::from(retry->original_dcid) : impl->initial_dcid;
    if (retry) impl->retry_scid = impl->initial_dcid;
    impl->set_initial_peer_cid(wire::ConnectionId::from(first.scid));
    impl->encode_local_params(edit, bytes_edit);
    impl->attach_observer(config.observer, now);
    // RFC 9000 §8.1: a returned Retry token proves the address (§8.1.2).
    impl->address_validated = retry != nullptr;
    if (other_version) {
        impl->offered_version = first.version;
        impl->send_version_negotiation = true;
        impl->state = ConnectionState::closing;
        impl->close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
                       fmt::format("client offered version {:#010x}; this endpoint speaks {:#010x}",
                                   first.version, kProtocolVersion),
                       false, false};
        impl->events.push_back(event::Closed{impl->close});
        impl->close_deadline = now;
        return std::unique_ptr<Connection>(new Connection(std::move(impl)));
    }
    impl->install_initial_keys();
    impl->start_tls();
    auto conn = std::unique_ptr<Connection>(new Connection(std::move(impl)));
    conn->on_datagram(datagram, now, ecn);
    // A first datagram that brought TLS nothing is not a connection attempt.
    if (!conn->impl_->tls_input_seen && conn->impl_->state == ConnectionState::handshaking) return nullptr;
    return conn;
}

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::~Connection() = default;
// ============================================================================
// Receiving

namespace {
// Where the packets of a datagram open (RFC 9001 §5.3-5.4: unprotected
// headers, plaintext at each packet's offset); the caller's datagram stays as
// received. One buffer per thread, not one per connection: nothing keeps the
// plaintext once on_datagram returns (STREAM data is copied into its
// stream, CRYPTO data into TLS, reasons and CIDs into their own storage),
// and with many connections a buffer each was a cold cache line for every
// 64 bytes received (bench/RESULTS.md, "Competing flows"). Its size only
// grows: no bytes to clear or copy.
std::span<std::uint8_t> open_buffer(std::size_t size) {
    thread_local std::vector<std::uint8_t> buffer;
    if (buffer.size() < size) buffer.resize(size);
    return buffer;
}
}  // namespace

void Connection::Impl::on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn_codepoint) {
    if (state == ConnectionState::closed || state == ConnectionState::draining) return;
    rx_ecn = ecn_codepoint;  // every packet of the datagram carries it (RFC 9000 §13.4.1)
    const std::span<std::uint8_t> into = open_buffer(datagram.size());
    wire::quic::DatagramPackets packets(datagram, wire::kShortCidLength);
    wire::quic::PacketView view;
    bool counted = false, any = false;
    rx_opened = false;
    while (packets.next(view)) {
        any = true;
        if (!on_packet(datagram, into, view, counted, now)) return;
    }
    // RFC 9000 §10.3.1: a datagram none of whose packets opens may be the
    // peer's stateless reset; its last 16 bytes then are a token it issued.
    if (!rx_opened && peer_cids.is_stateless_reset(datagram)) return on_stateless_reset(now);
    st.packets_dropped += packets.dropped_other_dcid();
    if (!any || packets.error() != wire::quic::HeaderError::none) {
        ++st.packets_dropped;
        spdlog::debug("ndm: dropped (part of) a datagram of {} bytes: {}", datagram.size(),
                      wire::quic::describe(packets.error()));
    }
}

namespace {
PacketSpace space_of(wire::quic::PacketKind k) {
    if (k == wire::quic::PacketKind::initial) return PacketSpace::initial;
    if (k == wire::quic::PacketKind::handshake) return PacketSpace::handshake;
    return PacketSpace::application;
}
}  // namespace

bool Connection::Impl::on_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> into,
                                 const wire::quic::PacketView& v, bool& counted, Instant now) {
    using wire::quic::PacketKind;
    if (v.kind == PacketKind::version_negotiation) {
        on_version_negotiation(v);
        return false;
    }
    if (v.kind == PacketKind::retry) {
        on_retry(v, now);
        return false;  // a Retry has no Length: it is the rest of the datagram
    }
    // 0-RTT is never accepted, other versions not spoken.
    if (v.kind != PacketKind::initial && v.kind != PacketKind::handshake && v.kind != PacketKind::one_rtt) {
        ++st.packets_dropped;
        return true;
    }
    const PacketSpace space = space_of(v.kind);
    const wire::PacketType type = type_of(space);
    const bool cid_ok = std::ranges::equal(v.dcid, local_cid.span()) ||
                        (!client && v.kind == PacketKind::initial && std::ranges::equal(v.dcid, initial_dcid.span()));
    // RFC 9001 §4.9: packets of a discarded space are dropped, and so are
    // those of a space whose keys this side does not have yet (§4.1.4); §5.7:
    // a server processes no 1-RTT packet before its handshake completes (one
    // that overtook the client's Finished is dropped and resent).
    const bool early_one_rtt = !client && space == PacketSpace::application && !handshake_complete;
    if (!cid_ok || loss.discarded(space) || !has_read_keys(space) || early_one_rtt) {
        ++st.packets_dropped;
        return true;
    }
    if (!client && v.kind == PacketKind::initial && datagram.size() < kMinDatagramSize) {
        ++st.packets_dropped;  // RFC 9000 §14.1
        return true;
    }
    AckTracker& tracker = acks_of(space);
    const auto largest = tracker.has_received() ? std::optional(tracker.largest_received()) : std::nullopt;
    wire::quic::OpenedPacket pkt;
    const auto err = space == PacketSpace::application
                         ? wire::quic::open_packet(datagram, into, v, &*one_rtt, largest, now, pto_period(), pkt)
                         : wire::quic::open_packet(datagram, into, v, read_keys_of(space), largest, pkt);
    if (err != wire::quic::OpenError::none) return on_open_error(err, now);
    rx_opened = true;
    // RFC 9000 §8.1: the limit counts what the client sent, once per datagram;
    // a Handshake packet proves the address (§8.1, only the client can have
    // its keys).
    if (!address_validated) {
        if (!counted) unvalidated_received += datagram.size();
        amplification_wait = false;
        if (space == PacketSpace::handshake) address_validated = true;
    }
    counted = true;
    if (state == ConnectionState::closing) {
        // RFC 9000 §10.2.1: answer with the close again, not with data.
        if (!send_version_negotiation) close_frame_pending = true;
        return false;
    }

    bool ack_eliciting = false;
    if (!decode_frames(pkt.payload, type, ack_eliciting, now)) return false;
    if (!tracker.on_packet_received(pkt.packet_number, ack_eliciting, now, rx_ecn)) {
        ++st.packets_dropped;  // duplicate
        return true;
    }
    ++st.packets_received;
    st.bytes_received += v.packet.size();
    trace_received(type, pkt.packet_number, v.packet.size(), now);
    reset_idle_timer(now);
    sent_eliciting_since_receive = false;

    if (client && space != PacketSpace::application) set_initial_peer_cid(wire::ConnectionId::from(v.scid));
    // RFC 9001 §4.9.1: a server is done with Initial packets once it has
    // processed a Handshake packet from the client.
    if (!client && space == PacketSpace::handshake) discard_space(PacketSpace::initial);
    for (const auto& f : rx_frames) {
        if (!process_frame(f, space, now)) return false;  // connection closed
    }
    // The rest of a Handshake packet that completed the handshake is still
    // read in its space (a second ACK frame in it is checked, not ignored).
    if (handshake_discard_due) {
        handshake_discard_due = false;
        discard_space(PacketSpace::handshake);
    }
    return true;
}

// A packet that could not be opened: dropped (RFC 9001 §5.5, §9.5: no
// answer to what may be forged), or the connection closes where the RFCs
// say so. Returns whether the datagram's later packets are still read.
bool Connection::Impl::on_open_error(wire::quic::OpenError err, Instant now) {
    using wire::quic::OpenError;
    if (err == OpenError::reserved_bits) {
        close_with_error(CloseCode::protocol_violation, "packet with reserved header bits set", now);
        return false;
    }
    if (err == OpenError::key_update_error) {
        close_with_error(CloseCode::key_update_error, "peer's key update violates RFC 9001 §6", now);
        return false;
    }
    ++st.packets_dropped;
    spdlog::debug("ndm: dropped a packet: {}", wire::quic::describe(err));
    // RFC 9001 §6.6: past the integrity limit the connection must end.
    if (one_rtt && one_rtt->integrity_limit_reached()) {
        close_with_error(CloseCode::aead_limit_reached, "too many packets failed authentication", now);
        return false;
    }
    return true;
}

// RFC 9000 §17.2.5.2: a client accepts one Retry, before it has read any
// packet of the server's, and only with a tag that proves the sender saw its
// first Initial (RFC 9001 §5.8). It then starts over towards the Retry's
// Source Connection ID, with Initial keys from that ID (RFC 9001 §5.2) and
// the token in every Initial; packet numbers continue (§17.2.5.3).
void Connection::Impl::on_retry(const wire::quic::PacketView& v, Instant now) {
    if (!client || state != ConnectionState::handshaking || retry_scid || acks_of(PacketSpace::initial).has_received() ||
        !std::ranges::equal(v.dcid, local_cid.span()) ||
        wire::quic::verify_retry(v, original_dcid.span()) != wire::quic::HeaderError::none) {
        ++st.packets_dropped;
        return;
    }
    retry_scid = wire::ConnectionId::from(v.scid);
    retry_token.assign(v.token.begin(), v.token.end());
    initial_dcid = *retry_scid;
    set_initial_peer_cid(initial_dcid);
    install_initial_keys();
    // RFC 9002 §6.3: the Retry acknowledges nothing; recovery and congestion
    // control start over, and the ClientHello is sent again.
    for (const SentPacket& p : loss.restart_space(PacketSpace::initial))
        for (const auto& sf : p.frames)
            if (auto* c = std::get_if<sent::Crypto>(&sf)) crypto_of(PacketSpace::initial).on_lost(*c);
    probes_pending = 0;
    make_controller(mds, now);
    spdlog::debug("ndm: client took a Retry with a {}-byte token", retry_token.size());
}

void Connection::Impl::on_version_negotiation(const wire::quic::PacketView& vn) {
    if (!client || state != ConnectionState::handshaking || !std::ranges::equal(vn.dcid, local_cid.span()) ||
        wire::quic::check_version_negotiation(vn, kProtocolVersion) != wire::quic::HeaderError::none) {
        ++st.packets_dropped;  // RFC 9000 §6.2: not an answer to this connection's Initial
        return;
    }
    std::string versions;
    for (std::size_t i = 0; i < vn.versions.size() / 4; ++i)
        versions += fmt::format("{}{:#010x}", versions.empty() ? "" : ", ", wire::quic::listed_version(vn, i));
    close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
             fmt::format("peer does not speak version {:#010x} (it offers: {})", kProtocolVersion,
                         versions.empty() ? "none" : versions),
             true, false};
    events.push_back(event::Closed{close});
    terminate();
}

// Decodes every frame into rx_frames before any is acted on, so that a
// malformed packet is rejected whole. False: the connection is closing.
bool Connection::Impl::decode_frames(std::span<const std::uint8_t> payload, wire::PacketType type,
                                     bool& ack_eliciting, Instant now) {
    rx_frames.clear();
    wire::Reader r(payload);
    wire::Error err;
    while (!r.empty()) {
        wire::Frame f;
        if (!wire::decode_frame(r, f, err, ack_delay_exponent(type, have_peer_params ? &peer_params : nullptr))) {
            close_with_error(err.code, err.what, now);
            return false;
        }
        if (!frame_allowed(f, type)) {
            close_with_error(CloseCode::protocol_violation,
                             fmt::format("{} frame not allowed in a {} packet", wire::frame_name(f),
                                         type == wire::PacketType::one_rtt ? "1-RTT" : "handshake"),
                             now);
            return false;
        }
        ack_eliciting |= wire::is_ack_eliciting(f);
        rx_frames.push_back(std::move(f));
    }
    if (rx_frames.empty()) {
        close_with_error(CloseCode::protocol_violation, "packet without frames", now);
        return false;
    }
    return true;
}

bool Connection::Impl::process_frame(const wire::Frame& frame, PacketSpace space, Instant now) {
    return std::visit(
        [&](const auto& f) -> bool {
            using T = std::decay_t<decltype(f)>;
            if constexpr (std::is_same_v<T, wire::PaddingFrame> || std::is_same_v<T, wire::PingFrame>) {
                return true;
            } else if constexpr (std::is_same_v<T, wire::AckFrame>) {
                on_ack_frame(f, space, now);
            } else if constexpr (std::is_same_v<T, wire::CryptoFrame>) {
                on_crypto_frame(f, space, now);
            } else if constexpr (std::is_same_v<T, wire::StreamFrame>) {
                if (!on_stream_result(streams.on_stream_frame(f), now)) return false;
            } else if constexpr (std::is_same_v<T, wire::MaxDataFrame>) {
                streams.on_max_data(f.maximum);
            } else if constexpr (std::is_same_v<T, wire::MaxStreamDataFrame>) {
                if (!on_stream_result(streams.on_max_stream_data(f), now)) return false;
            } else if constexpr (std::is_same_v<T, wire::MaxStreamsFrame>) {
                streams.on_max_streams(f.maximum, f.bidi);
            } else if constexpr (std::is_same_v<T, wire::StreamDataBlockedFrame>) {
                if (!on_stream_result(streams.on_stream_data_blocked(f), now)) return false;
            } else if constexpr (std::is_same_v<T, wire::DataBlockedFrame> ||
                                 std::is_same_v<T, wire::StreamsBlockedFrame>) {
                return true;  // informational: our windows and stream limit slide as the application reads
            } else if constexpr (std::is_same_v<T, wire::ConnectionCloseFrame>) {
                enter_draining(f, now);
                return false;
            } else if constexpr (std::is_same_v<T, wire::HandshakeDoneFrame>) {
                if (!client) {
                    close_with_error(CloseCode::protocol_violation, "HANDSHAKE_DONE sent by a client", now);
                } else if (!handshake_confirmed) {
                    // RFC 9001 §4.1.2, §4.9.2: confirmed; Handshake packets are done.
                    handshake_confirmed = true;
                    loss.set_handshake_confirmed(true);
                    loss.set_peer_completed_address_validation(true);
                    discard_space(PacketSpace::handshake);
                }
            } else if constexpr (std::is_same_v<T, wire::AckFrequencyFrame> ||
                                 std::is_same_v<T, wire::ImmediateAckFrame>) {
                if (!on_ack_frequency_frame(frame, now)) return false;
            } else {
                on_v1_frame(f, now);
            }
            return state == ConnectionState::handshaking || state == ConnectionState::established;
        },
        frame);
}

// The v1 frames ndm does not act on yet (RFC 9000 §19): what it can answer
// correctly now, it answers; the rest closes as PROTOCOL_VIOLATION naming it.
void Connection::Impl::on_v1_frame(const wire::Frame& frame, Instant now) {
    if (const auto* c = std::get_if<wire::PathChallengeFrame>(&frame)) {
        path_response = c->data;  // RFC 9000 §8.2.2: echoed in a PATH_RESPONSE; the latest one only
    } else if (std::holds_alternative<wire::PathResponseFrame>(frame)) {
        // ndm sends no PATH_CHALLENGE; an unsolicited response MAY be ignored (RFC 9000 §8.2.2).
    } else if (std::holds_alternative<wire::NewTokenFrame>(frame)) {
        // RFC 9000 §19.7: a server must not receive one; a client may keep
        // it for later connections (ndm keeps none).
        if (!client) close_with_error(CloseCode::protocol_violation, "NEW_TOKEN frame sent by a client", now);
    } else if (const auto* n = std::get_if<wire::NewConnectionIdFrame>(&frame)) {
        if (auto err = peer_cids.on_new_connection_id(*n)) close_with_error(err->code, std::move(err->reason), now);
        else peer_cid = peer_cids.current();
    } else if (const auto* r = std::get_if<wire::RetireConnectionIdFrame>(&frame)) {
        // ndm issues only sequence number 0, the one the peer's packets carry
        // (RFC 9000 §19.16: a higher number MUST, the packet's own MAY close).
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("RETIRE_CONNECTION_ID frame for sequence number {}: only connection id 0 "
                                     "was issued, and the packet carrying the frame uses it",
                                     r->sequence),
                         now);
    } else {
        // RESET_STREAM and STOP_SENDING: what RFC 9000 §19.4/§19.5 make an
        // error of closes with its code; the frame itself is not supported.
        StreamResult invalid;
        if (const auto* rs = std::get_if<wire::ResetStreamFrame>(&frame)) invalid = streams.check_reset_stream(*rs);
        else if (const auto* ss = std::get_if<wire::StopSendingFrame>(&frame)) invalid = streams.check_stop_sending(*ss);
        if (!on_stream_result(invalid, now)) return;
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("{} frame not supported", wire::frame_name(frame)), now);
    }
}

// A frame the stream set rejected closes the connection; false then.
bool Connection::Impl::on_stream_result(StreamResult r, Instant now) {
    if (!r) return true;
    close_with_error(r->code, std::move(r->reason), now);
    return false;
}

// RFC 9000 §19.6, RFC 9001 §4.1.3: a space's CRYPTO frames are reassembled
// and handed to TLS, in order, at that space's encryption level.
void Connection::Impl::on_crypto_frame(const wire::CryptoFrame& f, PacketSpace space, Instant now) {
    CryptoStream& cs = crypto_of(space);
    if (cs.on_frame(f.offset, f.data) == CryptoStream::Result::buffer_exceeded) {
        close_with_error(CloseCode::crypto_buffer_exceeded,
                         fmt::format("CRYPTO data up to offset {} exceeds the reassembly buffer", f.offset + f.data.size()),
                         now);
        return;
    }
    for (auto r = cs.readable(); !r.empty(); r = cs.readable()) {
        tls_input_seen = true;
        tls->provide(level_of(space), r);
        cs.consume(r.size());
    }
    drive_tls(now);
}

// Takes what TLS produced: CRYPTO data for each space's stream, the keys
// that let a space send or be read, the peer's transport parameters, and
// completion or failure.
void Connection::Impl::drive_tls(Instant now) {
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application}) {
        const auto out = tls->take_output(level_of(s));
        if (!out.empty() && !crypto_of(s).discarded()) crypto_of(s).write(out);
    }
    for (const tls::SecretEvent& e : tls->take_secrets()) install_secret(e);
    if (tls->error()) {
        on_tls_error(now);
        return;
    }
    if (!have_peer_params && tls->peer_transport_parameters()) {
        on_peer_params(*tls->peer_transport_parameters(), now);
        if (state != ConnectionState::handshaking) return;
    }
    // TLS completes only with the peer's parameters (it checks the extension).
    if (tls->handshake_complete() && have_peer_params) set_established(now);
}

// ============================================================================
// Keys (RFC 9001 §5)

void Connection::Impl::install_initial_keys() {
    initial.emplace(crypto::initial_keys(initial_dcid.span(), !client));
}

// A secret TLS made becomes the packet keys of its space (§5.1); the 1-RTT
// keys, which update together (§6), once both directions' are known.
void Connection::Impl::install_secret(const tls::SecretEvent& e) {
    const bool read = e.direction == tls::Direction::read;
    if (e.level == crypto::EncryptionLevel::handshake) {
        (read ? handshake_read : handshake_write).emplace(crypto::derive_packet_keys(e.suite, e.secret));
        // RFC 9002 §6.2.2.1: a client probes Initial until it has Handshake keys.
        if (client && !read) loss.set_has_handshake_keys(true);
    } else if (e.level == crypto::EncryptionLevel::one_rtt) {
        (read ? one_rtt_read_secret : one_rtt_write_secret) = e;
        if (one_rtt_read_secret && one_rtt_write_secret && !one_rtt) {
            one_rtt.emplace(e.suite, one_rtt_read_secret->secret, one_rtt_write_secret->secret);
            one_rtt_read_secret.reset();
            one_rtt_write_secret.reset();
        }
    }
    // 0-RTT secrets: none are offered or accepted.
}

crypto::DirectionKeys* Connection::Impl::read_keys_of(PacketSpace s) {
    if (s == PacketSpace::initial) return initial ? &initial->read : nullptr;
    if (s == PacketSpace::handshake) return handshake_read ? &*handshake_read : nullptr;
    return nullptr;  // 1-RTT: one_rtt
}
crypto::DirectionKeys* Connection::Impl::write_keys_of(PacketSpace s) {
    if (s == PacketSpace::initial) return initial ? &initial->write : nullptr;
    if (s == PacketSpace::handshake) return handshake_write ? &*handshake_write : nullptr;
    return nullptr;
}
bool Connection::Impl::has_read_keys(PacketSpace s) const {
    if (s == PacketSpace::initial) return initial.has_value();
    if (s == PacketSpace::handshake) return handshake_read.has_value();
    return one_rtt.has_value();
}
bool Connection::Impl::has_write_keys(PacketSpace s) const {
    if (s == PacketSpace::initial) return initial.has_value();
    if (s == PacketSpace::handshake) return handshake_write.has_value();
    return one_rtt.has_value();
}

// RFC 9001 §4.8: a TLS failure closes with CRYPTO_ERROR + its alert (or a
// transport error), naming the alert and the cause.
void Connection::Impl::on_tls_error(Instant now) {
    const tls::TlsError& e = *tls->error();
    start_close(e.code, e.alert_name.empty() ? e.message : fmt::format("TLS alert {}: {}", e.alert_name, e.message),
                false, now);
}

void Connection::Impl::on_peer_params(std::span<const std::uint8_t> data, Instant now) {
    wire::Error err;
    if (!wire::decode_transport_params(data, client ? wire::Role::server : wire::Role::client, peer_params, err)) {
        close_with_error(CloseCode::transport_parameter_error, err.what, now);
        return;
    }
    if (!check_peer_cids(now)) return;
    have_peer_params = true;
    idle_timeout = negotiated_idle_timeout();
    if (peer_params.stateless_reset_token) peer_cids.set_initial_reset_token(*peer_params.stateless_reset_token);
    loss.set_max_ack_delay(std::chrono::milliseconds(peer_params.max_ack_delay_ms));
    streams.on_peer_params({peer_params.initial_max_data, peer_params.initial_max_stream_data_bidi_local,
                            peer_params.initial_max_stream_data_bidi_remote, peer_params.initial_max_stream_data_uni,
                            peer_params.initial_max_streams_bidi, peer_params.initial_max_streams_uni});
}

// RFC 9000 §7.3: the IDs the peer's parameters state must be the ones its
// first packet carried (and, from a server, the one the client chose).
// Absent is TRANSPORT_PARAMETER_ERROR, different PROTOCOL_VIOLATION.
bool Connection::Impl::check_peer_cids(Instant now) {
    const auto check = [&](const std::optional<wire::ConnectionId>& stated, const wire::ConnectionId& seen,
                           const char* name) {
        if (!stated) {
            close_with_error(CloseCode::transport_parameter_error, fmt::format("peer sent no {}", name), now);
            return false;
        }
        if (!(*stated == seen)) {
            close_with_error(CloseCode::protocol_violation,
                             fmt::format("peer's {} does not match the connection ID its packets carry", name), now);
            return false;
        }
        return true;
    };
    // peer_cid is the Source Connection ID of the peer's first packet (a
    // client takes it from each of the server's long-header packets before
    // their frames are processed).
    if (!check(peer_params.initial_source_connection_id, peer_cid, "initial_source_connection_id")) return false;
    if (!client) return true;
    if (!check(peer_params.original_destination_connection_id, original_dcid, "original_destination_connection_id"))
        return false;
    // After a Retry the server names the Retry's Source Connection ID; without one it must not.
    if (retry_scid) return check(peer_params.retry_source_connection_id, *retry_scid, "retry_source_connection_id");
    if (peer_params.retry_source_connection_id) {
        close_with_error(CloseCode::transport_parameter_error,
                         "peer sent retry_source_connection_id though it sent no Retry", now);
        return false;
    }
    return true;
}

void Connection::Impl::set_established(Instant now) {
    if (state != ConnectionState::handshaking) return;
    state = ConnectionState::established;
    handshake_complete = true;
    handshake_deadline = kNever;
    // The peer may allow more than 65507 (RFC 9000 §18.2); ours caps it.
    std::size_t negotiated = std::min<std::uint64_t>(cfg.max_datagram_size, peer_params.max_udp_payload_size);
    if (negotiated != mds) {
        mds = negotiated;
        // The controller's windows are in units of the datagram size.
        make_controller(mds, now);
        cc_state_since = now;
    }
    if (!client) {
        // RFC 9001 §4.1.2: the server's handshake is confirmed on completion,
        // and its Handshake packets are done (§4.9.2).
        handshake_confirmed = true;
        handshake_done_pending = true;
        loss.set_handshake_confirmed(true);
        handshake_discard_due = true;  // once the packet being read is done
    }
    spdlog::debug("ndm: {} established, datagram size {}", client ? "client" : "server", mds);
    events.push_back(event::Established{});
}

// RFC 9002 §6.4: a discarded space's packets leave bytes in flight without
// a congestion event; its receive record goes too.
void Connection::Impl::discard_space(PacketSpace space) {
    if (loss.discarded(space)) return;
    loss.discard_space(space);
    // Its ECN counts stay in the statistics (ConnectionStats::ecn_*_received).
    const wire::EcnCounts& c = acks_of(space).ecn_counts();
    ecn_received_discarded.ect0 += c.ect0;
    ecn_received_discarded.ect1 += c.ect1;
    ecn_received_discarded.ce += c.ce;
    acks_of(space) = AckTracker(ack_config(space, cfg));
    if (probe_space == space) probes_pending = 0;
    crypto_of(space).discard();
    // RFC 9001 §4.9: the keys go with the space (1-RTT keys are never discarded this way).
    if (space == PacketSpace::initial) {
        initial.reset();
    } else if (space == PacketSpace::handshake) {
        handshake_read.reset();
        handshake_write.reset();
    }
}

void Connection::Impl::on_ack_frame(const wire::AckFrame& ack, PacketSpace space, Instant now) {
    AckOutcome& out = ack_out;
    const bool had_largest = loss.has_largest_acked(space);
    const std::uint64_t prior_largest = loss.largest_acked(space);
    loss.on_ack_received(ack, now, handshake_confirmed, out, space);
    if (out.invalid) {
        close_with_error(CloseCode::protocol_violation,
                         out.optimistic ? std::string("optimistic ACK: a packet number skipped on purpose was "
                                                      "acknowledged (RFC 9000 §21.4)")
                                        : fmt::format("ACK of packet {} which was never sent", ack.largest()),
                         now);
        return;
    }

    // The undo of an earlier reduction comes before this ACK's own signals,
    // ECN before losses (ProcessECN, RFC 9002 A.7) and losses before
    // acknowledgements.
    if (out.spurious_congestion) cc->on_spurious_congestion(cc::SpuriousEvent{now});
    const bool largest_is_new =
        loss.has_largest_acked(space) && (!had_largest || loss.largest_acked(space) > prior_largest);
    on_ack_ecn(ack, space, largest_is_new, now);
    if (!out.lost.empty()) on_lost_packets(out.lost, out.persistent_congestion, space, now);
    if (state != ConnectionState::handshaking && state != ConnectionState::established) return;

    std::uint64_t acked_bytes = 0;
    std::uint64_t acked_packets = 0;
    for (const auto& p : out.acked) {
        // RFC 9001 §6.1: an acknowledged packet of the current key phase permits the next update.
        if (space == PacketSpace::application && one_rtt) one_rtt->on_packet_acked(p.pn);
        release_acked(p, space);
        if (p.in_flight) {
            acked_bytes += p.bytes;
            ++acked_packets;
            delivery.on_packet_acked(p.rate, p.time_sent, p.bytes, now);
        }
    }
    for (const auto& p : out.late_acked) {
        ++st.spurious_losses;
        release_acked(p, space);
        // Declared lost, yet delivered: it counts as delivered (tcp_rate.c does the same for a SACKed lost skb).
        if (p.in_flight) delivery.on_packet_acked(p.rate, p.time_sent, p.bytes, now);
    }
    st.bytes_acked += acked_bytes;
    if (acked_packets > 0 || !out.late_acked.empty()) {
        const cc::RateSample rate = delivery.take_sample(loss.rtt().min());
        if (acked_packets > 0) on_acked_bytes(acked_bytes, acked_packets, rate, now);
    }
    track_cc_state(now);
    update_pacer();
    trace_metrics(now);
}

// RFC 9000 §13.4.2.1: the ACK's ECN counts are checked against the marked
// packets it newly acknowledged; a validated increase of the CE count is a
// congestion event dated by the largest newly acknowledged packet's send
// time (RFC 9002 §7.1, Appendix B.7), so one round's marks reduce once.
void Connection::Impl::on_ack_ecn(const wire::AckFrame& ack, PacketSpace space, bool largest_is_new, Instant now) {
    const AckOutcome& out = ack_out;
    transport::EcnValidator::Acked acked{0, largest_is_new};
    for (const auto* list : {&out.acked, &out.late_acked})
        for (const auto& p : *list) acked.ect0_packets += p.ecn == Ecn::ect0 ? 1 : 0;
    const std::uint64_t ce = ecn.on_ack(ack.ecn, acked, space);
    trace_ecn_state(now);
    if (ce == 0) return;
    ++st.congestion_events;
    cc::CongestionEvent ev;
    ev.now = now;
    ev.ecn_ce = ce;
    ev.largest_lost_sent_time = out.largest_acked_time_sent;
    ev.bytes_in_flight = loss.bytes_in_flight();
    cc->on_congestion_event(ev);
    track_cc_state(now);
    update_pacer();
}

// What an acknowledged packet carried is delivered.
void Connection::Impl::release_acked(const SentPacket& p, PacketSpace space) {
    for (const auto& sf : p.frames) {
        if (auto* s = std::get_if<sent::Stream>(&sf)) {
            streams.on_acked(*s);
        } else if (auto* a = std::get_if<sent::Ack>(&sf)) {
            acks_of(space).on_ack_acknowledged(a->largest);
        } else if (auto* c = std::get_if<sent::Crypto>(&sf)) {
            crypto_of(space).on_acked(*c);
        } else if (auto* r = std::get_if<sent::RetireConnectionId>(&sf)) {
            peer_cids.on_acked(r->sequence);
        }
    }
}

// The controller's view of the in-flight packets this ACK acknowledged.
void Connection::Impl::on_acked_bytes(std::uint64_t bytes, std::uint64_t packets, const cc::RateSample& rate,
                                      Instant now) {
    const AckOutcome& out = ack_out;
    cc::AckEvent ev;
    ev.now = now;
    ev.bytes_acked = bytes;
    ev.packets_acked = packets;
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
    ev.rate = rate;
    cc->on_ack(ev);
}

void Connection::Impl::on_lost_packets(std::vector<SentPacket>& lost, bool persistent, PacketSpace space,
                                       Instant now) {
    std::uint64_t lost_bytes = 0;
    std::uint64_t lost_packets = 0;
    Instant largest_sent{};
    for (auto& p : lost) {
        ++st.packets_lost;
        ecn.on_packet_lost(p.ecn);
        if (obs) obs->on_packet_lost({now, p.pn, p.bytes, trace_type(type_of(space))});
        if (p.in_flight) {
            lost_bytes += p.bytes;
            ++lost_packets;
            largest_sent = std::max(largest_sent, p.time_sent);
            delivery.on_packets_lost(p.bytes);
            cc->on_packet_lost({now, p.pn, p.bytes, p.time_sent, p.rate.tx_in_flight, delivery.lost() - p.rate.lost,
                                p.rate.is_app_limited});
        }
        // RFC 9000 §13.3: retransmit information, not packets. The stream
        // set takes back what its frames carried.
        for (const auto& sf : p.frames) {
            if (streams.on_lost(sf)) continue;
            if (auto* c = std::get_if<sent::Crypto>(&sf)) {
                crypto_of(space).on_lost(*c);
            } else if (std::holds_alternative<sent::HandshakeDone>(sf)) {
                handshake_done_pending = true;
            } else if (auto* r = std::get_if<sent::RetireConnectionId>(&sf)) {
                peer_cids.on_lost(r->sequence);
            } else if (auto* af = std::get_if<sent::AckFrequency>(&sf)) {
                ack_frequency.on_lost(af->sequence);
            }
        }
    }
    trace_ecn_state(now);
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
    // RFC 9000 §10.2.2: closing may become draining; the application keeps
    // the one Closed event it had, with our reason.
    if (state == ConnectionState::closing) {
        state = ConnectionState::draining;
        close_frame_pending = false;
        return;
    }
    close = {f.error_code, std::string(f.reason), true, f.application};
    // RFC 9001 §4.8: the peer's TLS alert, said in this side's terms when
    // the peer gave no reason ("server accepts no ALPN protocol ndm offered").
    const auto base = static_cast<std::uint64_t>(CloseCode::crypto_error_base);
    if (!f.application && f.error_code >= base && f.error_code < base + 0x100 && tls && !handshake_complete) {
        tls->on_peer_error(f.error_code);
        if (close.reason.empty() && tls->error()) close.reason = tls->error()->message;
    }
    spdlog::debug("ndm: peer closed: code {:#x} {:?}", f.error_code, f.reason);  // escaped: the peer's bytes
    state = ConnectionState::draining;
    close_deadline = now + three_pto();
    probes_pending = 0;
    events.push_back(event::Closed{close});
}

// RFC 9000 §10.3.1: the peer has no state for the connection; nothing more
// is sent, and the draining period lets late packets die quietly. In the
// closing state the application already has its Closed event (with our
// reason): the reset only stops the close frames; there is no second event.
void Connection::Impl::on_stateless_reset(Instant now) {
    const bool announced = state == ConnectionState::closing;
    if (!announced)
        close = {static_cast<std::uint64_t>(CloseCode::stateless_reset),
                 "the peer sent a stateless reset: it has no state for this connection (RFC 9000 §10.3)", true, false};
    state = ConnectionState::draining;
    close_deadline = now + three_pto();
    probes_pending = 0;
    close_frame_pending = false;
    if (!announced) events.push_back(event::Closed{close});
}

void Connection::Impl::terminate() {
    state = ConnectionState::closed;
    loss.discard_all();
    close_deadline = idle_deadline = handshake_deadline = kNever;
    probes_pending = 0;
}

// ============================================================================
// Sending

// Where a CONNECTION_CLOSE goes (RFC 9000 §10.2.3): 1-RTT once the
// handshake completed, else the highest space the peer can surely read. A
// client has Handshake keys only after the server sent Handshake packets;
// a server cannot know whether the client has read its ServerHello, so it
// closes in Initial while that space lasts.
PacketSpace Connection::Impl::close_space() const {
    if (handshake_complete) return PacketSpace::application;
    if (client && has_write_keys(PacketSpace::handshake)) return PacketSpace::handshake;
    if (!loss.discarded(PacketSpace::initial)) return PacketSpace::initial;
    return PacketSpace::handshake;
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
    if (s.paced_out && in_flight < s.cwnd) s.sendable = streams.sendable_new_data(s.cwnd - in_flight);
    cwnd_usage.on_packet_sent(s);
    return !cwnd_usage.cwnd_limited(s.cwnd, cc->ssthresh());
}

bool Connection::Impl::has_eliciting_data() const {
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application})
        if (crypto_pending(s)) return true;
    if (state != ConnectionState::established) return false;
    return application_frames_pending();
}

// 1-RTT frames other than ACK waiting to be sent.
bool Connection::Impl::application_frames_pending() const {
    return handshake_done_pending || immediate_ack_pending || path_response || peer_cids.has_pending() ||
           streams.has_control_frames() || streams.has_pending_data();
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

std::size_t Connection::Impl::poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn_out) {
    // RFC 9000 §13.4.2: one codepoint for the whole datagram, as its IP header has one.
    ecn_out = tx_ecn = ecn.codepoint();
    if (state == ConnectionState::closed || state == ConnectionState::draining) return 0;
    if (out.size() < mds) throw std::invalid_argument("poll_datagram: buffer smaller than the datagram size");
    if (send_version_negotiation) return write_version_negotiation(out);
    const bool closing = state == ConnectionState::closing;
    if (closing && !close_frame_pending) return 0;
    if (amplification_blocked()) return 0;
    // RFC 9000 §12.2: the spaces with something to send, coalesced in order.
    std::array<PacketSpace, kPacketSpaces> spaces{};
    std::size_t n = 0;
    if (closing) {
        spaces[n++] = close_space();
    } else {
        for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application})
            if (space_wants(s, now)) spaces[n++] = s;
    }
    if (n == 0) {
        note_app_limited();
        return 0;
    }
    // RFC 9001 §6.6: a new key phase before the AEAD's confidentiality limit.
    if (one_rtt && handshake_confirmed && one_rtt->wants_update()) one_rtt->initiate_update();
    const std::span<std::uint8_t> datagram =
        out.first(static_cast<std::size_t>(std::min<std::uint64_t>(mds, amplification_budget())));
    // RFC 9000 §14.1: a datagram with a client's Initial, or a server's
    // ack-eliciting one, is at least 1200 bytes: the last packet is padded.
    const bool initial_first = spaces[0] == PacketSpace::initial && !closing;
    const bool pad = initial_first && (client || crypto_pending(PacketSpace::initial) ||
                                       (probes_pending > 0 && probe_space == PacketSpace::initial));
    std::size_t pos = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool last = i + 1 == n;
        const std::size_t pad_to = pad && last ? std::min(kMinDatagramSize, datagram.size()) : 0;
        pos += write_packet(datagram, pos, spaces[i], closing, pad_to, now);
        if (state == ConnectionState::closing && !closing) break;  // the keys refused: closing now
    }
    if (pos == 0) amplification_wait = !address_validated;  // nothing fit: only the limit makes room this small
    return pos;
}

// draft-cheng-iccrg-delivery-rate-estimation §3.4: the application has given
// nothing more to send while the window has room for another packet, so
// what is sent until then is delivered at the application's rate.
void Connection::Impl::note_app_limited() {
    if (state != ConnectionState::established || streams.has_unsent_data() || crypto_pending(PacketSpace::application))
        return;
    if (loss.bytes_in_flight() + mds <= cc->cwnd()) delivery.on_app_limited(loss.bytes_in_flight());
}

std::size_t Connection::Impl::write_version_negotiation(std::span<std::uint8_t> out) {
    send_version_negotiation = false;
    const std::uint32_t versions[] = {kProtocolVersion};
    const std::size_t n = wire::quic::write_version_negotiation(out, original_dcid.span(), peer_cid.span(), versions,
                                                                static_cast<std::uint8_t>(rng));
    terminate();
    st.bytes_sent += n;
    ++st.packets_sent;
    return n;
}

// An ACK is owed in `space` now.
bool Connection::Impl::ack_due(PacketSpace space, Instant now) const {
    const AckTracker& a = acks_of(space);  // fresh once its space is discarded
    return a.ack_pending() && a.ack_deadline() <= now;
}

// `s` has a packet to send now: an ACK that is due, CRYPTO data, a probe,
// or (1-RTT, once established) what the window and the pacer let go.
bool Connection::Impl::space_wants(PacketSpace s, Instant now) const {
    if (loss.discarded(s) || !has_write_keys(s)) return false;
    if (s == PacketSpace::application && state != ConnectionState::established) return false;
    if (ack_due(s, now) || (probes_pending > 0 && probe_space == s)) return true;
    if (!can_send_eliciting(now)) return false;
    if (crypto_pending(s)) return true;
    return s == PacketSpace::application && application_frames_pending();
}

// At least 2 bytes: RFC 9000 §A.2's minimum assumes reordering within the
// window, and jittered paths reorder bursts past 1 byte's 128 packets (such
// a packet would decode wrongly and fail authentication).
std::size_t Connection::Impl::pn_length(PacketSpace space) const {
    return std::max<std::size_t>(2, wire::packet_number_length(loss.next_packet_number(space), loss.largest_acked(space),
                                                               loss.has_largest_acked(space)));
}

std::size_t Connection::Impl::write_packet(std::span<std::uint8_t> datagram, std::size_t pos, PacketSpace space,
                                           bool closing, std::size_t pad_to, Instant now) {
    const wire::PacketType type = type_of(space);
    if (space == PacketSpace::application && pn_skip.due()) loss.skip_packet_number(space);
    const std::uint64_t pn = loss.next_packet_number(space);
    const std::size_t pn_len = pn_length(space);
    std::size_t overhead = 0;  // header and AEAD tag
    auto b = builder(datagram, pos, space, pn, pn_len, overhead);
    if (!b.ok()) return 0;
    wire::Writer w(b.payload_space());
    SentFrames sent_frames;
    if (obs) trace_frames.clear();
    FrameSink sink(w, sent_frames, obs ? &trace_frames : nullptr, ack_delay_exponent(type, &local_params));
    bool retransmission = false;
    const bool path_response_due = path_response.has_value();
    if (closing) {
        // An application's close acknowledges what arrived (an ACK frame may
        // share its packet, RFC 9000 §12.4): a peer whose last data we read
        // while our ACK was still delayed learns that it was delivered, not
        // only that the connection ended. A close for the peer's error does
        // not: what that peer sent is no longer of use to it.
        if (space == PacketSpace::application && close.application) write_ack_frame(sink, space, now);
        write_close_frame(sink, type);
    } else {
        write_ack_frame(sink, space, now);
        const bool probe = probes_pending > 0 && probe_space == space;
        if (probe || can_send_eliciting(now)) retransmission = write_eliciting_frames(sink, space, probe, now);
    }
    // PATH_RESPONSE datagrams are padded to 1200 bytes too (RFC 9000 §8.2.2).
    if (path_response_due && !path_response) pad_to = std::max(pad_to, std::min(kMinDatagramSize, datagram.size()));
    if (w.position() == 0 && pad_to == 0) return 0;
    const std::size_t len = seal(b, space, w.position(), pad_to);
    if (len == 0) {
        // RFC 9001 §6.6: the keys refuse past the confidentiality limit.
        if (space == PacketSpace::application && one_rtt->usage().confidentiality_exhausted())
            close_with_error(CloseCode::aead_limit_reached, "AEAD confidentiality limit reached", now);
        return 0;
    }
    // In flight for its PADDING (RFC 9002 §2), not for the few bytes the
    // header protection sample needs (RFC 9001 §5.4.2).
    const bool padded = len > overhead + std::max(w.position(), wire::quic::min_payload_length(pn_len));
    on_packet_built(pn, space, len, std::move(sent_frames), sink.eliciting(), padded, retransmission, now);
    return len;
}

void Connection::Impl::write_close_frame(FrameSink& sink, wire::PacketType type) {
    wire::ConnectionCloseFrame f;
    f.error_code = close.code;
    f.reason = close.reason;
    f.application = close.application;
    // RFC 9000 §10.2.3: an application close before 1-RTT is a transport
    // APPLICATION_ERROR, without the application's reason.
    if (close.application && type != wire::PacketType::one_rtt) {
        f.application = false;
        f.error_code = static_cast<std::uint64_t>(CloseCode::application_error);
        f.reason = {};
    }
    sink.put(f);
    close_frame_pending = false;
}

void Connection::Impl::write_ack_frame(FrameSink& sink, PacketSpace space, Instant now) {
    AckTracker& a = acks_of(space);
    if (!a.ack_pending()) return;
    auto ack = a.build_ack(now);
    if (sink.put(ack, sent::Ack{ack.largest()})) a.on_ack_sent(now);
}

// CRYPTO, HANDSHAKE_DONE, the stream set's flow-control and STREAM frames,
// and a PING when a probe carries nothing else (RFC 9002 §6.2.4). Returns
// whether any stream data was a retransmission.
bool Connection::Impl::write_eliciting_frames(FrameSink& sink, PacketSpace space, bool probe, Instant now) {
    bool retransmission = false;
    while (crypto_pending(space) && crypto_of(space).write_frame(sink)) {
    }
    if (space == PacketSpace::application && state == ConnectionState::established) {
        if (handshake_done_pending && sink.put(wire::HandshakeDoneFrame{}, sent::HandshakeDone{}))
            handshake_done_pending = false;
        // Never retransmitted (RFC 9000 §13.3): no record for loss recovery.
        if (path_response && sink.put(wire::PathResponseFrame{*path_response})) path_response.reset();
        peer_cids.write_frames(sink);
        streams.write_control_frames(sink, now, loss.rtt().smoothed());
        const bool ack_frequency_used = requests_ack_frequency();
        if (ack_frequency_used) write_ack_frequency(sink, now);
        const std::size_t before = sink.remaining();
        retransmission = streams.write_stream_frames(sink);
        if (ack_frequency_used) write_immediate_ack(sink, sink.remaining() < before, probe);
    }
    if (probe && !sink.eliciting()) sink.put(wire::PingFrame{}, sent::Ping{});
    return retransmission;
}

// ---- ACK frequency (draft-ietf-quic-ack-frequency-14) ----------------------

bool Connection::Impl::requests_ack_frequency() const {
    return cfg.ack_frequency && have_peer_params && peer_params.min_ack_delay_us.has_value();
}

// The ACK_FREQUENCY frame when one is due (ahead of the stream data, which
// fills the packet), and an IMMEDIATE_ACK left over from the packet before.
void Connection::Impl::write_ack_frequency(FrameSink& sink, Instant now) {
    if (auto f = ack_frequency.due(cc->cwnd(), mds, std::chrono::milliseconds(peer_params.max_ack_delay_ms),
                                   transport::kPacketThreshold, loss.rtt().smoothed(), now)) {
        if (sink.put(*f, sent::AckFrequency{f->sequence})) ack_frequency.on_sent(*f, now);
    }
    if (immediate_ack_pending && sink.put(wire::ImmediateAckFrame{})) immediate_ack_pending = false;
}

// An IMMEDIATE_ACK where waiting for more packets would hold the peer's ACK
// back for its max_ack_delay: in a probe (§7), and with the last data the
// application gave (§8.1.1: the flight ends here, no packet follows to
// complete a threshold). Never retransmitted (§5); when the stream data
// left no room, the next packet carries it.
void Connection::Impl::write_immediate_ack(FrameSink& sink, bool stream_data_written, bool probe) {
    if (ack_frequency.threshold() <= 1 || !(probe || (stream_data_written && !streams.has_unsent_data()))) return;
    if (!sink.put(wire::ImmediateAckFrame{})) immediate_ack_pending = true;
}

// ACK_FREQUENCY and IMMEDIATE_ACK frames are for a side that advertised
// min_ack_delay; to one that did not they are unknown frame types (RFC 9000
// §12.4). A requested delay below our min_ack_delay is a PROTOCOL_VIOLATION
// (§4). Returns false when the connection closed.
bool Connection::Impl::on_ack_frequency_frame(const wire::Frame& frame, Instant now) {
    if (!local_params.min_ack_delay_us) {
        close_with_error(CloseCode::frame_encoding_error,
                         fmt::format("{} frame, but min_ack_delay was not advertised", wire::frame_name(frame)), now);
        return false;
    }
    AckTracker& acks = acks_of(PacketSpace::application);
    if (const auto* f = std::get_if<wire::AckFrequencyFrame>(&frame)) {
        if (f->requested_max_ack_delay_us < *local_params.min_ack_delay_us) {
            close_with_error(CloseCode::protocol_violation,
                             fmt::format("ACK_FREQUENCY frame: requested max ack delay {} us is below our "
                                         "min_ack_delay of {} us",
                                         f->requested_max_ack_delay_us, *local_params.min_ack_delay_us),
                             now);
            return false;
        }
        acks.set_frequency(f->sequence, {f->ack_eliciting_threshold,
                                         std::chrono::microseconds(f->requested_max_ack_delay_us),
                                         f->reordering_threshold});
    } else {
        acks.request_immediate_ack(now);
    }
    return true;
}

// Hands the sealed packet to loss recovery, the controller and the pacer.
void Connection::Impl::on_packet_built(std::uint64_t pn, PacketSpace space, std::size_t len, SentFrames frames,
                                       bool eliciting, bool padded, bool retransmission, Instant now) {
    SentPacket p;
    p.pn = pn;
    p.time_sent = now;
    p.bytes = static_cast<std::uint32_t>(len);
    p.ack_eliciting = eliciting;
    p.in_flight = eliciting || padded;  // RFC 9002 §2
    p.frames = std::move(frames);
    p.ecn = tx_ecn;
    ecn.on_packet_sent(tx_ecn, space);
    trace_ecn_state(now);
    if (p.in_flight) {
        if (loss.bytes_in_flight() == 0 && last_eliciting_sent != Instant{} && now - last_eliciting_sent > pto_period()) {
            cc->on_idle_restart(now);
        }
        const std::uint64_t in_flight = loss.bytes_in_flight() + len;
        p.rate = delivery.on_packet_sent(now, loss.bytes_in_flight(), len);
        if (cfg.pacing) pacer.on_sent(now, len);
        // Handshake packets are never what the window limits (RFC 9002 §7.8).
        const bool app_limited = space != PacketSpace::application || note_cwnd_usage(p.pn, in_flight, now);
        cc->on_packet_sent(cc::PacketSent{now, p.pn, len, in_flight, app_limited, p.rate.is_app_limited});
    }
    if (eliciting) {
        last_eliciting_sent = now;
        // RFC 9000 §10.1: the first ack-eliciting packet after a receive restarts the idle timer.
        if (!sent_eliciting_since_receive) reset_idle_timer(now);
        sent_eliciting_since_receive = true;
        if (probes_pending > 0) --probes_pending;
    }
    if (retransmission) ++st.packets_retransmitted;
    loss.on_packet_sent(std::move(p), space);
    // ConnectionLimits::sent_packets_tracked: a peer that never acknowledges
    // leaves every packet this side sends (ACK-only ones too) on record.
    if (loss.outstanding(space) > cfg.limits.sent_packets_tracked)
        close_with_error(CloseCode::protocol_violation,
                         fmt::format("the peer left more than {} of our packets unacknowledged",
                                     cfg.limits.sent_packets_tracked),
                         now);
    // RFC 9001 §4.9.1: a client is done with Initial packets once it sends a Handshake one.
    if (client && space == PacketSpace::handshake) discard_space(PacketSpace::initial);
    ++st.packets_sent;
    st.bytes_sent += len;
    if (!address_validated) unvalidated_sent += len;
    trace_sent(type_of(space), pn, len, now);
}

std::size_t Connection::Impl::seal_payload(std::span<std::uint8_t> out, PacketSpace space, std::uint64_t pn,
                                           std::span<const std::uint8_t> payload, std::size_t pad_to) {
    if (!has_write_keys(space)) return 0;
    std::size_t overhead = 0;
    auto b = builder(out, 0, space, pn, 4, overhead);
    wire::Writer w(b.payload_space());
    if (!b.ok() || !w.bytes(payload)) return 0;
    return seal(b, space, w.position(), pad_to);
}

// A packet of `space` to the peer at datagram[pos..]; overhead: its header and AEAD tag.
wire::quic::PacketBuilder Connection::Impl::builder(std::span<std::uint8_t> datagram, std::size_t pos,
                                                    PacketSpace space, std::uint64_t pn, std::size_t pn_len,
                                                    std::size_t& overhead) const {
    if (space == PacketSpace::application) {
        const wire::quic::ShortHeader h{peer_cid, pn, pn_len, false, false};
        overhead = wire::quic::packet_overhead(h);
        return {datagram, pos, h};
    }
    wire::quic::LongHeader h;
    h.type = space == PacketSpace::initial ? wire::quic::LongType::initial : wire::quic::LongType::handshake;
    h.dcid = peer_cid;
    h.scid = local_cid;
    if (space == PacketSpace::initial) h.token = retry_token;  // RFC 9000 §17.2.2 (a client's, after a Retry)
    h.packet_number = pn;
    h.pn_length = pn_len;
    // Long-header packets stay small (the handshake); 4 Length bytes if not.
    h.length_bytes = datagram.size() - pos > 16000 ? 4 : 2;
    overhead = wire::quic::packet_overhead(h);
    return {datagram, pos, h};
}

// Seals with the space's write keys; 0 if they refuse (RFC 9001 §6.6).
std::size_t Connection::Impl::seal(wire::quic::PacketBuilder& b, PacketSpace space, std::size_t payload_len,
                                   std::size_t pad_to) {
    return space == PacketSpace::application ? b.finish(payload_len, *one_rtt, pad_to)
                                             : b.finish(payload_len, *write_keys_of(space), pad_to);
}

// ============================================================================
// Timers

Duration Connection::Impl::negotiated_idle_timeout() const {
    Duration local = cfg.idle_timeout;
    // RFC 9000 §10.1: the smaller of both sides' values. The peer's may be any
    // varint (up to 2^62-1 ms, past what Duration holds in nanoseconds), so it
    // is compared in milliseconds and converted only when it is the smaller.
    const std::uint64_t peer_ms = have_peer_params ? peer_params.max_idle_timeout_ms : 0;
    const auto local_ms = std::chrono::ceil<std::chrono::milliseconds>(local).count();
    if (peer_ms > 0 && local_ms > 0 && peer_ms < static_cast<std::uint64_t>(local_ms)) {
        local = std::min(local, Duration(std::chrono::milliseconds(static_cast<std::int64_t>(peer_ms))));
    }
    return local;
}

// RFC 9000 §10.1: never shorter than three PTOs.
Duration Connection::Impl::effective_idle_timeout() const { return std::max(idle_timeout, three_pto()); }

void Connection::Impl::reset_idle_timer(Instant now) { idle_deadline = now + effective_idle_timeout(); }

std::uint64_t Connection::Impl::amplification_budget() const {
    if (address_validated) return std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t allowed = kAmplificationFactor * unvalidated_received;  // datagram bytes: no overflow
    return allowed > unvalidated_sent ? allowed - unvalidated_sent : 0;
}

bool Connection::Impl::amplification_blocked() const {
    return amplification_wait || amplification_budget() < kMinAmplificationPacket;
}

Instant Connection::Impl::next_timeout() const {
    if (state == ConnectionState::closed) return kNever;
    if (state == ConnectionState::closing || state == ConnectionState::draining) {
        return (close_frame_pending && !amplification_blocked()) || send_version_negotiation ? Instant::min()
                                                                                             : close_deadline;
    }
    // While the amplification limit holds the server back nothing can be sent
    // until the client speaks again, so a probe timeout that has fired and
    // waits for its probes is no deadline (RFC 9002 §6.2.2.1).
    if (amplification_blocked()) {
        const Instant t = std::min(idle_deadline, handshake_deadline);
        return probes_pending > 0 ? t : std::min(t, loss.timer());
    }
    Instant t = std::min({loss.timer(), idle_deadline, handshake_deadline});
    // A discarded space's tracker is a fresh one (discard_space): not read.
    transport::for_each_space(loss.live_spaces(), [&](PacketSpace s) {
        const AckTracker& a = acks_of(s);
        if (a.ack_pending()) t = std::min(t, a.ack_deadline());
    });
    if (probes_pending > 0) return Instant::min();
    // The window first: a bulk sender is mostly window-limited, and
    // has_eliciting_data() asks every stream.
    if (loss.bytes_in_flight() < cc->cwnd() && has_eliciting_data()) {
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
    if (one_rtt) one_rtt->discard_expired(now);  // RFC 9001 §6.5: old read keys after 3 PTOs
    if (loss.timer() <= now) {
        auto out = loss.on_timeout(now);
        if (!out.lost.empty()) on_lost_packets(out.lost, out.persistent_congestion, out.space, now);
        if (out.pto) {
            ++st.pto_count;
            probes_pending = out.probes;
            probe_space = out.space;
            // RFC 9002 §6.2.4: a handshake probe resends the space's
            // unacknowledged CRYPTO data, the most useful thing it can carry.
            if (out.space != PacketSpace::application) crypto_of(out.space).mark_all_lost();
            spdlog::debug("ndm: PTO #{} ({} in flight)", loss.pto_count(), loss.bytes_in_flight());
        }
        trace_metrics(now);
    }
}

// ============================================================================
// Public API

void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now) {
    on_datagram(datagram, now, Ecn::not_ect);
}
void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
    impl_->last_now = now;
    impl_->on_datagram(datagram, now, ecn);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now) {
    Ecn ecn = Ecn::not_ect;
    return poll_datagram(out, now, ecn);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn) {
    impl_->last_now = now;
    return impl_->poll_datagram(out, now, ecn);
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
    if (impl_->state != ConnectionState::established) return std::nullopt;
    return impl_->streams.open();
}

std::optional<StreamId> Connection::open_uni_stream() {
    if (impl_->state != ConnectionState::established) return std::nullopt;
    return impl_->streams.open(false);
}

std::size_t Connection::write(StreamId id, std::span<const std::uint8_t> data, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) return 0;
    std::size_t n = s->send.write(data);
    if (n < data.size()) s->writable_wanted = true;
    if (fin && n == data.size()) s->send.finish();
    return n;
}

std::span<std::uint8_t> Connection::prepare(StreamId id, std::size_t max) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) return {};
    // Short for want of buffer space (not just where the ring wraps): the
    // application waits for StreamWritable, as after a partial write().
    if (s->send.capacity() < max) s->writable_wanted = true;
    return s->send.prepare(max);
}

void Connection::commit(StreamId id, std::size_t n, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: commit without a prepared buffer", id));
        return;
    }
    s->send.commit(n);
    if (fin) s->send.finish();
}

bool Connection::set_stream_source(StreamId id, StreamSource source) {
    StreamState* s = impl_->writable_stream(id);
    return s != nullptr && s->send.set_source(std::move(source));
}

std::size_t Connection::generate(StreamId id, std::size_t n, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s || !s->send.generated()) return 0;
    const std::size_t taken = s->send.generate(n);
    if (taken < n) s->writable_wanted = true;
    if (fin && taken == n) s->send.finish();
    return taken;
}

void Connection::finish(StreamId id) {
    if (impl_->state != ConnectionState::established) return;
    impl_->streams.require(id).send.finish();
}

std::size_t Connection::read(StreamId id, std::span<std::uint8_t> out) {
    StreamState* s = impl_->streams.find(id);
    if (!s) return 0;
    s->readable_notified = false;
    const std::size_t n = s->recv.read(out);
    impl_->streams.on_consumed(id, n);
    return n;
}

bool Connection::set_stream_sink(StreamId id, StreamSink sink) { return impl_->streams.set_sink(id, std::move(sink)); }

std::span<const std::uint8_t> Connection::peek(StreamId id) {
    StreamState* s = impl_->streams.find(id);
    if (!s) return {};
    // Looked at, maybe not taken: more data must raise StreamReadable again.
    s->readable_notified = false;
    return s->recv.peek();
}

void Connection::consume(StreamId id, std::size_t n) {
    StreamState* s = impl_->streams.find(id);
    if (!s) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: consume of bytes never peeked", id));
        return;
    }
    s->readable_notified = false;
    s->recv.consume(n);
    impl_->streams.on_consumed(id, n);
}

bool Connection::stream_finished(StreamId id) const { return impl_->streams.finished(id); }

std::size_t Connection::stream_readable(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    return s ? s->recv.readable() : 0;
}
bool Connection::stream_send_acked(StreamId id) const { return impl_->streams.send_acked(id); }

std::size_t Connection::stream_send_capacity(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    if (!s || impl_->state != ConnectionState::established) return 0;
    return s->send.capacity();
}

std::uint64_t Connection::stream_send_limit(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    if (!s || impl_->state != ConnectionState::established) return 0;
    return impl_->streams.new_data_limit(*s);
}

void Connection::set_receive_windows(std::uint64_t max_data, std::uint64_t max_stream_data, bool autotune) {
    if (max_data == 0 || max_stream_data == 0) throw std::invalid_argument("receive windows must be positive");
    impl_->streams.set_receive_windows(max_data, max_stream_data, autotune);
}

void Connection::cap_receive_window(std::uint64_t bytes) {
    if (bytes == 0) throw std::invalid_argument("a receive window cap must be positive");
    impl_->streams.cap_receive_window(bytes);
}

void Connection::set_congestion_control(const std::string& name, const std::string& options) {
    auto& d = *impl_;
    cc::Params p;
    p.max_datagram_size = d.mds;
    p.now = d.last_now;
    auto fresh = cc::make(name, p, options);  // throws before anything changes
    d.cfg.cc = name;
    d.cfg.cc_options = options;
    if (d.last_now > d.cc_state_since) d.account_cc_state(d.last_now);
    d.cc = std::move(fresh);
    d.cc_state_since = d.last_now;
    d.adopt_cc_state(d.last_now);
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
HandshakeSummary Connection::handshake_summary() const {
    HandshakeSummary h;
    if (!impl_->tls) return h;
    h.retry = impl_->retry_scid.has_value();
    h.alpn = impl_->tls->alpn();
    if (const auto suite = impl_->tls->suite()) h.cipher_suite = std::string(crypto::to_string(*suite));
    if (impl_->have_peer_params) h.peer = wire::to_public(impl_->peer_params);
    return h;
}
std::span<const std::uint8_t> Connection::local_cid() const { return impl_->local_cid.span(); }
std::span<const std::uint8_t> Connection::peer_cid() const { return impl_->peer_cid.span(); }

}  // namespace ndm
