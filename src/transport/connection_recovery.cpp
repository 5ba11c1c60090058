// Connection::Impl's recovery glue (connection_impl.hpp): between the
// packets a connection sends and acknowledges and its congestion controller.
// A sealed packet is recorded with the loss detector, the delivery rate, the
// pacer and the controller (RFC 9002 §2, §7.7, §7.8); an ACK frame becomes
// acknowledged and lost packets (RFC 9002 §6, A.7), its ECN counts are
// validated (RFC 9000 §13.4.2.1), and each outcome becomes the controller's
// event (cc::AckEvent, cc::CongestionEvent, cc::SpuriousEvent, RFC 9002 §7);
// what a lost packet carried goes back to be sent again (RFC 9000 §13.3).
// LossDetector, EcnValidator, DeliveryRate and CwndUsage keep the state;
// this file wires them to the controller.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

namespace {

constexpr double kPacingGain = 1.25;                         // RFC 9002 §7.7

}  // namespace

// ============================================================================
// Sent packets (RFC 9002 §2, §7.7, §7.8)

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

// After an in-flight packet was counted (and paced): tells cwnd_usage how
// much of the window is used, and returns whether the window is not what
// limits the sender now (PacketSent::app_limited).
bool Connection::Impl::note_cwnd_usage(std::uint64_t pn, std::uint64_t in_flight, Instant now) {
    CwndUsage::Send s;
    s.pn = pn;
    s.bytes_in_flight = in_flight;
    s.cwnd = cc->cwnd();
    s.paced_out = cfg.pacing && !pacer.can_send(now);
    if (s.paced_out && in_flight < s.cwnd)
        s.sendable = streams.sendable_new_data(s.cwnd - in_flight) + datagrams.pending_bytes();
    cwnd_usage.on_packet_sent(s);
    return !cwnd_usage.cwnd_limited(s.cwnd, cc->ssthresh());
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

// draft-cheng-iccrg-delivery-rate-estimation §3.4: the application has given
// nothing more to send while the window has room for another packet, so
// what is sent until then is delivered at the application's rate. Data that
// waits to fill a packet (send_coalescing.hpp) counts as nothing, as Linux's
// tcp_rate_check_app_limited counts less than an MSS unsent.
void Connection::Impl::note_app_limited() {
    if (state != ConnectionState::established || crypto_pending(PacketSpace::application)) return;
    if (streams.has_unsent_data() && !coalescing_holds(last_now)) return;
    if (datagrams.has_pending()) return;
    if (loss.bytes_in_flight() + mds <= cc->cwnd()) delivery.on_app_limited(loss.bytes_in_flight());
}

// ============================================================================
// ACKs, ECN and losses (RFC 9002 §6, §7, A.7; RFC 9000 §13.4.2)

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
        release_acked(p, space, true);
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

// What an acknowledged packet carried is delivered. late: it was declared
// lost before, and its datagrams were told lost then (told once).
void Connection::Impl::release_acked(const SentPacket& p, PacketSpace space, bool late) {
    for (const auto& sf : p.frames) {
        if (auto* s = std::get_if<sent::Stream>(&sf)) {
            streams.on_acked(*s);
        } else if (auto* rs = std::get_if<sent::ResetStream>(&sf)) {
            streams.on_acked(*rs);
        } else if (auto* a = std::get_if<sent::Ack>(&sf)) {
            acks_of(space).on_ack_acknowledged(a->largest);
        } else if (auto* c = std::get_if<sent::Crypto>(&sf)) {
            crypto_of(space).on_acked(*c);
        } else if (auto* r = std::get_if<sent::RetireConnectionId>(&sf)) {
            peer_cids.on_acked(r->sequence);
        } else if (auto* d = std::get_if<sent::Datagram>(&sf); d && !late) {
            datagrams.on_acked(d->id);
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
            } else if (std::holds_alternative<sent::NewToken>(sf)) {
                new_token_pending = true;
            } else if (auto* r = std::get_if<sent::RetireConnectionId>(&sf)) {
                peer_cids.on_lost(r->sequence);
            } else if (auto* n = std::get_if<sent::NewConnectionId>(&sf)) {
                local_cids.on_lost(n->sequence);
            } else if (auto* af = std::get_if<sent::AckFrequency>(&sf)) {
                ack_frequency.on_lost(af->sequence);
            } else if (auto* d = std::get_if<sent::Datagram>(&sf)) {
                datagrams.on_lost(d->id);  // RFC 9221 §5.2: told, not resent
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

}  // namespace ndm
