// What a connection tells a tracer: ndm::trace::ConnectionObserver and its
// events. ndm/connection.hpp includes this header (ConnectionConfig::observer);
// ndm/qlog.hpp writes the events as qlog files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ndm/ecn.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

// Tracing (qlog and the like): an optional per-connection observer the
// connection calls where packets are sent, received and declared lost and
// where congestion state, cwnd, RTT or the ECN validation state change (the
// events qlog's QUIC schema names transport:packet_sent/received,
// recovery:packet_lost, metrics_updated, congestion_state_updated,
// ecn_state_updated). Plain structs, ngtcp2-style:
// without an observer the connection skips all of it. ndm/qlog.hpp writes
// these events as qlog files.
namespace trace {
enum class PacketType : std::uint8_t { initial, handshake, one_rtt, version_negotiation };

struct Frame {
    enum class Type : std::uint8_t {
        padding, ping, ack, crypto, stream, max_data, max_stream_data, max_streams,
        data_blocked, stream_data_blocked, connection_close, handshake_done,
        reset_stream, stop_sending, new_token, streams_blocked, new_connection_id,
        retire_connection_id, path_challenge, path_response, ack_frequency, immediate_ack,
        datagram  // RFC 9221
    };
    Type type = Type::padding;
    std::uint64_t stream_id = 0;  // a StreamId   // STREAM, MAX_STREAM_DATA, STREAM_DATA_BLOCKED, RESET_STREAM, STOP_SENDING
    std::uint64_t offset = 0; // STREAM, CRYPTO
    std::uint64_t length = 0; // STREAM/CRYPTO/DATAGRAM data bytes, PADDING bytes
    bool fin = false;         // STREAM
    // MAX_* maximum, *_BLOCKED limit, CONNECTION_CLOSE/RESET_STREAM/STOP_SENDING
    // error code, NEW_/RETIRE_CONNECTION_ID and ACK_FREQUENCY sequence number.
    std::uint64_t value = 0;
    // ACK_FREQUENCY: ack-eliciting threshold, requested max ack delay, reordering threshold.
    std::uint64_t ack_eliciting_threshold = 0;
    Duration requested_max_ack_delay{0};
    std::uint64_t reordering_threshold = 0;
    bool application = false;  // CONNECTION_CLOSE: application error space
    bool unidirectional = false;  // MAX_STREAMS, STREAMS_BLOCKED
    Duration ack_delay{0};
    // ACK: [smallest, largest] per range, largest first.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> acked_ranges;
    // ACK_ECN (type 0x03): the ECT(0), ECT(1) and CE counts.
    std::optional<std::array<std::uint64_t, 3>> ecn_counts;
};

struct PacketSent {
    Instant time;
    PacketType type;
    std::uint64_t packet_number;
    std::size_t size;  // datagram bytes
    std::span<const Frame> frames;
};
struct PacketReceived {
    Instant time;
    PacketType type;
    std::uint64_t packet_number;
    std::size_t size;
    std::span<const Frame> frames;
};
struct PacketLost {
    Instant time;
    std::uint64_t packet_number;
    std::size_t size;
    PacketType type = PacketType::one_rtt;  // names the packet number space
};
// Only the values that changed since the previous event are set.
struct MetricsUpdated {
    Instant time;
    std::optional<std::uint64_t> cwnd, bytes_in_flight, ssthresh;
    std::optional<Duration> smoothed_rtt, min_rtt, latest_rtt, rtt_variance;
    std::optional<double> pacing_rate;  // bits per second
};
struct CongestionStateUpdated {
    Instant time;
    std::string_view old_state, new_state;  // the controller's state() names
};
struct EcnStateUpdated {
    Instant time;
    EcnState old_state, new_state;  // RFC 9000 §13.4.2 validation
};

class ConnectionObserver {
public:
    virtual ~ConnectionObserver() = default;
    virtual void on_packet_sent(const PacketSent&) {}
    virtual void on_packet_received(const PacketReceived&) {}
    virtual void on_packet_lost(const PacketLost&) {}
    virtual void on_metrics_updated(const MetricsUpdated&) {}
    virtual void on_congestion_state_updated(const CongestionStateUpdated&) {}
    virtual void on_ecn_state_updated(const EcnStateUpdated&) {}
};

struct ConnectionInfo {
    bool client;
    std::span<const std::uint8_t> original_dcid;  // names the connection (qlog's ODCID)
    Instant reference_time;                        // the connection's creation
};
// Called once per connection at its creation; may return nullptr (no tracing).
using ObserverFactory = std::function<std::unique_ptr<ConnectionObserver>(const ConnectionInfo&)>;
}  // namespace trace

}  // namespace ndm

#pragma GCC visibility pop
