// Connection::Impl's lifecycle (connection_impl.hpp): construction (the
// configuration's ranges, this side's transport parameters, RFC 9000 §7.3,
// §18.2; connect, and accept with its first-datagram checks, §14.1, §7.2,
// §8.1), closing (the closing and draining states, RFC 9000 §10.2; a
// stateless reset, §10.3) and the timers (the idle timeout, RFC 9000 §10.1;
// the handshake deadline; the loss and probe timeouts LossDetector keeps,
// RFC 9002 §6.2; and the anti-amplification budget that holds a server back,
// RFC 9000 §8.1).
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

// Below this budget no packet is built: a long header (27 bytes), the tag and
// an ACK or a close frame need about this much.
constexpr std::uint64_t kMinAmplificationPacket = 64;
// ConnectionLimits bounds: more active IDs than this only cost memory (one
// spare suffices for a migration, §9.5); fewer tracked packets than this would close real flows.
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

CryptoStream::Config crypto_config(const ConnectionConfig& cfg) { return {cfg.limits.crypto_buffer}; }

// The public version numbers (ndm/connection.hpp) and the ones crypto keys
// its labels and salts by (crypto/quic_version.hpp) are the same values.
static_assert(crypto::kVersion1Number == kQuicVersion1 && crypto::kVersion2Number == kQuicVersion2);

// A secret of its own for one use: from ConnectionConfig::random_bytes when
// set (sockets), else from the seed and `salt` (reproducible runs).
std::uint64_t secret_seed(const ConnectionConfig& cfg, std::uint64_t salt) {
    std::uint64_t seed = cfg.seed ^ salt;
    if (cfg.random_bytes) {
        std::array<std::uint8_t, 8> b{};
        cfg.random_bytes(b);
        seed = 0;
        for (const std::uint8_t x : b) seed = seed << 8 | x;
    }
    return util::splitmix64(seed);
}

// The secret that places skipped packet numbers (transport/pn_skip.hpp).
std::uint64_t skip_seed(const ConnectionConfig& cfg) { return secret_seed(cfg, 0x5b1d'9e37'79b9'7f4aull); }

// The secret of the spin bit's participation and random bits (transport/spin_bit.hpp).
std::uint64_t spin_seed(const ConnectionConfig& cfg) { return secret_seed(cfg, 0x3c6e'f372'fe94'f82bull); }

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
      spin(is_client, config.spin_bit, spin_seed(config)),
      acks{AckTracker(ack_config(PacketSpace::initial, config)), AckTracker(ack_config(PacketSpace::handshake, config)),
           AckTracker(ack_config(PacketSpace::application, config))},
      ecn(config.ecn),
      streams(StreamSet::Config{is_client, config.stream_send_buffer, config.initial_max_data,
                                config.initial_max_stream_data, config.autotune_receive_windows, config.initial_max_streams,
                                config.initial_max_streams_uni, config.limits.stream_ranges,
                                config.limits.stream_ranges_total},
              events),
      datagrams(config.datagram_send_buffer, config.limits.datagram_receive_buffer, events) {
    if (cfg.max_datagram_size < kMinDatagramSize || cfg.max_datagram_size > kMaxDatagramSize) {
        throw std::invalid_argument(fmt::format("max datagram size {} outside {}..{} bytes",
                                                cfg.max_datagram_size, kMinDatagramSize, kMaxDatagramSize));
    }
    if (cfg.max_pto_backoff < Duration::zero()) throw std::invalid_argument("max_pto_backoff must not be negative");
    if (cfg.max_ack_ranges < 1 || cfg.max_ack_ranges > wire::kMaxAckRanges)
        throw std::invalid_argument(
            fmt::format("max ACK ranges {} outside 1..{}", cfg.max_ack_ranges, wire::kMaxAckRanges));
    if (cfg.max_datagram_frame_size > wire::kVarintMax)
        throw std::invalid_argument(
            fmt::format("max_datagram_frame_size {} exceeds 2^62-1", cfg.max_datagram_frame_size));
    if (cfg.application_params.size() > wire::kMaxApplicationParams) {
        throw std::invalid_argument(fmt::format("application parameters of {} bytes exceed {} bytes",
                                                cfg.application_params.size(), wire::kMaxApplicationParams));
    }
    local_cid = random_cid(cfg, rng);
    local_cids.set_initial(local_cid);
    early_packets = transport::EarlyPackets(cfg.limits.early_packets);
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
    local_params.max_datagram_frame_size = cfg.max_datagram_frame_size;  // RFC 9221 §3; 0: not sent
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

wire::ConnectionId Connection::Impl::new_local_cid() { return random_cid(cfg, rng); }

// Our transport parameters, once the connection IDs they name are known.
// RFC 9000 §7.3: both sides state the Source Connection ID of their first
// packet, and the server the Destination Connection ID of the client's first
// one, so that a rewritten ID in an unprotected header is caught.
void Connection::Impl::encode_local_params(const ParamsEdit& edit, const ParamsBytesEdit& bytes_edit) {
    local_params.initial_source_connection_id = local_cid;
    if (!client) local_params.original_destination_connection_id = original_dcid;
    if (!client) local_params.retry_source_connection_id = retry_scid;
    // RFC 9368 §3, RFC 9369 §4: a client offers only the version it chose (it
    // does not follow a server's compatible switch); a server lists all it speaks.
    wire::VersionInformation vi{crypto::version_number(version), {crypto::version_number(version)}};
    if (!client) vi.available.assign(std::begin(wire::quic::kSupportedVersions), std::end(wire::quic::kSupportedVersions));
    local_params.version_information = std::move(vi);
    if (!client && cfg.stateless_reset_token) local_params.stateless_reset_token = cfg.stateless_reset_token(local_cid.span());
    if (!client) local_params.disable_active_migration = cfg.disable_active_migration;
    if (edit) edit(local_params);
    encoded_params.resize(128 + wire::kMaxApplicationParams);
    wire::Writer w(encoded_params);
    if (!wire::encode_transport_params(w, local_params, client ? wire::Role::client : wire::Role::server))
        throw std::logic_error("transport parameters do not fit");
    encoded_params.resize(w.position());
    if (bytes_edit) bytes_edit(encoded_params);
}

std::unique_ptr<Connection> Connection::Impl::connect(const ConnectionConfig& config, Instant now,
                                                      const ParamsEdit& edit, const ParamsBytesEdit& bytes_edit) {
    const std::optional<crypto::QuicVersion> version = crypto::known_version(config.version);
    if (!version) throw std::invalid_argument(fmt::format("QUIC version {:#010x}: ndm speaks {:#010x} and {:#010x}",
                                                          config.version, kQuicVersion1, kQuicVersion2));
    auto impl = std::make_unique<Impl>(config, true, now);
    impl->version = *version;
    impl->original_dcid = random_cid(impl->cfg, impl->rng);
    impl->initial_dcid = impl->original_dcid;
    impl->set_initial_peer_cid(impl->original_dcid);  // until the server's first packet names its own
    impl->retry_token = config.address_token;         // RFC 9000 §8.1.3: a NEW_TOKEN token, until a Retry's replaces it
    impl->encode_local_params(edit, bytes_edit);
    impl->install_initial_keys();
    impl->start_tls();
    impl->attach_observer(config.observer, now);
    spdlog::debug("ndm: client connection created, cc={}", config.cc);
    return std::unique_ptr<Connection>(new Connection(std::move(impl)));
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
    if (!other_version) impl->version = *crypto::known_version(first.version);  // RFC 9369 §4.1: the original version
    impl->initial_dcid = wire::ConnectionId::from(first.dcid);
    const bool after_retry = retry && !retry->from_new_token;
    impl->original_dcid = after_retry ? wire::ConnectionId::from(retry->original_dcid) : impl->initial_dcid;
    if (after_retry) impl->retry_scid = impl->initial_dcid;
    impl->set_initial_peer_cid(wire::ConnectionId::from(first.scid));
    impl->encode_local_params(edit, bytes_edit);
    impl->attach_observer(config.observer, now);
    // RFC 9000 §8.1: a returned Retry or NEW_TOKEN token proves the address (§8.1.2, §8.1.3).
    impl->address_validated = retry != nullptr;
    if (other_version) {
        impl->offered_version = first.version;
        impl->send_version_negotiation = true;
        impl->state = ConnectionState::closing;
        impl->close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
                       fmt::format("client offered version {:#010x}; this endpoint speaks {:#010x} and {:#010x}",
                                   first.version, kQuicVersion1, kQuicVersion2),
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
    return amplification_room(unvalidated_received, unvalidated_sent);
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
        Instant t = std::min(idle_deadline, handshake_deadline);
        // A path that stays silent still fails its validation (RFC 9000 §8.2.4).
        if (state == ConnectionState::established) t = std::min(t, paths.next_timer());
        return probes_pending > 0 ? t : std::min(t, loss.timer());
    }
    Instant t = std::min({loss.timer(), idle_deadline, handshake_deadline});
    if (state == ConnectionState::established) t = std::min(t, paths.next_timer());
    // A discarded space's tracker is a fresh one (discard_space): not read.
    transport::for_each_space(loss.live_spaces(), [&](PacketSpace s) {
        const AckTracker& a = acks_of(s);
        // A server's ACK of 0-RTT packets waits for its 1-RTT keys (RFC 9001 §4.6.1: none in 0-RTT).
        const bool can_ack = s != PacketSpace::application || state != ConnectionState::handshaking || one_rtt;
        if (a.ack_pending() && can_ack) t = std::min(t, a.ack_deadline());
    });
    if (probes_pending > 0) return Instant::min();
    // The window first: a bulk sender is mostly window-limited, and
    // has_eliciting_data() asks every stream.
    if (loss.bytes_in_flight() < cc->cwnd() && has_eliciting_data()) {
        t = std::min(t, cfg.pacing ? pacer.next_send_time(last_now) : last_now);
    }
    return std::min(t, coalescing_deadline());
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
    if (state == ConnectionState::established) on_path_timeout(now);
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

}  // namespace ndm
