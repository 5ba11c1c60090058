// ndm::Connection: the sans-I/O transport state machine. It never touches a
// socket, a clock or a thread (models: ngtcp2, quinn-proto). The driver
//   - feeds received datagrams with on_datagram(),
//   - drains datagrams to send with poll_datagram() until it returns 0,
//   - calls on_timeout() when next_timeout() is reached,
//   - reads application events with poll_event().
// A Connection is not thread-safe; drive it from one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ndm/ecn.hpp"
#include "ndm/loss_detection.hpp"
#include "ndm/observer.hpp"  // trace::ObserverFactory, ConnectionConfig::observer
#include "ndm/stats.hpp"
#include "ndm/time.hpp"
#include "ndm/tls.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

inline constexpr std::uint32_t kQuicVersion1 = 0x00000001;  // QUIC version 1 (RFC 9000)
inline constexpr std::uint32_t kQuicVersion2 = 0x6b3343cf;  // QUIC version 2 (RFC 9369)
// The version a client starts with unless told otherwise (RFC 9368 §2.5:
// the oldest one every server speaks).
inline constexpr std::uint32_t kProtocolVersion = kQuicVersion1;
inline constexpr std::size_t kMinDatagramSize = 1200;
inline constexpr std::size_t kMaxDatagramSize = 65507;  // largest UDP payload over IPv4

using StreamId = std::uint64_t;

// Caps on the per-connection state a peer can make this side hold, beyond
// the flow-control windows and stream counts of ConnectionConfig (which bound
// stream data and streams: FLOW_CONTROL_ERROR, STREAM_LIMIT_ERROR). Each is
// checked where the peer's frames arrive; a breach closes the connection with
// the RFC 9000 §20.1 code named below and a reason, or is a silent drop where
// the RFC asks for one. docs/security.md lists every limit, fixed ones too.
struct ConnectionLimits {
    // CRYPTO bytes held per encryption level between what TLS has read and
    // the end of the highest frame received (RFC 9000 §7.5); at least 4096.
    // Default 64 KiB. Breach: CRYPTO_BUFFER_EXCEEDED.
    std::size_t crypto_buffer = 64 * 1024;
    // Disjoint out-of-order byte ranges one receive stream may hold (each
    // costs memory and insertion time). 0: max(1024, initial_max_stream_data
    // / 1024), 16384 at the default window, far above the one hole per lost
    // packet real loss leaves. Breach: PROTOCOL_VIOLATION.
    std::size_t stream_ranges = 0;
    // The same summed over all of a connection's streams, so that many
    // streams cannot multiply the cap above (100 streams x 16384 ranges of
    // 16 bytes: 26 MB). Default 65536 (1 MiB of ranges). Breach: PROTOCOL_VIOLATION.
    std::size_t stream_ranges_total = 65536;
    // The active_connection_id_limit this side advertises (RFC 9000 §18.2,
    // 2..64): connection IDs the peer may have active at once, and twice as
    // many retirements awaiting acknowledgement (§5.1.2). Default 2: one in
    // use and one spare, enough for a migration or a NAT rebinding (each
    // spent ID is replaced). This side issues min(the peer's limit, 8)
    // (src/transport/local_connection_ids.hpp). Breach: CONNECTION_ID_LIMIT_ERROR.
    std::uint64_t active_connection_ids = 2;
    // Received packet-number ranges remembered per packet number space for
    // duplicate detection (RFC 9000 §13.2.3), at least 128 (4 x the 32 ranges
    // an ACK frame carries). Default 256. At the cap the lowest range is
    // forgotten and packets below it count as duplicates: a silent drop.
    std::size_t ack_ranges_tracked = 256;
    // Sent packets remembered per packet number space until acknowledged or
    // declared lost (RFC 9002 §A.1). A peer that keeps sending but never
    // acknowledges would otherwise grow this with every ACK-only packet this
    // side answers with. Default 131072 (190 MB in flight at 1452-byte
    // datagrams, far above any window ndm reaches). Breach: PROTOCOL_VIOLATION.
    std::size_t sent_packets_tracked = 1u << 17;
    // Bytes of received DATAGRAM payloads (RFC 9221) held until the
    // application reads them (Connection::recv_datagram), each counted as
    // its payload plus 64 bytes of bookkeeping, so empty datagrams are
    // bounded too. When one more would pass it, the oldest unread are
    // dropped to make room (the newest are what a real-time reader wants,
    // as quinn's datagram receive buffer does), counted in
    // ConnectionStats::datagrams_dropped and told by event::DatagramsDropped.
    // Default 1 MiB. A silent, counted drop: RFC 9221 §5 lets a receiver
    // drop datagrams it cannot hold.
    std::size_t datagram_receive_buffer = 1u << 20;
    // Packets held until their keys can be used (RFC 9001 §5.7: 0-RTT
    // before the ClientHello is read, 1-RTT before a server's handshake
    // completes), at most this many of at most one datagram each. Default
    // 16. Breach: dropped and counted (ConnectionStats::early_packets_dropped).
    std::size_t early_packets = 16;
};

// A network path as the driver names it (RFC 9000 §9): this side's socket
// and the peer's address. The Connection holds no address; the driver gives
// each path it sees for the connection a number (`id`) and says which paths
// differ only in a port (equal `network`: RFC 9000 §9.4 lets a port-only
// change keep the congestion controller and RTT estimate). The first path
// has id 0; a datagram on id 0 gives it its `network`.
struct PathId {
    std::uint64_t id = 0;
    std::uint64_t network = 0;
    bool operator==(const PathId&) const = default;
};

struct ConnectionConfig {
    // A client's QUIC version: kQuicVersion1 or kQuicVersion2 (RFC 9369). A
    // server answers in the version of the client's Initial, either one.
    std::uint32_t version = kProtocolVersion;
    // Largest datagram this side sends, 1200..65507 bytes. The effective size is
    // the minimum of both sides' max_datagram_size transport parameters.
    std::size_t max_datagram_size = 1452;
    // Flow-control limits advertised to the peer (RFC 9000 §4).
    std::uint64_t initial_max_data = 32u << 20;
    std::uint64_t initial_max_stream_data = 16u << 20;
    std::uint64_t initial_max_streams = 100;
    // Whether the receive windows grow when they, not the application, limit
    // the peer (up to 4x; src/transport/flow_control.hpp). Off: fixed windows,
    // as a socket buffer set with iperf3's -w turns the kernel's tuning off.
    bool autotune_receive_windows = true;
    // Unidirectional streams the peer may open (RFC 9000 §2.1): ndm's own
    // protocol uses none; HTTP/3 needs at least 3 (RFC 9114 §6.2).
    std::uint64_t initial_max_streams_uni = 0;
    // Bytes each stream buffers for sending (unsent plus unacknowledged).
    std::size_t stream_send_buffer = 16u << 20;
    Duration idle_timeout = std::chrono::seconds(30);
    // Bound on the backed-off probe timeout (0: unbounded doubling, RFC 9002
    // §6.2.1). After an outage or a loss burst a sender learns that the path
    // works again only from an acknowledged probe; with unbounded doubling the
    // probes thin out exponentially (a 10 s outage is noticed up to ~13 s
    // late, and two probes per period cannot outlast a long burst of losses
    // before idle_timeout fires). Bounded, the sender keeps probing at a
    // steady pace until the idle timeout, as picoquic does (2 s) and as TCP
    // caps its RTO (RFC 6298 §2.5; Linux: 120 s). Never below the base PTO.
    // Two probe datagrams a second are negligible load on a congested path,
    // and persistent congestion (RFC 9002 §7.6) has already collapsed cwnd.
    Duration max_pto_backoff = std::chrono::seconds(1);
    Duration max_ack_delay = std::chrono::milliseconds(25);
    // ACK ranges per ACK frame this side sends (RFC 9000 §19.3; the newest
    // are kept, §13.2.4), 1..32. 32 reports a loss burst in one ACK; TCP's
    // SACK option has room for 3 or 4 blocks, so 4 gives a sender the loss
    // signal a TCP sender gets (a lab setting for comparisons with kernel TCP).
    std::size_t max_ack_ranges = 32;
    // The ACK frequency extension (draft-ietf-quic-ack-frequency-14). On, this
    // side advertises min_ack_delay (it acknowledges as the peer asks), and
    // as a data sender asks a peer that advertised it for one ACK per
    // cwnd/8 packets (at most 1 in 32) instead of one per 2 (RFC 9000
    // §13.2.2): far fewer ACKs to send and process where rates are high or
    // connections many, loss still reported at once (reordering threshold 3,
    // RFC 9002 §6.1.1). Off by default: ACK clocking as RFC 9000 has it, and
    // the handshake bytes, and so every simulation, as they were.
    bool ack_frequency = false;
    // Which thresholds tell a lost packet from a reordered one
    // (ndm/loss_detection.hpp): adaptive RFC 9002 thresholds by default;
    // rack for RFC 8985's reordering window, as Linux TCP has it.
    LossDetection loss_detection = LossDetection::adaptive;
    Duration handshake_timeout = std::chrono::seconds(10);
    // Congestion controller by registry name, with its option string.
    std::string cc = "reno";
    std::string cc_options;
    bool pacing = true;
    // ECN (RFC 9000 §13.4): mark packets ECT(0) once the path is validated
    // (§13.4.2: the first 10 are marked to test it, marking stops if the
    // path or the peer mangles the codepoints) and treat the CE marks the
    // peer reports as congestion (RFC 9002 §7.1). On by default, as in
    // Linux's QUIC stacks that support it (quiche, msquic, quinn, ngtcp2's
    // examples): validation makes it safe on paths that do not carry ECN.
    // Received codepoints are counted and reported (ACK_ECN) either way, as
    // §13.4.1 requires of every endpoint that can read them.
    bool ecn = true;
    // Skip a 1-RTT packet number now and then, at random (RFC 9000 §21.4),
    // so that a peer acknowledging packets it never received is caught and
    // closed with PROTOCOL_VIOLATION: one skip in the first 32 packets, then
    // gaps that grow to 1024 packets on average (src/transport/pn_skip.hpp). Unpredictable
    // when `random_bytes` is set (the Endpoint's connections); from `seed`
    // otherwise.
    bool skip_packet_numbers = true;
    // The latency spin bit of 1-RTT packets (RFC 9000 §17.4), with which an
    // on-path observer measures the round trip time. On: this side spins,
    // except on a random 1 in 16 connections, which §17.4 requires so that
    // connections without it are common (ConnectionStats::spin_bit says
    // which). Off, and on those, the bit is random in every packet and the
    // peer's is ignored. Random as skip_packet_numbers is.
    bool spin_bit = true;
    // Unreliable datagrams (RFC 9221): the largest DATAGRAM frame (type,
    // length and payload) this side accepts, advertised as the
    // max_datagram_frame_size transport parameter. 0, the default, advertises
    // nothing: the peer may send no DATAGRAM frame (one would close the
    // connection with PROTOCOL_VIOLATION, RFC 9221 §3), and the handshake
    // is byte for byte as without the extension. 65535, RFC 9221 §3's
    // suggestion, takes any datagram that fits a packet. Sending needs only
    // the peer's parameter (Connection::send_datagram).
    std::uint64_t max_datagram_frame_size = 0;
    // Bytes of datagrams send_datagram() holds until the congestion window
    // and the pacer let them go, counted as for
    // ConnectionLimits::datagram_receive_buffer; a datagram that would pass
    // it is refused (DatagramStatus::queue_full), nothing already queued is
    // dropped. Default 1 MiB.
    std::size_t datagram_send_buffer = 1u << 20;
    // Opaque bytes carried in the handshake (the tools put test parameters
    // here), as a transport parameter of ndm's private ID.
    std::vector<std::uint8_t> application_params;
    // The TLS 1.3 handshake (ndm/tls.hpp): a server needs a certificate, a
    // client a way to trust it (default: the system store) and its name.
    TlsOptions tls;
    // Seeds connection IDs when `random_bytes` is unset; give each connection
    // its own.
    std::uint64_t seed = 1;
    // Where connection IDs come from. They must be unpredictable (RFC 9000
    // §5.1, §21.9): one observed ID must not reveal the next. Unset, they are
    // derived from `seed`, deterministic, which only the virtual-time
    // simulator should rely on; the Endpoint sets a cryptographic source
    // (GnuTLS's random generator) for every connection it makes.
    std::function<void(std::span<std::uint8_t>)> random_bytes;
    // Server: the stateless reset token (RFC 9000 §10.3) of a connection ID
    // it issues, sent in its transport parameters so that the client can
    // recognise a reset from a server that lost the connection's state. It
    // must be computable from the ID alone (§10.3.2); the Endpoint sets one
    // keyed by a secret of its own. Unset: no token is sent.
    std::function<std::array<std::uint8_t, 16>(std::span<const std::uint8_t> cid)> stateless_reset_token;
    // Server: the disable_active_migration transport parameter (RFC 9000
    // §18.2, §9): for a server that cannot follow a client to a new address
    // (one behind an address-bound load balancer). Packets from any address
    // but the connection's are then dropped, NAT rebindings included (§9:
    // drop, without a stateless reset). Off by default: ndm follows a peer
    // that moves (§9.3) and validates its new path.
    bool disable_active_migration = false;
    // Optional tracing (see trace::ConnectionObserver); unset costs nothing.
    trace::ObserverFactory observer;
    // Caps on the state a peer can make this side hold (above).
    ConnectionLimits limits;
    // Client: a token from an earlier connection's event::NewToken, sent in
    // every Initial (RFC 9000 §8.1.3) so that the server can skip its Retry.
    // A server that does not know it treats the Initial as having none.
    std::vector<std::uint8_t> address_token;
    // Server: a token for the client's later connections, sent in a
    // NEW_TOKEN frame once the handshake is confirmed (RFC 9000 §8.1.3). The
    // Endpoint's router makes it (src/transport/retry_gate), valid for the
    // client's address, not its port, for 24 hours; empty: none is sent.
    std::vector<std::uint8_t> token_to_issue;
};

enum class ConnectionState { handshaking, established, closing, draining, closed };

// Close codes. Transport errors are RFC 9000 §20.1's; a TLS alert closes with
// CRYPTO_ERROR, crypto_error_base + the alert (RFC 9001 §4.8). The last two
// are local only, never sent: the connection ended silently (RFC 9000 §10.1)
// and no code went on the wire. They sit at the top of the varint range,
// outside every range the RFCs assign.
enum class CloseCode : std::uint64_t {
    no_error = 0x0,
    internal_error = 0x1,
    connection_refused = 0x2,
    flow_control_error = 0x3,
    stream_limit_error = 0x4,
    stream_state_error = 0x5,
    final_size_error = 0x6,
    frame_encoding_error = 0x7,
    transport_parameter_error = 0x8,
    connection_id_limit_error = 0x9,
    protocol_violation = 0xa,
    invalid_token = 0xb,
    application_error = 0xc,
    crypto_buffer_exceeded = 0xd,
    key_update_error = 0xe,
    aead_limit_reached = 0xf,
    no_viable_path = 0x10,
    version_negotiation_error = 0x11,  // RFC 9368 §4.2: the versions offered share none
    crypto_error_base = 0x100,         // 0x100..0x1ff: CRYPTO_ERROR + TLS alert
    idle_timeout = 0x3fff'ffff'ffff'ff00,       // local only: never sent
    handshake_timeout = 0x3fff'ffff'ffff'ff01,  // local only: never sent
    stateless_reset = 0x3fff'ffff'ffff'ff02,    // local only: the peer reset the connection (RFC 9000 §10.3)
};

// The transport error's name as RFC 9000 §20.1 spells it ("PROTOCOL_VIOLATION",
// "CRYPTO_ERROR", "IDLE_TIMEOUT" for the local ones); "0x…" for a code without
// a name. Application codes (CloseInfo::application) have no names here.
std::string close_code_name(std::uint64_t code);

struct CloseInfo {
    std::uint64_t code = 0;
    std::string reason;
    bool by_peer = false;
    bool application = false;  // application close (CONNECTION_CLOSE 0x1d)
};

// The peer's transport parameters as it sent them (RFC 9000 §18.2), absent
// ones at their defaults. Connection IDs are empty when absent.
struct TransportParameters {
    std::vector<std::uint8_t> original_destination_connection_id;  // server only
    std::vector<std::uint8_t> initial_source_connection_id;
    std::vector<std::uint8_t> retry_source_connection_id;          // server only, after a Retry
    std::uint64_t max_idle_timeout_ms = 0;                         // 0: none
    std::uint64_t max_udp_payload_size = 65527;
    std::uint64_t initial_max_data = 0;
    std::uint64_t initial_max_stream_data_bidi_local = 0;
    std::uint64_t initial_max_stream_data_bidi_remote = 0;
    std::uint64_t initial_max_stream_data_uni = 0;
    std::uint64_t initial_max_streams_bidi = 0;
    std::uint64_t initial_max_streams_uni = 0;
    std::uint64_t ack_delay_exponent = 3;
    std::uint64_t max_ack_delay_ms = 25;
    std::uint64_t active_connection_id_limit = 2;
    bool disable_active_migration = false;
    bool stateless_reset_token = false;  // server only: a token was sent
    bool preferred_address = false;      // server only
    // draft-ietf-quic-ack-frequency's min_ack_delay, µs; 0 when the peer did
    // not advertise it (it takes no ACK_FREQUENCY frames then).
    std::uint64_t min_ack_delay_us = 0;
    // RFC 9368's version_information: the peer's Chosen Version (0 when it
    // sent none) and its Available Versions.
    std::uint32_t chosen_version = 0;
    std::vector<std::uint32_t> available_versions;
    // RFC 9221 §3: the largest DATAGRAM frame the peer takes; 0: none.
    std::uint64_t max_datagram_frame_size = 0;
    std::vector<std::uint8_t> application_params;  // ndm's private parameter
};

// What a server learned from a valid Retry token (RFC 9000 §8.1.2).
struct RetryValidation {
    std::vector<std::uint8_t> original_dcid;  // the DCID of the client's first Initial, before the Retry
    // The token came from a NEW_TOKEN frame of an earlier connection (§8.1.3):
    // the address is validated, but no Retry took place (original_dcid unused).
    bool from_new_token = false;
};

// What the handshake settled (RFC 9001 §4, §8.1), valid once established.
struct HandshakeSummary {
    std::uint32_t version = kProtocolVersion;
    bool retry = false;        // the handshake went through a Retry (RFC 9000 §8.1.2)
    std::string alpn;          // "h3", "ndm"
    std::string cipher_suite;  // "TLS_AES_128_GCM_SHA256"
    // Which library protects the packets of that suite in this process
    // (docs/packet-protection.md, "Backends"), its version and why it was
    // chosen: "openssl (OpenSSL 3.0.19 27 Jan 2026; measured gnutls 5.41,
    // openssl 0.93 us per 1452-byte packet)", "gnutls (GnuTLS 3.7.9;
    // NDM_AEAD_BACKEND=gnutls)". Starts with the backend's name.
    std::string packet_protection;
    TransportParameters peer;
    // TLS resumed an earlier session (TlsOptions::resume): no Certificate
    // was sent (RFC 8446 §2.2).
    bool resumed = false;
    // 0-RTT (RFC 9001 §4.6): "none" (not offered), "accepted" or "rejected"
    // (the early bytes went again in 1-RTT packets).
    std::string early_data = "none";
};

// A stream's place in the send order, in the shape of RFC 9218's priority
// (HTTP's Extensible Priorities, §4): streams of a lower urgency are sent
// first; among streams of one urgency, incremental ones share the packets
// round robin (one packet each in turn) and non-incremental ones are sent
// one at a time, in stream ID order, ahead of the incremental ones. A
// deliberate difference from RFC 9218, whose default is non-incremental
// (one HTTP response after another): ndm's default is incremental, so
// streams of equal urgency share the path fairly unless told otherwise.
struct StreamPriority {
    static constexpr std::uint8_t kMaxUrgency = 7;
    static constexpr std::uint8_t kDefaultUrgency = 3;  // RFC 9218 §4.1
    std::uint8_t urgency = kDefaultUrgency;  // 0 (first) .. 7 (last)
    bool incremental = true;
    bool operator==(const StreamPriority&) const = default;
};

namespace event {
struct Established {};
struct StreamOpened { StreamId id; };     // the peer opened a stream
struct StreamReadable { StreamId id; };   // new in-order data or FIN can be read
struct StreamWritable { StreamId id; };   // send buffer or flow-control credit opened up
// The peer abandoned its sending on the stream (RESET_STREAM, RFC 9000
// §19.4): bytes not yet read are gone and no FIN will come; final_size is
// how many the peer had sent. Raised once, and not for a stream whose
// reading this side stopped first (stop_sending()).
struct StreamReset { StreamId id; std::uint64_t error_code; std::uint64_t final_size; };
// The peer asked this side to stop sending on the stream (STOP_SENDING,
// RFC 9000 §19.5). ndm has already reset the stream with the same code
// (§3.5): bytes not yet acknowledged are dropped, and writes take nothing.
struct StreamStopped { StreamId id; std::uint64_t error_code; };
struct Closed { CloseInfo info; };
// The end of a path validation this side started (RFC 9000 §8.2): the
// peer's new address after it moved, or this side's new path after
// migrate(). `validated` false: no PATH_RESPONSE came within the timeout
// (§8.2.4); the connection stays on (or went back to) the path it had.
struct PathValidation { PathId path; bool validated; };
// The peer's packets come from a new address (RFC 9000 §9.3: a NAT
// rebinding or its migration): this side sends there from now on, and
// validates it (PathValidation follows) unless it did before.
struct PeerMigrated { PathId from; PathId to; };
// Unreliable datagrams (RFC 9221). DatagramReceived: datagrams wait to be
// read with recv_datagram(); raised when the first arrives into an empty
// receive queue (read until it returns nothing). DatagramsDropped: the
// receive queue was full and its oldest datagrams were dropped
// (ConnectionLimits::datagram_receive_buffer); raised once until the next
// recv_datagram(), ConnectionStats::datagrams_dropped counts them.
struct DatagramReceived {};
struct DatagramsDropped {};
// The fate of a datagram send_datagram() queued, by the id it returned
// (RFC 9221 §5.2): acknowledged by the peer's transport (not necessarily
// read by its application), or in a packet declared lost. A lost datagram
// is never sent again. Each datagram sent ends in one of the two unless the
// connection closes first; a datagram declared lost may still have arrived
// (a late acknowledgement counts in ConnectionStats::spurious_losses only).
struct DatagramAcked { std::uint64_t id; };
struct DatagramLost { std::uint64_t id; };
// Client: the server sent a session ticket (RFC 8446 §4.6.1) with which a
// later connection can resume (TlsOptions::resume), one event a ticket.
struct SessionTicket { tls::ResumptionTicket ticket; };
// Client: the server sent a NEW_TOKEN token (RFC 9000 §8.1.3); a later
// connection to the same server puts it in its Initial
// (ConnectionConfig::address_token) so that it is not sent a Retry.
struct NewToken { std::vector<std::uint8_t> token; };
}  // namespace event
using Event = std::variant<event::Established, event::StreamOpened, event::StreamReadable,
                           event::StreamWritable, event::StreamReset, event::StreamStopped, event::Closed,
                           event::PathValidation, event::PeerMigrated, event::DatagramReceived,
                           event::DatagramsDropped, event::DatagramAcked, event::DatagramLost,
                           event::SessionTicket, event::NewToken>;

// What Connection::send_datagram did with a datagram.
enum class DatagramStatus : std::uint8_t {
    queued,          // will be sent as the congestion window and the pacer allow; `id` names it
    too_big,         // longer than max_datagram_payload()
    queue_full,      // ConnectionConfig::datagram_send_buffer is full: try again after some are sent
    not_negotiated,  // the peer takes no DATAGRAM frames, or the handshake has not completed
    closed,          // the connection is closing or closed
};
struct DatagramSendResult {
    DatagramStatus status = DatagramStatus::closed;
    std::uint64_t id = 0;  // when queued: 0, 1, 2, ... in the order of the calls
    [[nodiscard]] bool queued() const { return status == DatagramStatus::queued; }
};
// "queued", "too big", "queue full", "not negotiated", "closed".
std::string_view datagram_status_name(DatagramStatus s);

class Connection {
public:
    // A client connection; its first datagram is ready to poll immediately.
    // Throws std::invalid_argument on a bad config (datagram size, controller name).
    static std::unique_ptr<Connection> connect(const ConnectionConfig& config, Instant now);
    // A server connection for the client's first datagram. Returns nullptr if
    // the datagram is not a valid client hello (the caller drops it). On a
    // version mismatch the connection is created and immediately closes with
    // version_negotiation_error, so the client learns why.
    // `ecn`: the datagram's ECN codepoint (see on_datagram).
    static std::unique_ptr<Connection> accept(const ConnectionConfig& config,
                                              std::span<const std::uint8_t> datagram, Instant now,
                                              Ecn ecn = Ecn::not_ect);
    // The same for an Initial that carried a Retry token the server issued
    // and has validated (RFC 9000 §8.1.2): the client's address counts as
    // validated (no amplification limit), and the server's parameters name
    // the client's first DCID and the Retry's SCID, the DCID of `datagram`
    // (§7.3), as the client will check.
    static std::unique_ptr<Connection> accept(const ConnectionConfig& config,
                                              std::span<const std::uint8_t> datagram, Instant now,
                                              const RetryValidation& retry, Ecn ecn = Ecn::not_ect);

    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Feeds one received datagram. Malformed datagrams are dropped (counted in
    // stats().packets_dropped) or close the connection with a reason.
    void on_datagram(std::span<const std::uint8_t> datagram, Instant now);
    // The same with the ECN codepoint of the datagram's IP header (the
    // driver reads it from IP_TOS / IPV6_TCLASS); the form above is not-ECT.
    void on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn);
    // Writes the next datagram into out (which must hold max_datagram_size
    // bytes) and returns its length, or 0 when nothing may be sent now
    // (congestion window, pacing, nothing to send). Call until it returns 0.
    std::size_t poll_datagram(std::span<std::uint8_t> out, Instant now);
    // The same, and sets `ecn` to the codepoint the driver sends the datagram
    // with (IP_TOS / IPV6_TCLASS): ECT(0) while ECN is tested or validated,
    // else not-ECT. A driver without ECN uses the form above, which sends
    // the same datagrams; validation then finds the path bleaching and stops.
    std::size_t poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn);
    // The path forms, for a driver that tells paths apart (RFC 9000 §9): the
    // path a datagram arrived on, and the path the datagram written goes to
    // (a PATH_CHALLENGE or PATH_RESPONSE may go to a path other than the
    // active one). The forms above use the active path.
    void on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn, PathId path);
    std::size_t poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn, PathId& path);
    // The path packets go to (the peer's current address).
    [[nodiscard]] PathId active_path() const;
    // Client migration (RFC 9000 §9.2): the driver has a new local socket,
    // `path`; the connection probes it with PATH_CHALLENGE under a peer
    // connection ID not used before (§9.5) and moves there once it is
    // validated (event::PathValidation), keeping the old path until then.
    // False (nothing happens) when it cannot: not established and
    // confirmed, the peer sent disable_active_migration, no unused peer
    // connection ID, another migration under way, or a server.
    bool migrate(PathId path, Instant now);
    // The connection IDs this side issued (NEW_CONNECTION_ID, RFC 9000
    // §5.1.1) or the peer retired (RETIRE_CONNECTION_ID) since the last
    // call: a driver that routes by connection ID adds and forgets them.
    struct ConnectionIdChange {
        std::vector<std::uint8_t> cid;
        bool added;
    };
    std::vector<ConnectionIdChange> take_connection_id_changes();
    // Earliest instant at which on_timeout() or poll_datagram() has work:
    // ACK delay, loss/PTO timer, idle timeout, or the pacer's next send time.
    [[nodiscard]] Instant next_timeout() const;
    void on_timeout(Instant now);

    std::optional<Event> poll_event();

    // Streams. open_stream() opens a bidirectional one, open_uni_stream() a
    // unidirectional one we send on (the peer's unidirectional streams are
    // receive-only: writing to them throws std::logic_error); both return
    // nullopt when the peer's limit for that kind is reached.
    std::optional<StreamId> open_stream();
    std::optional<StreamId> open_uni_stream();
    // Buffers up to data.size() bytes; returns how many were taken (bounded
    // by the send buffer). fin marks the end once all of data was taken.
    std::size_t write(StreamId id, std::span<const std::uint8_t> data, bool fin = false);
    void finish(StreamId id);
    // Reads in-order bytes; returns the count. stream_finished() tells when
    // the peer's FIN has been read.
    std::size_t read(StreamId id, std::span<std::uint8_t> out);

    // Zero-copy variants of write() and read(), one copy fewer each: the
    // application fills or reads the stream's own buffer. The spans stay valid
    // until the next call on this Connection.
    //
    // prepare() returns room for up to max bytes at the end of the send buffer
    // (empty before the handshake completes; shorter when the buffer is nearly
    // full, which asks for a StreamWritable event as a short write() does, or
    // where the buffer wraps: commit and prepare again). commit() appends the
    // first n bytes of it (n <= its size, else std::logic_error); fin ends the
    // stream after them. Bytes left unwritten in the span are never sent.
    std::span<std::uint8_t> prepare(StreamId id, std::size_t max);
    void commit(StreamId id, std::size_t n, bool fin = false);
    // Generated streams, for data the application can make again at will (a
    // seeded test payload, a file mapped in memory): the stream stores no
    // bytes; each time a chunk is sent or resent, source(offset, out) fills
    // out with the stream's bytes at [offset, offset + out.size()) - the
    // same bytes every time - straight into the packet being built. A bulk
    // sender's bytes then go from the source to the cipher in the cache,
    // where a send buffer of many connections is written, and later read,
    // in memory. set_stream_source() works before the stream's first byte
    // (false after, before the handshake completes, or for a null source);
    // then generate() appends n bytes as write() would (bounded by the send
    // buffer's capacity, returns how many; fin as for write()), and write()
    // and prepare() take nothing.
    using StreamSource = std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)>;
    bool set_stream_source(StreamId id, StreamSource source);
    // Coalescing of small writes (src/transport/send_coalescing.hpp): new
    // stream data short of a full packet, when nothing else waits to be
    // sent, waits up to max_hold for the application to write more, so that
    // an application writing a few bytes at a time still sends full
    // datagrams. A FIN, retransmissions, ACKs, the handshake and control
    // frames never wait, and while data waits the sender counts as
    // application-limited (RFC 9002 §7.8). Zero (the default) turns it off:
    // data goes as soon as the window and the pacer allow, which a
    // request/response protocol wants. ndm-send -b sets it from its rate.
    void set_send_coalescing(Duration max_hold);
    std::size_t generate(StreamId id, std::size_t n, bool fin = false);
    // peek() shows the next in-order bytes without taking them: the longest
    // contiguous run, which may be shorter than what is readable where the
    // buffer wraps (consume and peek again); empty when nothing is readable.
    // consume() takes the first n of them (n beyond what is readable throws
    // std::logic_error) and returns flow-control credit as read() does.
    // Once the stream's reading was stopped (stop_sending()) or reset by the
    // peer, what peek() showed is gone and consume() takes nothing, so that
    // an application may stop a stream between its peek and its consume.
    std::span<const std::uint8_t> peek(StreamId id);
    void consume(StreamId id, std::size_t n);
    // Reading without a receive buffer: once set, each in-order byte of the
    // stream goes to `sink` while the packet that carried it is processed
    // (inside on_datagram), and counts as read: flow-control credit returns as
    // with read(). Only bytes that arrive beyond a gap wait in the buffer,
    // until it fills. Bytes readable when the sink is set go to it at once.
    // `bytes` is valid during the call only; the sink must not call into this
    // connection, nor throw (the packet is half processed). The FIN still
    // raises StreamReadable (stream_finished() then holds); read() and peek()
    // find nothing. False for a stream this side does not receive on, or one
    // not open (set it on StreamOpened).
    using StreamSink = std::function<void(std::uint64_t offset, std::span<const std::uint8_t> bytes)>;
    bool set_stream_sink(StreamId id, StreamSink sink);
    // The in-order bytes read() would return now (0 for a stream not opened
    // or already finished): a read-only look, so that a driver of many
    // connections reaches only those with data through Endpoint::connection().
    [[nodiscard]] std::size_t stream_readable(StreamId id) const;
    // True once the peer's FIN has been read (all of the stream's bytes);
    // never for a stream the peer reset or this side stopped (stop_sending),
    // whose reading ended without its end: event::StreamReset says so.
    [[nodiscard]] bool stream_finished(StreamId id) const;
    // True once the peer has acknowledged every byte written to the stream
    // and its FIN: what was sent is delivered to the peer's transport (not
    // necessarily read by its application). False for a stream we cannot
    // send on, that was never opened, or whose sending was reset (by
    // reset_stream() or the peer's STOP_SENDING: event::StreamStopped).
    [[nodiscard]] bool stream_send_acked(StreamId id) const;
    // Bytes the application may still write before the send buffer is full
    // (0 once the stream is finished or reset).
    [[nodiscard]] std::size_t stream_send_capacity(StreamId id) const;
    // The stream offset up to which the peer's flow control (its
    // MAX_STREAM_DATA and MAX_DATA) lets this side send now; 0 for a stream
    // it cannot send on.
    [[nodiscard]] std::uint64_t stream_send_limit(StreamId id) const;

    // Cancellation (RFC 9000 §3). Error codes are the application's own,
    // 0..2^62-1 (std::invalid_argument beyond); both calls throw
    // std::invalid_argument for a stream that is not open and do nothing
    // before the handshake completes or after the connection ends.
    //
    // reset_stream() abandons this side's sending: bytes not yet
    // acknowledged are dropped (their memory with them) and the peer gets a
    // RESET_STREAM with the code and the stream's final size, resent until
    // acknowledged; the peer's application sees it as a reset (its bytes
    // not yet read are gone too). Nothing happens once every byte and the
    // FIN are acknowledged, or when the stream was reset already. Writing
    // to a stream reset this way throws std::logic_error, as after finish;
    // one reset because the peer sent STOP_SENDING (event::StreamStopped)
    // takes nothing instead, since the application could not know.
    // std::logic_error for the peer's unidirectional stream (receive-only).
    void reset_stream(StreamId id, std::uint64_t error_code);
    // stop_sending() abandons this side's reading: bytes received and not
    // read are dropped, later ones are counted for flow control and
    // dropped, and the peer gets a STOP_SENDING with the code, resent until
    // acknowledged, asking it to reset the stream (RFC 9000 §3.5). read()
    // and peek() find nothing from then on. Nothing is sent once the peer
    // has reset the stream or every byte and the FIN have arrived.
    // std::logic_error for a unidirectional stream of this side (send-only).
    void stop_sending(StreamId id, std::uint64_t error_code);
    // The stream's send priority (StreamPriority above), from the next
    // packet on; std::invalid_argument for an urgency above 7 or a stream
    // that is not open. A stream opened by either side starts at the
    // default, which stream_priority() also returns for a stream not open.
    void set_stream_priority(StreamId id, StreamPriority priority);
    [[nodiscard]] StreamPriority stream_priority(StreamId id) const;

    // Replaces the congestion controller by registry name and option string,
    // e.g. a server adopting the controller its client asked for in the
    // application params. Meant for right after the handshake (the new
    // controller starts from its initial window). Throws std::invalid_argument
    // on an unknown name or bad options, leaving the current one in place.
    void set_congestion_control(const std::string& name, const std::string& options = {});
    // Replaces the receive windows (ConnectionConfig's initial_max_data,
    // initial_max_stream_data, autotune_receive_windows) from now on, for
    // the connection and every stream, e.g. a server adopting the window its
    // client asked for in the application params. Credit already advertised
    // is never withdrawn (RFC 9000 §4.1): a larger window goes out at once
    // in MAX_DATA / MAX_STREAM_DATA, a smaller one binds once the peer has
    // used the credit it has. Throws std::invalid_argument on a zero window.
    void set_receive_windows(std::uint64_t max_data, std::uint64_t max_stream_data, bool autotune);
    // Caps the connection-level receive window at `bytes` (> 0) from now on,
    // below what set_receive_windows and auto-tuning allow; credit already
    // advertised stays. An Endpoint sets it to the connection's share of
    // EndpointConfig::receive_budget.
    void cap_receive_window(std::uint64_t bytes);

    // Key update (RFC 9001 §6): this side's 1-RTT packets go out under the
    // next key phase from the next one on, and the peer answers in kind. True
    // when it started; false, nothing changed, when it is not allowed yet:
    // before the handshake is confirmed (§6.1), while the previous update is
    // unanswered or no packet of the current phase has been acknowledged
    // (§6.1, §6.5), or once the connection ends. ndm also updates by itself
    // before the AEAD's confidentiality limit (§6.6).
    // ConnectionStats::key_updates counts the phases.
    bool request_key_update();
    // Unreliable datagrams (RFC 9221). send_datagram() queues one payload
    // for a DATAGRAM frame of its own: sent once, under the congestion window
    // and the pacer like any data (RFC 9221 §5.4), ahead of stream data,
    // never retransmitted; its fate comes back as event::DatagramAcked or
    // event::DatagramLost. Refused, with the reason, when it is longer than
    // max_datagram_payload(), the send buffer is full, the peer did not
    // advertise max_datagram_frame_size (or the handshake is not complete:
    // ndm sends no DATAGRAM in 0-RTT), or the connection is closing.
    DatagramSendResult send_datagram(std::span<const std::uint8_t> payload);
    // The longest payload send_datagram() takes now: the smaller of what the
    // peer's max_datagram_frame_size and one packet of max_datagram_size()
    // leave after the frame's header (1408 bytes with 1452-byte datagrams);
    // 0 when send_datagram() would answer not_negotiated.
    [[nodiscard]] std::size_t max_datagram_payload() const;
    // The oldest received datagram not yet read, or nothing. Datagrams are
    // handed over in the order they arrived (no reordering, RFC 9221 §5);
    // the peer's own order may differ.
    std::optional<std::vector<std::uint8_t>> recv_datagram();
    // Datagrams waiting for recv_datagram().
    [[nodiscard]] std::size_t datagrams_readable() const;

    // Starts a graceful close with a code and reason; the peer is told.
    void close(std::uint64_t code, std::string reason, Instant now, bool application = true);

    [[nodiscard]] ConnectionState state() const;
    [[nodiscard]] bool is_established() const { return state() == ConnectionState::established; }
    [[nodiscard]] bool is_closed() const { return state() == ConnectionState::closed; }
    [[nodiscard]] const CloseInfo& close_info() const;
    [[nodiscard]] bool is_client() const;
    // A resuming client may write now, before the handshake completes: its
    // streams go out in 0-RTT packets (TlsOptions::early_data, RFC 9001 §4.6.1).
    [[nodiscard]] bool can_send_early_data() const;
    // Negotiated values, valid once established.
    [[nodiscard]] std::size_t max_datagram_size() const;
    [[nodiscard]] std::span<const std::uint8_t> peer_application_params() const;
    // ALPN, cipher suite and the peer's transport parameters (empty before).
    [[nodiscard]] HandshakeSummary handshake_summary() const;
    // The connection ID the peer puts in packets to us (endpoints route by it).
    [[nodiscard]] std::span<const std::uint8_t> local_cid() const;
    // The connection ID this side puts in packets to the peer (the peer's choice).
    [[nodiscard]] std::span<const std::uint8_t> peer_cid() const;

    [[nodiscard]] ConnectionStats stats(Instant now) const;

    struct Impl;

private:
    explicit Connection(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace ndm

#pragma GCC visibility pop
