// Connection::Impl's TLS drive and key install (connection_impl.hpp): the
// TLS session started with this side's transport parameters (RFC 9001 §8.2),
// CRYPTO frames reassembled and handed to it per encryption level (RFC 9000
// §19.6, RFC 9001 §4.1.3), and what it produces taken back: CRYPTO data per
// packet number space, secrets that become the space's packet keys (RFC 9001
// §5, §6), the peer's transport parameters with the connection IDs they must
// name (RFC 9000 §7.3), failure (RFC 9001 §4.8) and completion and
// confirmation (§4.1.2); and the discard of a space with its keys and its
// packets in flight (RFC 9001 §4.9, RFC 9002 §6.4).
#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

namespace {

// RFC 9001 §4.1.4: the encryption level whose CRYPTO data a space carries.
crypto::EncryptionLevel level_of(PacketSpace s) {
    if (s == PacketSpace::initial) return crypto::EncryptionLevel::initial;
    if (s == PacketSpace::handshake) return crypto::EncryptionLevel::handshake;
    return crypto::EncryptionLevel::one_rtt;
}

}  // namespace

// ============================================================================
// Driving TLS (RFC 9001 §4)

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
    configure_resumption(c);
    try {
        tls.emplace(std::move(c));
    } catch (const tls::TlsSetupError& e) {
        throw std::invalid_argument(e.what());
    }
    tls->start();
    // A resuming client's early secret comes with its ClientHello.
    for (const tls::SecretEvent& e : tls->take_secrets()) install_secret(e);
    if (client && zero_rtt_keys) start_early_data();
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application}) {
        const auto out = tls->take_output(level_of(s));
        if (!out.empty()) crypto_of(s).write(out);
    }
}

// Resumption (RFC 9001 §4.5): a client's ticket must be for this server and
// protocol (RFC 8446 §4.6.1: a ticket is bound to its server; §4.2.10: 0-RTT
// to its ALPN); a server's tickets and 0-RTT acceptance.
void Connection::Impl::configure_resumption(tls::TlsConfig& c) const {
    const TlsOptions& o = cfg.tls;
    c.session_tickets = o.session_tickets || (!client && o.early_data);
    c.anti_replay_window = o.anti_replay_window;
    if (!client) {
        c.early_data = o.early_data;
        return;
    }
    if (!o.resume) return;
    const tls::ResumptionTicket& t = *o.resume;
    if (t.server_name != o.server_name)
        throw std::invalid_argument(fmt::format("TLS: the session ticket is for server '{}', not '{}'", t.server_name,
                                                o.server_name));
    if (std::find(o.alpn.begin(), o.alpn.end(), t.alpn) == o.alpn.end())
        throw std::invalid_argument(fmt::format("TLS: the session ticket is for ALPN '{}', which is not offered", t.alpn));
    c.resume_session = t.session;
    c.early_data = o.early_data && t.early_data;
}

// Each NewSessionTicket becomes an event::SessionTicket with what a 0-RTT
// flight needs to know of this server (RFC 9000 §7.4.1): its transport
// parameters as it sent them.
void Connection::Impl::take_tickets() {
    for (auto& t : tls->take_tickets()) {
        if (!tls->peer_transport_parameters()) continue;
        event::SessionTicket e;
        e.ticket.session = std::move(t.session);
        e.ticket.transport_parameters = *tls->peer_transport_parameters();
        e.ticket.server_name = cfg.tls.server_name;
        e.ticket.alpn = tls->alpn();
        e.ticket.early_data = t.early_data;
        events.emplace_back(std::move(e));
    }
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
    if (client) take_tickets();
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

// RFC 9001 §4.8: a TLS failure closes with CRYPTO_ERROR + its alert (or a
// transport error), naming the alert and the cause.
void Connection::Impl::on_tls_error(Instant now) {
    const tls::TlsError& e = *tls->error();
    start_close(e.code, e.alert_name.empty() ? e.message : fmt::format("TLS alert {}: {}", e.alert_name, e.message),
                false, now);
}

// ============================================================================
// Packet protection keys (RFC 9001 §5)

void Connection::Impl::install_initial_keys() {
    initial.emplace(crypto::initial_keys(initial_dcid.span(), !client, version));
}

// A secret TLS made becomes the packet keys of its space (§5.1); the 1-RTT
// keys, which update together (§6), once both directions' are known.
void Connection::Impl::install_secret(const tls::SecretEvent& e) {
    const bool read = e.direction == tls::Direction::read;
    if (e.level == crypto::EncryptionLevel::handshake) {
        (read ? handshake_read : handshake_write).emplace(crypto::derive_packet_keys(e.suite, e.secret, version));
        // RFC 9002 §6.2.2.1: a client probes Initial until it has Handshake keys.
        if (client && !read) loss.set_has_handshake_keys(true);
    } else if (e.level == crypto::EncryptionLevel::one_rtt) {
        (read ? one_rtt_read_secret : one_rtt_write_secret) = e;
        if (one_rtt_read_secret && one_rtt_write_secret && !one_rtt) {
            one_rtt.emplace(e.suite, version, one_rtt_read_secret->secret, one_rtt_write_secret->secret);
            one_rtt_read_secret.reset();
            one_rtt_write_secret.reset();
        }
    } else if (e.level == crypto::EncryptionLevel::zero_rtt) {
        // RFC 9001 §4.6.1, §5.1: the client's early traffic secret, for its
        // writing (client) or the server's reading.
        zero_rtt_keys.emplace(crypto::derive_packet_keys(e.suite, e.secret, version));
    }
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
    return one_rtt.has_value() || sending_zero_rtt();
}

// ============================================================================
// The peer's transport parameters and completion (RFC 9000 §7.3, RFC 9001 §4.1.2)

void Connection::Impl::on_peer_params(std::span<const std::uint8_t> data, Instant now) {
    wire::Error err;
    if (!wire::decode_transport_params(data, client ? wire::Role::server : wire::Role::client, peer_params, err)) {
        close_with_error(CloseCode::transport_parameter_error, err.what, now);
        return;
    }
    if (!check_peer_cids(now) || !check_peer_versions(now)) return;
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

// RFC 9368 §4 (which RFC 9369 §4 makes mandatory with version 2): the
// peer's Chosen Version must be the version in use, and a server's must be
// one the client offered (ndm's clients offer only the one they use). Absent
// Version Information is accepted: ndm never reacts to Version Negotiation.
bool Connection::Impl::check_peer_versions(Instant now) {
    const auto& vi = peer_params.version_information;
    const std::uint32_t in_use = crypto::version_number(version);
    if (!vi || vi->chosen == in_use) return true;
    close_with_error(CloseCode::version_negotiation_error,
                     fmt::format("peer's chosen version {:#010x} is not the version in use, {:#010x}", vi->chosen,
                                 in_use),
                     now);
    return false;
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
    if (client && !on_early_data_outcome(now)) return;
    if (!client && tls->early_data_accepted()) early_data = EarlyData::accepted;
    if (!client) {
        // RFC 9001 §4.1.2: the server's handshake is confirmed on completion,
        // and its Handshake packets are done (§4.9.2).
        handshake_confirmed = true;
        handshake_done_pending = true;
        new_token_pending = !cfg.token_to_issue.empty();
        loss.set_handshake_confirmed(true);
        handshake_discard_due = true;  // once the packet being read is done
    }
    issue_connection_ids();  // RFC 9000 §5.1.1: up to the peer's active_connection_id_limit
    spdlog::debug("ndm: {} established, datagram size {}", client ? "client" : "server", mds);
    // Built in place: from a temporary, GCC 12 warns that the variant's other
    // alternatives may be uninitialized in this file (a false positive).
    events.emplace_back(std::in_place_type<event::Established>);
}

// ============================================================================
// Discarding a space (RFC 9001 §4.9, RFC 9002 §6.4)

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

}  // namespace ndm
