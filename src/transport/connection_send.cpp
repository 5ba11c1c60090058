// Connection::Impl's send path (connection_impl.hpp): which packet number
// spaces have something to send now (an ACK that is due, CRYPTO data, a
// probe, what the window and the pacer let go), one datagram's packets
// assembled and coalesced in order (RFC 9000 §12.2), each packet's frames
// (ACK, CONNECTION_CLOSE, CRYPTO, HANDSHAKE_DONE, NEW_CONNECTION_ID,
// RETIRE_CONNECTION_ID, flow control, DATAGRAM (RFC 9221), STREAM, and the ACK frequency extension's,
// draft-ietf-quic-ack-frequency-14), padding (RFC 9000 §14.1), the
// close's space (§10.2.3), Version Negotiation (§6.1) and sealing (RFC 9001
// §5, §6.6). A sealed packet goes to recovery (on_packet_built,
// connection_recovery.cpp).
#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

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

bool Connection::Impl::has_eliciting_data() const {
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application})
        if (crypto_pending(s)) return true;
    if (!can_write()) return false;
    return application_frames_pending(last_now);
}

// 1-RTT frames other than ACK waiting to be sent at `now` (stream data that
// waits to fill a packet does not count until its wait ends).
bool Connection::Impl::application_frames_pending(Instant now) const {
    return handshake_done_pending || new_token_pending || immediate_ack_pending || local_cids.has_pending() ||
           peer_cids.has_pending() || streams.has_control_frames() || datagrams.has_pending() ||
           (streams.has_pending_data() && !coalescing_holds(now));
}

bool Connection::Impl::coalescing_holdable() const {
    if (!coalescing.enabled() || state != ConnectionState::established) return false;
    if (handshake_done_pending || new_token_pending || immediate_ack_pending || local_cids.has_pending() ||
        peer_cids.has_pending() || streams.has_control_frames() || datagrams.has_pending())
        return false;
    const std::uint64_t room = transport::SendCoalescing::packet_room(mds);
    return transport::SendCoalescing::holdable(streams.sendable_new_data(room), room, streams.only_new_data_waits());
}

bool Connection::Impl::coalescing_holds(Instant now) const {
    return coalescing.enabled() && coalescing.holds(coalescing_holdable(), now);
}

Instant Connection::Impl::coalescing_deadline() const {
    return coalescing.enabled() ? coalescing.deadline(coalescing_holdable(), last_now) : kNever;
}

bool Connection::Impl::can_send_eliciting(Instant now) const {
    if (probes_pending > 0) return true;
    if (loss.bytes_in_flight() >= cc->cwnd()) return false;
    return !cfg.pacing || pacer.next_send_time(now) <= now;
}

std::size_t Connection::Impl::poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn_out,
                                            PathId& path_out) {
    // RFC 9000 §13.4.2: one codepoint for the whole datagram, as its IP header has one.
    ecn_out = tx_ecn = ecn.codepoint();
    path_out = paths.active().id;
    if (state == ConnectionState::closed || state == ConnectionState::draining) return 0;
    if (out.size() < mds) throw std::invalid_argument("poll_datagram: buffer smaller than the datagram size");
    if (send_version_negotiation) return write_version_negotiation(out);
    // RFC 9000 §8.2: PATH_CHALLENGE and PATH_RESPONSE in datagrams of their
    // own, to the path they are for (connection_paths.cpp).
    if (state == ConnectionState::established) {
        while (Path* p = paths.wants_probe_datagram(now)) {
            const PathId to = p->id;
            ecn_out = tx_ecn = Ecn::not_ect;  // not a packet ECN validation counts
            if (const std::size_t n = write_path_probe(out, *p, now)) {
                path_out = to;
                return n;
            }
        }
        ecn_out = tx_ecn = ecn.codepoint();
    }
    const bool closing = state == ConnectionState::closing;
    if (closing && !close_frame_pending) return 0;
    if (amplification_blocked()) return 0;
    if (coalescing.enabled()) coalescing.observe(coalescing_holdable(), now);
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

// RFC 9001 §6.1: only once the handshake is confirmed, and
// OneRttKeys::initiate_update refuses while the last update is unanswered.
bool Connection::Impl::request_key_update() {
    return state == ConnectionState::established && handshake_confirmed && one_rtt && one_rtt->initiate_update();
}

std::size_t Connection::Impl::write_version_negotiation(std::span<std::uint8_t> out) {
    send_version_negotiation = false;
    const std::size_t n = wire::quic::write_version_negotiation(out, original_dcid.span(), peer_cid.span(),
                                                                wire::quic::kSupportedVersions,
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
    // Before completion only a client's 0-RTT (RFC 9001 §4.6.1).
    if (s == PacketSpace::application && state != ConnectionState::established && !sending_zero_rtt()) return false;
    if (ack_due(s, now) || (probes_pending > 0 && probe_space == s)) return true;
    if (!can_send_eliciting(now)) return false;
    if (crypto_pending(s)) return true;
    return s == PacketSpace::application && application_frames_pending(now);
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
    if (closing) {
        // An application's close acknowledges what arrived (an ACK frame may
        // share its packet, RFC 9000 §12.4): a peer whose last data we read
        // while our ACK was still delayed learns that it was delivered, not
        // only that the connection ended. A close for the peer's error does
        // not: what that peer sent is no longer of use to it.
        if (space == PacketSpace::application && close.application) write_ack_frame(sink, space, now);
        write_close_frame(sink, type);
    } else {
        // No ACK frame in a 0-RTT packet (RFC 9000 §12.4, §17.2.3).
        if (!(space == PacketSpace::application && sending_zero_rtt())) write_ack_frame(sink, space, now);
        const bool probe = probes_pending > 0 && probe_space == space;
        if (probe || can_send_eliciting(now)) retransmission = write_eliciting_frames(sink, space, probe, now);
    }
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

// CRYPTO, HANDSHAKE_DONE, the stream set's flow-control frames, DATAGRAM
// and STREAM frames, and a PING when a probe carries nothing else (RFC 9002 §6.2.4). Returns
// whether any stream data was a retransmission.
bool Connection::Impl::write_eliciting_frames(FrameSink& sink, PacketSpace space, bool probe, Instant now) {
    bool retransmission = false;
    while (crypto_pending(space) && crypto_of(space).write_frame(sink)) {
    }
    if (space == PacketSpace::application && sending_zero_rtt()) {
        // RFC 9000 §12.4: 0-RTT carries stream data and flow control, no
        // frame that needs the handshake done (ACK, NEW_TOKEN, RETIRE_CONNECTION_ID...).
        streams.write_control_frames(sink, now, loss.rtt().smoothed());
        retransmission = streams.write_stream_frames(sink);
    } else if (space == PacketSpace::application && state == ConnectionState::established) {
        if (handshake_done_pending && sink.put(wire::HandshakeDoneFrame{}, sent::HandshakeDone{}))
            handshake_done_pending = false;
        local_cids.write_frames(sink);
        if (new_token_pending && sink.put(wire::NewTokenFrame{cfg.token_to_issue}, sent::NewToken{}))
            new_token_pending = false;
        peer_cids.write_frames(sink);
        streams.write_control_frames(sink, now, loss.rtt().smoothed());
        const bool ack_frequency_used = requests_ack_frequency();
        if (ack_frequency_used) write_ack_frequency(sink, now);
        // RFC 9221 §5: DATAGRAMs ride under the window like stream data,
        // ahead of it (they are what a real-time application cannot wait for).
        datagrams.write_frames(sink);
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
                                                    std::size_t& overhead) {
    if (space == PacketSpace::application && !sending_zero_rtt()) {
        const wire::quic::ShortHeader h{peer_cid, pn, pn_len, spin.next(), false};
        overhead = wire::quic::packet_overhead(h);
        return {datagram, pos, h};
    }
    wire::quic::LongHeader h;
    h.type = space == PacketSpace::initial     ? wire::quic::LongType::initial
             : space == PacketSpace::handshake ? wire::quic::LongType::handshake
                                               : wire::quic::LongType::zero_rtt;
    h.version = crypto::version_number(version);
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
    if (space == PacketSpace::application && sending_zero_rtt()) return b.finish(payload_len, *zero_rtt_keys, pad_to);
    return space == PacketSpace::application ? b.finish(payload_len, *one_rtt, pad_to)
                                             : b.finish(payload_len, *write_keys_of(space), pad_to);
}

}  // namespace ndm
