// ndm::Endpoint: the I/O driver around the sans-I/O Connection. One UDP socket,
// many connections multiplexed on it by connection ID, an io_uring data path
// (multishot recvmsg over a provided-buffer ring, UDP GSO/GRO) with an Asio/epoll
// fallback, optional impairment Links on egress and ingress, and two ways to use
// it: an event loop the application runs (callbacks, or a pollable fd for
// integration into another loop) and a small blocking facade.
//
// Threading: an Endpoint and everything reached through it (Connection*,
// callbacks, BlockingStream) belongs to ONE thread: the first one that calls
// run_once()/run_until() (it may be constructed elsewhere). The io_uring
// backend binds its ring to that thread (SINGLE_ISSUER); driving the endpoint
// from another thread later throws EndpointError. There are no internal locks
// and no threads of ndm's own. With NDM_IO_URING_SEND=async in the environment
// the io_uring backend hands sends of 16 KB or more (GSO batches) to the
// kernel's io-wq worker, limited to one per driving thread so that datagrams
// leave in order (that limit is per thread, so it also caps other io_uring
// rings driven from the same thread); by default sends run inline. Callbacks run inside
// run_once() on the calling thread and may call back into
// the Endpoint (write, read, close, connect). Different Endpoints are
// independent and may run on different threads.
//
// Errors never hang: bind failures throw from the constructor; a connection
// that fails (ICMP port unreachable on a client endpoint, a send the kernel
// refuses, handshake timeout, idle timeout, peer close) ends with
// event::Closed carrying a code and a one-line reason; the blocking facade
// turns those into exceptions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/link.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

enum class IoBackend {
    automatic,  // io_uring when the kernel allows it, else the epoll fallback
    uring,      // io_uring or fail (throws EndpointError)
    epoll,      // Asio/epoll with recvmmsg/sendmmsg
};
// "auto" | "uring" | "epoll" (the tools' --io option); throws std::invalid_argument.
IoBackend parse_io_backend(const std::string& name);
const char* to_string(IoBackend b);

// Server side: when a client's Initial is answered with a Retry (RFC 9000
// §8.1.2) instead of a connection.
enum class RetryPolicy {
    never,
    under_load,  // once EndpointConfig::retry_threshold handshakes are in progress or began in the last second
    always,
};
// "auto" (under_load) | "always" | "never" (the tools' --retry option);
// throws std::invalid_argument.
RetryPolicy parse_retry_policy(const std::string& name);
const char* to_string(RetryPolicy p);

// Local-only close codes the Endpoint uses (never sent on the wire as such).
inline constexpr std::uint64_t kClosePeerUnreachable = 0x102;  // ICMP error / no route
// The application close code BlockingStream::close() sends when it gives up
// on data the peer has not acknowledged (0 when everything arrived).
inline constexpr std::uint64_t kCloseAbandoned = 0x1;

struct EndpointConfig {
    // Numeric address to bind. "::" binds dual-stack (IPv4 peers appear as
    // v4-mapped); if IPv6 is unavailable the endpoint falls back to 0.0.0.0.
    std::string bind_address = "::";
    std::uint16_t port = 0;  // 0 = ephemeral; local_port() tells which
    IoBackend backend = IoBackend::automatic;
    bool gso = true;  // UDP_SEGMENT batches on send (probed; off with a log line if refused)
    bool gro = true;  // UDP_GRO coalescing on receive (probed likewise)
    // Server side: create connections for unknown Initial datagrams. Such a
    // listening endpoint does not take ICMP errors (no IP_RECVERR): every
    // answer to a spoofed Initial would bring one back, and the kernel fails
    // the next send or receive of the socket with it, whichever peer that is
    // for (docs/security.md, "ICMP errors"); only a client endpoint ends a
    // connection at an ICMP port unreachable.
    bool accept_connections = false;
    // Server side: accepted connections still in their handshake (half-open)
    // at once. Each costs state until it completes or its handshake timeout,
    // so a flood of Initials from spoofed addresses would otherwise grow
    // without bound. At the cap a new Initial evicts the oldest half-open
    // connection (silently, as a SYN cache does), so a client whose handshake
    // completes within the time the flood takes to fill the cap still gets
    // in. Retry (below) keeps spoofed Initials from getting this far.
    std::size_t max_half_open = 1024;
    // Server side: accepted connections (in any state until removed) from
    // one IP address at once, whatever its ports, so that one host cannot
    // take the whole table. At the cap an Initial without a valid token gets
    // a Retry (RFC 9000 §8.1.2; none with RetryPolicy::never: dropped), and
    // one whose token proves the address evicts the address's oldest
    // handshake in progress, so that a spoofer of the address cannot lock
    // its owner out; with none to evict it is dropped silently. Drops count
    // in EndpointStats::per_address_refused. 256 lets ndm-send -P 128 (its
    // maximum) start a test while the previous test's 128 connections close.
    std::size_t max_connections_per_address = 256;
    // Server side: address validation with Retry (RFC 9000 §8.1.2). A Retry
    // costs the client one round trip and the server no state: the client's
    // next Initial returns its token (bound to the client's address and
    // port, valid 10 s), which proves the address before the server spends
    // a TLS handshake on it or sends it more than 3x what it received. So a
    // flood of Initials from spoofed addresses costs a Retry each, not a
    // handshake. under_load answers with Retry once retry_threshold
    // handshakes are in progress or have begun within the last second;
    // always, every Initial without a valid token. An Initial whose Retry
    // token does not validate (forged, expired, another address or port) is
    // dropped: a client that took a Retry would not take a second one
    // (§17.2.5.2). A token of another kind (another server's NEW_TOKEN)
    // counts as none (§8.1.3).
    RetryPolicy retry = RetryPolicy::under_load;
    std::size_t retry_threshold = 128;
    // Server side: the secret stateless reset tokens derive from (RFC 9000
    // §10.3.2: HMAC-SHA256 of the connection ID). A server that restarts with
    // the same secret (or every server behind one address) answers packets of
    // connections it no longer knows with a reset their clients recognise, so
    // they end at once instead of at their idle timeout. Unset: a random one
    // per Endpoint. Keep it as secret as a private key.
    std::optional<std::array<std::uint8_t, 32>> stateless_reset_key;
    // Defaults for connections this endpoint creates (connect and accept).
    // The seed is replaced per connection, and unless `random_bytes` is set the
    // connection IDs come from a cryptographic generator (ConnectionConfig).
    ConnectionConfig connection;
    // Optional impairments, one Link per connection and direction (e.g. a
    // sim::SimpleLink, or src/emu's emulator). Egress sits between
    // Connection::poll_datagram and the socket; ingress between the socket and
    // Connection::on_datagram (the very first Initial of an accepted
    // connection bypasses it, since the link is created for that connection).
    LinkFactory egress_link;
    LinkFactory ingress_link;
    // SO_RCVBUF / SO_SNDBUF request (SO_*BUFFORCE when privileged).
    int socket_buffer_bytes = 8 << 20;
    // Flow-control credit the endpoint's connections give their peers in
    // all: each connection's receive window (MAX_DATA's lead over what its
    // application consumed) is capped at an equal share, receive_budget /
    // connections, and never below kMinReceiveShare; 0 = no budget. It
    // bounds what peers can make the endpoint buffer (credit is what a peer
    // may send before anything is read), and it keeps many connections from
    // together outrunning one socket's receive buffer when the application
    // is the bottleneck: 128 connections with 32 MiB windows each overflowed
    // it on loopback and lost whole GSO batches
    // (bench/results/2026-12-06-connections.md). So the budget is never more than the
    // socket's receive buffer as the kernel reports it (SO_RCVBUF: twice
    // socket_buffer_bytes where the kernel allows that much; raise both for
    // more credit), or 4 MiB if that is less. When the kernel still drops
    // receives for a full buffer, the budget in use is halved (at most every
    // 20 ms, down to 4 MiB or half its ceiling) and then grows back by an
    // eighth of it every 50 ms without drops
    // (EndpointStats::receive_budget_cuts). A connection's initial window (the
    // initial_max_data it advertises) is its share when it starts, and a
    // share that shrinks as connections arrive binds once a peer has used
    // the credit it already had (RFC 9000 §4.1: credit is never withdrawn).
    std::uint64_t receive_budget = 64u << 20;
    // SO_REUSEPORT, so that several endpoints, each driven by its own thread,
    // serve one address and port (every one of them must set it). The kernel
    // picks the endpoint by a hash of the 4-tuple, so all of a connection's
    // datagrams reach the one that holds it while the client's address and
    // port stay put; ndm does not migrate connections (RFC 9000 §9), and a
    // datagram that reaches another endpoint is answered as one of an unknown
    // connection (a stateless reset, when stateless_reset_key is shared).
    // Retry tokens stay valid: the retried Initial has the same 4-tuple.
    bool reuse_port = false;
    // When set, every connection without its own ConnectionConfig::observer
    // writes a qlog file into this directory (ndm/qlog.hpp; created if
    // missing, the constructor throws EndpointError when it cannot be).
    std::string qlog_dir;
};

// The smallest share of EndpointConfig::receive_budget a connection gets,
// however many share it: 45 datagrams of 1452 bytes.
inline constexpr std::uint64_t kMinReceiveShare = 64u << 10;

class EndpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A BlockingStream call that cannot go on because the peer abandoned its
// half of the stream (RESET_STREAM) or asked this side to abandon its own
// (STOP_SENDING, RFC 9000 §3.5): the code is the peer's application error code.
class StreamAbortedError : public EndpointError {
public:
    StreamAbortedError(const std::string& what, std::uint64_t code) : EndpointError(what), code_(code) {}
    [[nodiscard]] std::uint64_t code() const { return code_; }

private:
    std::uint64_t code_;
};

// What the peer abandoned of one stream, as the connection's events said:
// reset_code from event::StreamReset (its sending, our reading, ended),
// stop_code from event::StreamStopped (it asked; our sending was reset).
struct StreamAbort {
    StreamId id = 0;
    std::optional<std::uint64_t> reset_code, stop_code;
};
// Streams per connection whose aborts an Endpoint remembers (the newest).
inline constexpr std::size_t kStreamAbortsKept = 64;

// Checks `host` as Endpoint takes a bind address: a numeric IPv4/IPv6
// address, optionally in brackets, or "localhost". Throws
// std::invalid_argument naming `what` otherwise, so a tool refuses a bad
// address as bad input before any socket exists.
void check_numeric_address(const std::string& host, const std::string& what);

// A host name the system's resolver did not turn into an address (of the
// family asked): a runtime failure, as a TCP client's (iperf3, curl), since
// the same name may resolve later or elsewhere.
class ResolveError : public EndpointError {
public:
    using EndpointError::EndpointError;
};

enum class AddressFamily : std::uint8_t { any, ipv4, ipv6 };

// The numeric address connect() sends to for `host`: `host` itself when it
// is an IPv4 or IPv6 literal (optionally in brackets) or "localhost"
// (127.0.0.1); else the first address of `family` that the system's
// resolver gives for the name (getaddrinfo: /etc/hosts, DNS; in its order,
// RFC 6724). Only that address is tried: QUIC has no connect() that fails
// over to the next one, as TCP clients do. Blocks while the resolver works.
// Throws std::invalid_argument naming `host` when it is neither a literal nor
// a host name (RFC 1123 §2.1), or a literal of the other family;
// ResolveError when the name does not resolve.
std::string resolve_host(const std::string& host, AddressFamily family = AddressFamily::any);
// Checks `host` as connect() takes it (a literal or a host name, without
// resolving it). Throws std::invalid_argument naming `what` otherwise.
void check_host(const std::string& host, const std::string& what);

using ConnectionHandle = std::uint64_t;  // endpoint-local, never reused

struct EndpointStats {
    std::uint64_t datagrams_received = 0;  // after GRO splitting
    std::uint64_t datagrams_sent = 0;      // before GSO coalescing
    std::uint64_t send_calls = 0;          // sendmsg SQEs / sendmmsg entries
    std::uint64_t unroutable = 0;          // no connection for the CID (and not an Initial we accept)
    std::uint64_t send_errors = 0;
    // Receives the kernel dropped because the socket's receive buffer was
    // full (SO_RXQ_OVFL), as of the last datagram read: what arrives faster
    // than the endpoint reads (a flood; socket_buffer_bytes too small). The
    // kernel counts buffers, not datagrams: a GSO batch from a local sender
    // (loopback) arrives and is dropped whole, up to 64 datagrams at once.
    std::uint64_t receive_drops = 0;
    // Times the receive budget in use was halved for such drops, the budget
    // in use now, and the most it may be: EndpointConfig::receive_budget
    // capped by the socket's receive buffer (0: none).
    std::uint64_t receive_budget_cuts = 0;
    std::uint64_t receive_budget = 0;
    std::uint64_t receive_budget_max = 0;
    std::uint64_t icmp_errors = 0;
    std::uint64_t half_open_evicted = 0;  // handshakes dropped for max_half_open or max_connections_per_address
    std::uint64_t stateless_resets_sent = 0;  // RFC 9000 §10.3: answers to datagrams for unknown IDs
    std::uint64_t retries_sent = 0;           // RFC 9000 §8.1.2
    std::uint64_t invalid_tokens = 0;         // Initials dropped for a token that did not validate
    std::uint64_t per_address_refused = 0;    // Initials dropped for max_connections_per_address
    // Service passes, and connection turns within them (a turn: a connection's
    // datagrams out and events to the application). A pass gives turns only
    // to connections with work (a datagram arrived, a timer is due, the
    // application reached it through connection()), so idle connections do
    // not add to what each pass costs.
    std::uint64_t turns = 0;
    std::uint64_t connection_turns = 0;
};

class Endpoint {
public:
    // Binds the socket and selects the backend. Throws EndpointError with a
    // one-line message ("cannot bind UDP 127.0.0.1:80: Permission denied").
    explicit Endpoint(EndpointConfig config);
    ~Endpoint();
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;

    // --- Event API ------------------------------------------------------
    // Called for every connection event (Established, StreamOpened,
    // StreamReadable, StreamWritable, Closed), from inside run_once().
    using EventHandler = std::function<void(ConnectionHandle, const Event&)>;
    void on_event(EventHandler handler);

    // Starts a client connection to `host`: a numeric address, "localhost"
    // or a host name, resolved as resolve_host() does (for the socket's
    // family; an IPv6 socket reaches IPv4 addresses mapped). The TLS server
    // name defaults to `host`. Throws ResolveError for a name that does not
    // resolve, EndpointError for an address the socket cannot reach,
    // std::invalid_argument for a host that is neither literal nor name.
    // Throws EndpointError on a bad address; failures later arrive as Closed.
    ConnectionHandle connect(const std::string& host, std::uint16_t port);
    ConnectionHandle connect(const std::string& host, std::uint16_t port, const ConnectionConfig& config);

    // The connection behind a handle, or nullptr once it has closed and been
    // removed. Use it for streams (open_stream, write, read, ...); the
    // endpoint notices the access and sends what it allows on the next run.
    Connection* connection(ConnectionHandle h);
    // Read-only lookup that does not schedule the connection (for predicates).
    [[nodiscard]] const Connection* find(ConnectionHandle h) const;
    [[nodiscard]] std::size_t connection_count() const;
    // The connections given a turn since the last call, each once, in the
    // order they got work (closed and removed ones included): a datagram
    // reached them, a timer fired, or the application reached them through
    // connection(). Only these can have changed meanwhile — data arrived or
    // acknowledged, windows, state — so a driver of many connections
    // revisits these instead of polling every one each run. A datagram is
    // processed when it arrives, so its data is readable before the turn.
    // The first call starts the record (it returns nothing): poll every
    // connection once after it.
    std::vector<ConnectionHandle> take_turned();
    // Server connections that completed the handshake, oldest first (also
    // reported as Established events). Returns nullopt when none is waiting.
    std::optional<ConnectionHandle> next_accepted();
    // How a connection ended (set once it is closing; kept for a while after
    // the connection is removed), or nullptr while it is open.
    [[nodiscard]] const CloseInfo* close_info(ConnectionHandle h) const;
    // The first stream the peer opened on the connection, if any yet.
    [[nodiscard]] std::optional<StreamId> peer_stream(ConnectionHandle h) const;
    // The peer's RESET_STREAM and STOP_SENDING codes for a stream, as the
    // events said, for the last kStreamAbortsKept streams of a connection
    // that had any, while the connection is held; nullopt for a stream the
    // peer abandoned nothing of. BlockingStream reads it.
    [[nodiscard]] std::optional<StreamAbort> stream_abort(ConnectionHandle h, StreamId id) const;
    // The address and port the connection's peer sends from, as
    // local_address() prints one ("192.0.2.1:4433", "[2001:db8::1]:4433"; an
    // IPv4-mapped IPv6 peer as IPv4), or "" once the connection is removed.
    [[nodiscard]] std::string peer_address(ConnectionHandle h) const;

    // Processes what is ready, then waits for I/O until `deadline` or the next
    // connection/impairment timer, whichever is first, and processes again.
    void run_once(Instant deadline);
    // run_once() until pred() holds or `timeout` passes; returns pred().
    bool run_until(const std::function<bool()>& pred, Duration timeout);

    // Integration with a foreign loop: wait until fd() is readable or
    // next_deadline() is reached, then call run_once(steady_now()).
    [[nodiscard]] int fd() const;
    [[nodiscard]] Instant next_deadline() const;

    // Client migration (RFC 9000 §9.2): the endpoint's socket is replaced by
    // a new one on the same address, port `port` (0: any free one), and each
    // connection probes the new path with PATH_CHALLENGE under a connection
    // ID the server has not seen (Connection::migrate), moving there once
    // the server's PATH_RESPONSE validates it (event::PathValidation). The
    // endpoint has one socket, so the old path goes at once: until the new
    // one is validated its packets too leave from the new port, which the
    // server follows as a NAT rebinding (§9.3). A connection that cannot
    // migrate (the server sent disable_active_migration, no spare connection
    // ID) is moved that way only. Throws EndpointError on an endpoint that
    // accepts connections, or when the new socket cannot be bound (the old
    // one is kept then).
    void rebind(std::uint16_t port = 0);
    [[nodiscard]] std::uint16_t local_port() const;
    [[nodiscard]] std::string local_address() const;  // "[::]:4433" / "127.0.0.1:4433"
    [[nodiscard]] IoBackend backend() const;          // uring or epoll, as selected
    [[nodiscard]] bool gso_enabled() const;
    [[nodiscard]] bool gro_enabled() const;
    [[nodiscard]] EndpointStats stats() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Blocking facade: one bidirectional stream per connection, socket-like.
// Each call runs the endpoint's loop until it can return. Throws EndpointError
// with the close reason when the connection fails or the timeout passes, and
// StreamAbortedError, naming the peer's code, when the peer reset the stream
// (read) or asked this side to stop sending (write, close), instead of
// waiting for bytes or acknowledgements that cannot come.
class BlockingStream {
public:
    // Connects and opens the stream (the peer sees it on its first write).
    static BlockingStream connect(Endpoint& ep, const std::string& host, std::uint16_t port,
                                  Duration timeout = std::chrono::seconds(10));
    // Waits for a server connection whose peer opened a stream.
    static BlockingStream accept(Endpoint& ep, Duration timeout = std::chrono::seconds(10));

    // Writes all of data (blocking while the send buffer is full).
    // StreamAbortedError once the peer sent STOP_SENDING: nothing more is taken.
    void write(std::span<const std::uint8_t> data, Duration timeout = std::chrono::seconds(30));
    // Reads at least one byte; returns 0 at the end of the stream.
    // StreamAbortedError once the peer reset the stream: bytes not read by
    // then are gone with it (RFC 9000 §3.2), and no more will come.
    std::size_t read(std::span<std::uint8_t> out, Duration timeout = std::chrono::seconds(30));
    // Sends FIN (end of our direction). Queues it only: close() is what
    // waits for the peer to acknowledge it.
    void finish();
    // Ends the stream and the connection, as a socket's close() does: sends
    // FIN if finish() was not called, then waits until the peer's transport
    // has acknowledged every byte written and the FIN (an empty stream
    // arrives too), then closes the connection with NO_ERROR. The wait lasts
    // as long as acknowledgements keep coming: `timeout` bounds a stretch
    // without progress, not the whole wait, so a large send over a slow path
    // is not cut short.
    //
    // Throws EndpointError when data would be lost: the peer acknowledged
    // nothing new for `timeout`, or the connection ended first (the message
    // says how many bytes were acknowledged of how many written, and why);
    // StreamAbortedError at once when the peer asked to stop (STOP_SENDING).
    // The connection is closed in either case (with application error code
    // kCloseAbandoned and a reason naming the bytes when data was abandoned),
    // so nothing is left behind. Acknowledged means
    // delivered to the peer's transport, not read by its application: a
    // peer that must not lose unread data reads before its connection's
    // draining period ends (RFC 9000 §10.2).
    void close(Duration timeout = std::chrono::seconds(5));

    [[nodiscard]] ConnectionHandle handle() const { return handle_; }
    [[nodiscard]] StreamId stream() const { return stream_; }

private:
    BlockingStream(Endpoint& ep, ConnectionHandle h, StreamId s) : ep_(&ep), handle_(h), stream_(s) {}
    Connection& conn(const char* what);
    void note_delivery(const Connection& c);
    void throw_if_aborted(const char* what, bool reading) const;
    Endpoint* ep_;
    ConnectionHandle handle_;
    StreamId stream_;
    std::uint64_t written_ = 0;
    bool finished_ = false;
    bool delivered_ = false;      // every byte and the FIN acknowledged, as last seen
    std::uint64_t acked_ = 0;     // bytes acknowledged, as last seen
};

}  // namespace ndm

#pragma GCC visibility pop
