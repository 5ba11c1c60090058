// Connection::Impl's receive path (connection_impl.hpp): a datagram's
// packets opened in place (RFC 9001 §5.3-5.5; the keys of a space, §4.1.4,
// §4.9, §5.7), counted towards the anti-amplification limit (RFC 9000 §8.1),
// Version Negotiation and Retry taken (§6.2, §17.2.5), every frame decoded
// and checked against its packet type before any is acted on (§12.4), and
// each dispatched (§19): to the stream set, to TLS (connection_tls.cpp), to
// recovery (connection_recovery.cpp), to closing (connection_lifecycle.cpp),
// and the ACK frequency extension's two frames
// (draft-ietf-quic-ack-frequency-14 §4, §5).
#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

namespace {

// RFC 9000 §12.4 Table 3.
bool frame_allowed(const wire::Frame& f, wire::PacketType type, bool zero_rtt) {
    const bool one_rtt = type == wire::PacketType::one_rtt;
    const auto kind = zero_rtt  ? wire::PacketKind::zero_rtt
                      : one_rtt ? wire::PacketKind::one_rtt
                      : type == wire::PacketType::initial ? wire::PacketKind::initial
                                                          : wire::PacketKind::handshake;
    return wire::frame_allowed(f, kind);
}

}  // namespace

// ============================================================================
// Receiving

// Where the packets of a datagram open (RFC 9001 §5.3-5.4: unprotected
// headers, plaintext at each packet's offset); the caller's datagram stays as
// received. One buffer per thread, not one per connection: nothing keeps the
// plaintext once on_datagram returns (STREAM data is copied into its
// stream, CRYPTO data into TLS, reasons and CIDs into their own storage),
// and with many connections a buffer each was a cold cache line for every
// 64 bytes received (bench/RESULTS.md, "Competing flows"). Its size only
// grows: no bytes to clear or copy.
std::span<std::uint8_t> transport::open_buffer(std::size_t size) {
    thread_local std::vector<std::uint8_t> buffer;
    if (buffer.size() < size) buffer.resize(size);
    return buffer;
}

void Connection::Impl::on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn_codepoint,
                                   PathId path) {
    if (state == ConnectionState::closed || state == ConnectionState::draining) return;
    rx_path = path;
    if (!accept_path(datagram.size())) {
        ++st.packets_dropped;
        return;
    }
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
    if (!early_packets.empty()) replay_early_packets(now);
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
    // Other versions are not spoken (RFC 9369 §4.1: a long header of another
    // version than the connection's is dropped); 0-RTT only by a server
    // (RFC 9000 §17.2.3).
    const bool zero = v.kind == PacketKind::zero_rtt;
    const bool other_version = v.kind != PacketKind::one_rtt && v.version != crypto::version_number(version);
    if ((v.kind != PacketKind::initial && v.kind != PacketKind::handshake && v.kind != PacketKind::one_rtt && !zero) ||
        (zero && client) || other_version) {
        ++st.packets_dropped;
        return true;
    }
    const PacketSpace space = space_of(v.kind);
    const wire::PacketType type = type_of(space);
    // RFC 9000 §5.1: every ID this side issued and has not seen retired; a
    // client's Initial and 0-RTT packets name its first DCID until it has the server's.
    const bool cid_ok = std::ranges::equal(v.dcid, local_cid.span()) ||
                        (space == PacketSpace::application && local_cids.contains(v.dcid)) ||
                        (!client && (v.kind == PacketKind::initial || zero) &&
                         std::ranges::equal(v.dcid, initial_dcid.span()));
    // RFC 9001 §4.9: packets of a discarded space are dropped, and so are
    // those of a space whose keys this side does not have yet (§4.1.4); §5.7:
    // a server processes no 1-RTT packet before its handshake completes, and
    // holds one that overtook the client's Finished (as it holds a 0-RTT
    // packet that overtook the ClientHello) until it can.
    const bool early_one_rtt = !client && space == PacketSpace::application && !zero && !handshake_complete;
    const bool keys = zero ? zero_rtt_keys.has_value() : has_read_keys(space);
    if (cid_ok && !loss.discarded(space) && ((zero && !keys) || early_one_rtt) && hold_early_packet(v)) return true;
    if (!cid_ok || loss.discarded(space) || !keys || early_one_rtt) {
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
    const auto err = zero ? wire::quic::open_packet(datagram, into, v, &*zero_rtt_keys, largest, pkt)
                     : space == PacketSpace::application
                         ? wire::quic::open_packet(datagram, into, v, &*one_rtt, largest, now, pto_period(), pkt)
                         : wire::quic::open_packet(datagram, into, v, read_keys_of(space), largest, pkt);
    if (err != wire::quic::OpenError::none) return on_open_error(err, now);
    rx_opened = true;
    rx_zero_rtt = zero;
    // RFC 9001 §4.9.3: a server may discard its 0-RTT keys once a 1-RTT packet opens.
    if (!client && space == PacketSpace::application && !zero && zero_rtt_keys) {
        zero_rtt_keys.reset();
        st.packets_dropped += early_packets.drop(true);
    }
    // RFC 9000 §8.1: the limit counts what the client sent, once per datagram;
    // a Handshake packet proves the address (§8.1, only the client can have
    // its keys). Another path than the active one counts its own (§9.3.1).
    if (!address_validated && rx_path == paths.active().id) {
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
    rx_dcid = v.dcid;
    if (!decode_frames(pkt.payload, type, ack_eliciting, now)) return false;
    if (!tracker.on_packet_received(pkt.packet_number, ack_eliciting, now, rx_ecn)) {
        ++st.packets_dropped;  // duplicate
        return true;
    }
    // RFC 9000 §17.4: the spin value follows the newest 1-RTT packet only.
    if (space == PacketSpace::application) spin.on_received(pkt.spin, !largest || pkt.packet_number > *largest);
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
    if (space == PacketSpace::application)
        after_packet_paths(!largest || pkt.packet_number > *largest, now);  // RFC 9000 §9.3
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
    // RFC 9369 §4.1: a Retry comes in the client's version; others are ignored.
    if (!client || state != ConnectionState::handshaking || retry_scid || acks_of(PacketSpace::initial).has_received() ||
        v.version != crypto::version_number(version) || !std::ranges::equal(v.dcid, local_cid.span()) ||
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
        wire::quic::check_version_negotiation(vn, crypto::version_number(version)) != wire::quic::HeaderError::none) {
        ++st.packets_dropped;  // RFC 9000 §6.2: not an answer to this connection's Initial
        return;
    }
    std::string versions;
    for (std::size_t i = 0; i < vn.versions.size() / 4; ++i)
        versions += fmt::format("{}{:#010x}", versions.empty() ? "" : ", ", wire::quic::listed_version(vn, i));
    close = {static_cast<std::uint64_t>(CloseCode::version_negotiation_error),
             fmt::format("peer does not speak version {:#010x} (it offers: {})", crypto::version_number(version),
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
        if (!frame_allowed(f, type, rx_zero_rtt)) {
            close_with_error(CloseCode::protocol_violation,
                             fmt::format("{} frame not allowed in a {} packet", wire::frame_name(f),
                                         rx_zero_rtt                            ? "0-RTT"
                                         : type == wire::PacketType::one_rtt ? "1-RTT"
                                                                              : "handshake"),
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
            } else if constexpr (std::is_same_v<T, wire::ResetStreamFrame>) {
                if (!on_stream_result(streams.on_reset_stream(f), now)) return false;
            } else if constexpr (std::is_same_v<T, wire::StopSendingFrame>) {
                if (!on_stream_result(streams.on_stop_sending(f), now)) return false;
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
            } else if constexpr (std::is_same_v<T, wire::DatagramFrame>) {
                if (!on_datagram_frame(f, now)) return false;
            } else {
                on_v1_frame(f, now);
            }
            return state == ConnectionState::handshaking || state == ConnectionState::established;
        },
        frame);
}

// The v1 frames of paths and connection IDs (connection_paths.cpp) and
// NEW_TOKEN; any other closes as PROTOCOL_VIOLATION naming it.
void Connection::Impl::on_v1_frame(const wire::Frame& frame, Instant now) {
    if (const auto* c = std::get_if<wire::PathChallengeFrame>(&frame)) {
        on_path_challenge(*c);
    } else if (const auto* pr = std::get_if<wire::PathResponseFrame>(&frame)) {
        on_path_response(*pr, now);
    } else if (const auto* t = std::get_if<wire::NewTokenFrame>(&frame)) {
        // RFC 9000 §19.7: a server must not receive one; a client hands it
        // to the application for its next connection (ConnectionConfig::address_token).
        if (!client) close_with_error(CloseCode::protocol_violation, "NEW_TOKEN frame sent by a client", now);
        else events.push_back(event::NewToken{{t->token.begin(), t->token.end()}});
    } else if (const auto* n = std::get_if<wire::NewConnectionIdFrame>(&frame)) {
        on_new_peer_connection_id(*n, now);
    } else if (const auto* r = std::get_if<wire::RetireConnectionIdFrame>(&frame)) {
        on_retire_connection_id(*r, now);
    } else {
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

}  // namespace ndm
