// The connection's observers: tracing (the qlog events of ndm/connection.hpp's
// trace namespace, all behind `if (obs)`), statistics, and the time spent in
// each congestion-controller state class.
#include <type_traits>

#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

// ============================================================================
// Wire structures to the public trace structs (observer only)

trace::PacketType transport::trace_type(wire::PacketType t) {
    switch (t) {
        case wire::PacketType::initial: return trace::PacketType::initial;
        case wire::PacketType::handshake: return trace::PacketType::handshake;
        case wire::PacketType::version_negotiation: return trace::PacketType::version_negotiation;
        default: return trace::PacketType::one_rtt;
    }
}

trace::Frame transport::trace_frame(const wire::Frame& frame) {
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
                if (f.ecn) t.ecn_counts = {f.ecn->ect0, f.ecn->ect1, f.ecn->ce};
            } else if constexpr (std::is_same_v<F, wire::CryptoFrame>) {
                t.offset = f.offset;
                t.length = f.data.size();
            } else if constexpr (std::is_same_v<F, wire::StreamFrame>) {
                t.stream_id = f.stream_id;
                t.offset = f.offset;
                t.length = f.data.size();
                t.fin = f.fin;
            } else if constexpr (std::is_same_v<F, wire::MaxDataFrame>) {
                t.value = f.maximum;
            } else if constexpr (std::is_same_v<F, wire::MaxStreamsFrame>) {
                t.value = f.maximum;
                t.unidirectional = !f.bidi;
            } else if constexpr (std::is_same_v<F, wire::StreamsBlockedFrame>) {
                t.value = f.limit;
                t.unidirectional = !f.bidi;
            } else if constexpr (std::is_same_v<F, wire::ResetStreamFrame>) {
                t.stream_id = f.stream_id;
                t.value = f.error_code;
                t.offset = f.final_size;
            } else if constexpr (std::is_same_v<F, wire::StopSendingFrame>) {
                t.stream_id = f.stream_id;
                t.value = f.error_code;
            } else if constexpr (std::is_same_v<F, wire::NewTokenFrame>) {
                t.length = f.token.size();
            } else if constexpr (std::is_same_v<F, wire::NewConnectionIdFrame> ||
                                 std::is_same_v<F, wire::RetireConnectionIdFrame>) {
                t.value = f.sequence;
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
            } else if constexpr (std::is_same_v<F, wire::DatagramFrame>) {
                t.length = f.data.size();
            } else if constexpr (std::is_same_v<F, wire::AckFrequencyFrame>) {
                t.value = f.sequence;
                t.ack_eliciting_threshold = f.ack_eliciting_threshold;
                t.requested_max_ack_delay = std::chrono::microseconds(f.requested_max_ack_delay_us);
                t.reordering_threshold = f.reordering_threshold;
            }
        },
        frame);
    return t;
}
static_assert(static_cast<std::size_t>(trace::Frame::Type::datagram) + 1 == std::variant_size_v<wire::Frame>);

// ============================================================================
// Tracing

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

// The frames of a received packet are in rx_frames.
void Connection::Impl::trace_received(wire::PacketType type, std::uint64_t pn, std::size_t size, Instant now) {
    if (!obs) return;
    trace_frames.clear();
    for (const auto& f : rx_frames) trace_frames.push_back(trace_frame(f));
    obs->on_packet_received({now, trace_type(type), pn, size, trace_frames});
}

// The frames of a sent packet went to trace_frames as they were written.
void Connection::Impl::trace_sent(wire::PacketType type, std::uint64_t pn, std::size_t size, Instant now) {
    if (!obs) return;
    obs->on_packet_sent({now, trace_type(type), pn, size, trace_frames});
    trace_metrics(now);
}

// ============================================================================
// Congestion-controller states: the name as the controller reports it (for
// the stats and qlog), the time keyed by its class, mapped once per change.

void Connection::Impl::adopt_cc_state(Instant now) {
    std::string_view current = cc->state();
    const std::string old = obs ? cc_state : std::string();
    cc_state = std::string(current);
    cc_state_class = cc::state_class(cc_state);
    if (obs && old != cc_state) obs->on_congestion_state_updated({now, old, cc_state});
}

void Connection::Impl::track_cc_state(Instant now) {
    if (cc->state() == cc_state) return;
    account_cc_state(now);
    cc_state_since = now;
    adopt_cc_state(now);
}

void Connection::Impl::trace_ecn_state(Instant now) {
    const EcnState s = ecn.state();
    if (s == traced_ecn_state) return;
    if (obs) obs->on_ecn_state_updated({now, traced_ecn_state, s});
    traced_ecn_state = s;
}

ConnectionStats Connection::Impl::stats(Instant now) const {
    ConnectionStats s = st;
    const StreamCounters& sc = streams.counters();
    s.stream_bytes_sent = sc.sent;
    s.stream_bytes_retransmitted = sc.retransmitted;
    s.stream_bytes_acked = sc.acked;
    s.stream_bytes_received = sc.received;
    s.stream_bytes_delivered = sc.delivered;
    const transport::DatagramCounters& dc = datagrams.counters();
    s.datagrams_sent = dc.sent;
    s.datagrams_acked = dc.acked;
    s.datagrams_lost = dc.lost;
    s.datagrams_received = dc.received;
    s.datagrams_dropped = dc.dropped;
    s.datagrams_refused = dc.refused;
    s.cwnd = cc->cwnd();
    s.ssthresh = cc->ssthresh();
    s.bytes_in_flight = loss.bytes_in_flight();
    s.ptos_in_a_row = loss.pto_count();
    s.key_updates = one_rtt ? one_rtt->updates() : 0;
    s.spin_bit = spin.participates();
    s.pacing_rate = pacing_rate;
    const auto& rtt = loss.rtt();
    s.smoothed_rtt = rtt.smoothed();
    s.rttvar = rtt.rttvar();
    s.min_rtt = rtt.min();
    s.latest_rtt = rtt.latest();
    s.cc_state = cc_state;
    auto times = state_time;
    if (now > cc_state_since) times[static_cast<std::size_t>(cc_state_class)] += now - cc_state_since;
    using C = cc::StateClass;
    s.time_in_slow_start = times[static_cast<std::size_t>(C::slow_start)];
    s.time_in_congestion_avoidance = times[static_cast<std::size_t>(C::congestion_avoidance)];
    s.time_in_recovery = times[static_cast<std::size_t>(C::recovery)];
    s.time_in_other_states = times[static_cast<std::size_t>(C::other)];
    s.ecn_state = ecn.state();
    s.ecn_ect0_sent = ecn.ect0_sent();
    s.ecn_ce_reported = ecn.ce_reported();
    s.ecn_ect0_received = ecn_received_discarded.ect0;
    s.ecn_ect1_received = ecn_received_discarded.ect1;
    s.ecn_ce_received = ecn_received_discarded.ce;
    // A discarded space's counts are in ecn_received_discarded.
    transport::for_each_space(loss.live_spaces(), [&](transport::PacketSpace sp) {
        const wire::EcnCounts& c = acks_of(sp).ecn_counts();
        s.ecn_ect0_received += c.ect0;
        s.ecn_ect1_received += c.ect1;
        s.ecn_ce_received += c.ce;
    });
    return s;
}

ConnectionStats Connection::stats(Instant now) const { return impl_->stats(now); }

}  // namespace ndm
