// Connection::Impl's 0-RTT (RFC 9001 §4.6, RFC 9000 §7.4.1) and the packets
// that come before their keys can be used (RFC 9001 §5.7), connection_impl.hpp:
//  - a client resuming with a ticket that allows early data writes streams
//    from its first flight, in 0-RTT packets, within the server's remembered
//    transport parameters; accepted, the server's new ones must not be lower
//    (§7.4.1); refused, its 0-RTT packets leave the flight without a
//    congestion event and their frames go again in 1-RTT packets;
//  - a server holds 0-RTT packets that come before the ClientHello is read
//    and 1-RTT packets that come before its handshake completes (both in
//    EarlyPackets, capped by ConnectionLimits::early_packets and counted),
//    and reads them as soon as it can.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

// ============================================================================
// Client

// RFC 9000 §7.4.1: until the server's parameters arrive, 0-RTT data keeps
// within those the ticket remembers (flow control, stream counts).
void Connection::Impl::start_early_data() {
    wire::Error err;
    if (!cfg.tls.resume ||
        !wire::decode_transport_params(cfg.tls.resume->transport_parameters, wire::Role::server, remembered_params, err)) {
        // A ticket whose parameters do not decode is not used for 0-RTT.
        spdlog::debug("ndm: no 0-RTT: the ticket's transport parameters do not decode: {}", err.what);
        zero_rtt_keys.reset();
        return;
    }
    early_data = EarlyData::attempted;
    const wire::TransportParams& r = remembered_params;
    streams.on_peer_params({r.initial_max_data, r.initial_max_stream_data_bidi_local,
                            r.initial_max_stream_data_bidi_remote, r.initial_max_stream_data_uni,
                            r.initial_max_streams_bidi, r.initial_max_streams_uni});
}

// At completion (client): what became of the 0-RTT data. False: closed.
bool Connection::Impl::on_early_data_outcome(Instant now) {
    if (early_data != EarlyData::attempted) return true;
    zero_rtt_keys.reset();  // RFC 9001 §4.9.3: a client discards them with 1-RTT keys
    const wire::TransportParams& r = remembered_params;
    const wire::TransportParams& p = peer_params;
    const bool lower = p.initial_max_data < r.initial_max_data ||
                       p.initial_max_stream_data_bidi_local < r.initial_max_stream_data_bidi_local ||
                       p.initial_max_stream_data_bidi_remote < r.initial_max_stream_data_bidi_remote ||
                       p.initial_max_stream_data_uni < r.initial_max_stream_data_uni ||
                       p.initial_max_streams_bidi < r.initial_max_streams_bidi ||
                       p.initial_max_streams_uni < r.initial_max_streams_uni ||
                       p.active_connection_id_limit < r.active_connection_id_limit;
    if (tls->early_data_accepted()) {
        early_data = EarlyData::accepted;
        if (lower) {
            close_with_error(CloseCode::protocol_violation,
                             "server accepted 0-RTT but lowered a limit it had given (RFC 9000 §7.4.1)", now);
            return false;
        }
        return true;
    }
    // RFC 9001 §4.6.2: refused. The 0-RTT packets were not read: out of the
    // flight without a congestion event (they were never lost to the path),
    // and what they carried is sent again under 1-RTT keys.
    early_data = EarlyData::rejected;
    for (const SentPacket& pkt : loss.restart_space(PacketSpace::application))
        for (const auto& sf : pkt.frames) (void)streams.on_lost(sf);
    if (lower) {
        // The bytes already given to streams were measured against the old
        // limits; ndm does not take them back (docs/tls.md), so it says so.
        close_with_error(CloseCode::internal_error,
                         "server refused 0-RTT and lowered the limits the early data was written within; "
                         "resend on a new connection",
                         now);
        return false;
    }
    spdlog::debug("ndm: 0-RTT refused; its data goes again in 1-RTT packets");
    return true;
}

const char* Connection::Impl::early_data_outcome() const {
    switch (early_data) {
        case EarlyData::none: return "none";
        case EarlyData::attempted: return "attempted";
        case EarlyData::accepted: return "accepted";
        case EarlyData::rejected: return "rejected";
    }
    return "none";
}

// ============================================================================
// Server: packets before their keys (RFC 9001 §5.7)

// A 0-RTT packet before the ClientHello was read (it may yet bring the
// keys), or a 1-RTT packet before the handshake completed: held. Anything
// else whose keys are missing is dropped by the caller.
bool Connection::Impl::hold_early_packet(const wire::quic::PacketView& v) {
    const bool zero = v.kind == wire::quic::PacketKind::zero_rtt;
    if (client || handshake_complete) return false;
    if (zero && (!cfg.tls.early_data || handshake_write.has_value())) return false;  // refused or not offered
    if (!early_packets.hold(v.packet, zero)) {
        ++st.early_packets_dropped;
        return false;
    }
    ++st.early_packets_buffered;
    return true;
}

// Reads the held packets whose keys are now usable, drops the 0-RTT ones
// whose keys will never come (the ClientHello was read without them).
void Connection::Impl::replay_early_packets(Instant now) {
    std::vector<std::vector<std::uint8_t>> ready;
    if (early_packets.has(true)) {
        if (zero_rtt_keys) ready = early_packets.take(true);
        else if (handshake_write || handshake_complete) st.packets_dropped += early_packets.drop(true);
    }
    if (handshake_complete && early_packets.has(false)) {
        auto one = early_packets.take(false);
        for (auto& p : one) ready.push_back(std::move(p));
    }
    for (const auto& bytes : ready) {
        if (state != ConnectionState::handshaking && state != ConnectionState::established) return;
        const std::span<std::uint8_t> into = transport::open_buffer(bytes.size());
        wire::quic::DatagramPackets packets(bytes, wire::kShortCidLength);
        wire::quic::PacketView view;
        bool counted = false;  // held unopened, it did not count towards RFC 9000 §8.1's limit then
        if (packets.next(view) && !on_packet(bytes, into, view, counted, now)) return;
    }
}

}  // namespace ndm
