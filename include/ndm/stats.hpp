// Per-connection statistics: plain counters, cheap to copy at any time.
#pragma once

#include <cstdint>
#include <string>

#include "ndm/ecn.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

struct ConnectionStats {
    // Application bytes.
    std::uint64_t stream_bytes_sent = 0;        // first transmissions of stream data
    std::uint64_t stream_bytes_retransmitted = 0;
    std::uint64_t stream_bytes_acked = 0;       // unique stream bytes the peer acknowledged
    std::uint64_t stream_bytes_received = 0;    // unique stream bytes received (in any order)
    std::uint64_t stream_bytes_delivered = 0;   // read by the application, in order
    // Unreliable datagrams (RFC 9221): DATAGRAM frames sent (each once),
    // acknowledged, in packets declared lost (never resent), received and
    // handed to the receive queue, dropped unread from a full receive queue
    // (the oldest first: ConnectionLimits::datagram_receive_buffer), and
    // send_datagram() calls refused for a full send buffer.
    std::uint64_t datagrams_sent = 0;
    std::uint64_t datagrams_acked = 0;
    std::uint64_t datagrams_lost = 0;
    std::uint64_t datagrams_received = 0;
    std::uint64_t datagrams_dropped = 0;
    std::uint64_t datagrams_refused = 0;
    // Datagram level.
    std::uint64_t bytes_sent = 0;      // datagram bytes handed to the network
    std::uint64_t bytes_received = 0;  // datagram bytes accepted from the network
    std::uint64_t bytes_acked = 0;     // in-flight bytes acknowledged
    std::uint64_t packets_sent = 0;
    std::uint64_t packets_received = 0;
    std::uint64_t packets_dropped = 0;  // failed integrity check, unparsable, or unknown
    // Packets that came before the keys to read them could be used (RFC
    // 9001 §5.7, §4.6.1): 0-RTT before the ClientHello was read, 1-RTT at a
    // server before its handshake completed. Held (ConnectionLimits::
    // early_packets at most) and read once they can be, or dropped over the
    // cap (counted in packets_dropped too; the peer sends them again).
    std::uint64_t early_packets_buffered = 0;
    std::uint64_t early_packets_dropped = 0;
    std::uint64_t packets_lost = 0;
    std::uint64_t packets_retransmitted = 0;  // packets that carried retransmitted frames
    std::uint64_t spurious_losses = 0;        // declared lost, acknowledged later
    std::uint64_t congestion_events = 0;
    std::uint64_t persistent_congestions = 0;
    std::uint64_t pto_count = 0;  // probe timeouts over the connection's life
    // Probe timeouts since the last ACK that acknowledged something (RFC
    // 9002's pto_count, which doubles the probe period; 0 after such an ACK):
    // a peer silent for this many has heard nothing for ~2^n PTOs.
    std::uint64_t ptos_in_a_row = 0;
    // 1-RTT key phases this side's packets moved to (RFC 9001 §6): updates
    // it started (Connection::request_key_update, the AEAD limit) and those
    // it answered.
    std::uint64_t key_updates = 0;
    // This side sets the latency spin bit (RFC 9000 §17.4): ConnectionConfig::spin_bit
    // and not among the 1 in 16 connections that do not.
    bool spin_bit = false;
    // ECN (RFC 9000 §13.4). Sent: packets this side marked ECT(0). Received:
    // the codepoints of the packets this side received and reports in its
    // ACK_ECN frames. Reported CE: the peer's CE count over our packets,
    // summed over the packet number spaces (each CE increase is a congestion
    // event, counted in congestion_events too).
    EcnState ecn_state = EcnState::disabled;
    std::uint64_t ecn_ect0_sent = 0;
    std::uint64_t ecn_ect0_received = 0;
    std::uint64_t ecn_ect1_received = 0;
    std::uint64_t ecn_ce_received = 0;
    std::uint64_t ecn_ce_reported = 0;
    // Congestion control and RTT, current values.
    std::uint64_t cwnd = 0;
    std::uint64_t ssthresh = UINT64_MAX;
    std::uint64_t bytes_in_flight = 0;
    double pacing_rate = 0;  // bytes per second
    Duration smoothed_rtt{0};
    Duration rttvar{0};
    Duration min_rtt{0};
    Duration latest_rtt{0};
    std::string cc_state;
    // Time spent in each controller state, by the state names the controller reports.
    Duration time_in_slow_start{0};
    Duration time_in_congestion_avoidance{0};
    Duration time_in_recovery{0};
    Duration time_in_other_states{0};
};

}  // namespace ndm

#pragma GCC visibility pop
