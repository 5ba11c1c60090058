// The I/O backend seam: one UDP socket, batched sends (GSO super-datagrams when
// the kernel takes them), batched receives (GRO split), and one wait call with
// a deadline. Two implementations: io_uring (uring_backend) and Asio/epoll
// (epoll_backend). Backends know nothing about connections; the Endpoint does.
// Single-threaded, like the Endpoint that owns it.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ndm/ecn.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/time.hpp"
#include "ndm/udp_socket.hpp"
#include "transport/peer_address.hpp"

namespace ndm::io {

// A socket address (IPv4 or IPv6), comparable and hashable for peer lookups.
struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;

    [[nodiscard]] int family() const { return storage.ss_family; }
    [[nodiscard]] std::uint16_t port() const;
    [[nodiscard]] const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
    sockaddr* sa() { return reinterpret_cast<sockaddr*>(&storage); }
    bool operator==(const Address& o) const;
    [[nodiscard]] std::size_t hash() const;
    // "127.0.0.1:4433" / "[::1]:4433"; v4-mapped IPv6 prints as IPv4.
    [[nodiscard]] std::string to_string() const;

    // Numeric address (or "localhost") and port; throws EndpointError.
    static Address parse(const std::string& host, std::uint16_t port);
    // `host` as parse() reads it, else a host name looked up with
    // getaddrinfo: the first address of `family` (AF_UNSPEC: either) in the
    // resolver's order. Throws std::invalid_argument for a host that is
    // neither (or a literal of the other family), ResolveError when the name
    // does not resolve (ndm::resolve_host, include/ndm/endpoint.hpp).
    static Address resolve(const std::string& host, std::uint16_t port, int family);
    static Address from(const sockaddr* sa, socklen_t len);
    // The same peer expressed for a socket of `family` (v4 → v4-mapped v6);
    // returns false when it cannot be reached from that family.
    bool convert_to(int family, Address& out) const;
    // The same host with port 0: the key of per-host bookkeeping.
    [[nodiscard]] Address host() const;
    // The address as the sans-I/O router sees it (src/transport/router.hpp).
    [[nodiscard]] transport::PeerAddress peer() const;
};

// A syntactically valid host name (RFC 1123 §2.1 labels, underscores allowed).
bool is_host_name(std::string_view name);

struct AddressHash {
    std::size_t operator()(const Address& a) const { return a.hash(); }
};

// Receives what a backend's wait() found.
class RxHandler {
public:
    virtual ~RxHandler() = default;
    // One datagram (already split out of a GRO super-datagram; the pieces
    // share the super-datagram's ECN codepoint, as the kernel coalesces only
    // datagrams with equal TOS). The bytes are valid only during the call.
    virtual void on_datagram(std::span<const std::uint8_t> data, const Address& from, Ecn ecn) = 0;
    // An ICMP error for traffic to `peer` (IP_RECVERR) or a failed send
    // (unreachable route): errno-style code and a one-line description.
    virtual void on_peer_error(const Address& peer, int error, const std::string& what) = 0;
};

struct SocketOptions {
    Address bind;
    bool gso = true;
    bool gro = true;
    int buffer_bytes = 8 << 20;
    bool reuse_port = false;  // SO_REUSEPORT (EndpointConfig::reuse_port)
    // IP_RECVERR: ICMP errors for our sends reach the endpoint (a dead peer is
    // reported at once). Off for a listening endpoint: see Endpoint::Impl.
    bool report_errors = true;
    // io_uring provided buffers with GRO, one per received message however
    // small (UringBackend::init_buffers). A client endpoint takes more: see Endpoint::Impl.
    unsigned gro_receive_buffers = 16;
};

// Largest payload a UDP/IPv4 datagram (or GSO super-datagram) may carry.
inline constexpr std::size_t kMaxUdpPayload = 65507;
// Kernel cap on segments per GSO send (UDP_MAX_SEGMENTS).
inline constexpr std::size_t kMaxGsoSegments = 64;
// Each send slot holds one datagram or one GSO super-datagram.
inline constexpr std::size_t kTxSlotSize = 65536;

struct OpenedSocket;

// A received message's control data, as UdpReceiveBatch::info() gives it.
using RxControl = UdpReceiveInfo;

class Backend {
public:
    virtual ~Backend() = default;

    [[nodiscard]] virtual IoBackend kind() const = 0;
    [[nodiscard]] const Address& local_address() const { return local_; }
    [[nodiscard]] bool gso() const { return gso_; }
    [[nodiscard]] bool gro() const { return gro_; }
    // Readable when wait() would find work (for foreign event loops).
    [[nodiscard]] virtual int pollable_fd() const = 0;

    // A free send slot of kTxSlotSize bytes, or nullptr while all slots are
    // in flight (wait() frees them).
    virtual std::uint8_t* tx_slot() = 0;
    // Queues the slot last returned by tx_slot(): `len` bytes to `to`. With
    // segment > 0 and len > segment the kernel splits it into datagrams of
    // `segment` bytes (the last may be shorter): one GSO send. Every datagram
    // of it carries the ECN codepoint `ecn` (a per-send IP_TOS / IPV6_TCLASS cmsg).
    virtual void tx_queue(std::size_t len, std::size_t segment, const Address& to, Ecn ecn) = 0;
    // Hands queued sends to the kernel now (wait() does it too).
    virtual void flush() = 0;
    // Sends what is queued, then waits until something arrives or `deadline`
    // passes (a deadline not in the future only polls), and delivers all
    // received datagrams and errors to `h`.
    virtual void wait(Instant deadline, RxHandler& h) = 0;

    [[nodiscard]] std::uint64_t send_calls() const { return send_calls_; }
    // Sends the kernel refused for good (EndpointStats::send_errors).
    [[nodiscard]] virtual std::uint64_t send_errors() const = 0;
    // Receives the kernel dropped for a full receive buffer, as of the last
    // datagram read (EndpointStats::receive_drops).
    [[nodiscard]] std::uint64_t receive_drops() const { return receive_drops_; }
    // What the socket's receive queue may hold (UdpSocket::receive_buffer_bytes).
    [[nodiscard]] std::size_t receive_buffer_bytes() const { return receive_buffer_; }

protected:
    // Takes on a socket from open_udp_socket(): its address and offloads; returns the fd.
    int adopt(const OpenedSocket& s);

    Address local_;
    bool gso_ = false;
    bool gro_ = false;
    std::size_t receive_buffer_ = 0;
    std::uint64_t send_calls_ = 0;
    // Every received message passes its control data here.
    void note_received(const RxControl& c) {
        if (c.kernel_drops) receive_drops_ = c.kernel_drops;  // cumulative: the latest is the total
    }

private:
    std::uint64_t receive_drops_ = 0;
};

// Page-aligned anonymous memory for send slots and receive buffers: huge
// pages where the kernel grants them (MADV_HUGEPAGE) and populated up front,
// since first-touch page faults are expensive in VMs and would land on the
// data path.
class PageBuffer {
public:
    PageBuffer() = default;
    explicit PageBuffer(std::size_t bytes);
    ~PageBuffer();
    PageBuffer(PageBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    PageBuffer& operator=(PageBuffer&& o) noexcept;
    [[nodiscard]] std::uint8_t* data() const { return p_; }
    [[nodiscard]] std::size_t size() const { return n_; }

private:
    std::uint8_t* p_ = nullptr;
    std::size_t n_ = 0;
};

// The socket could not be bound: no backend will do better.
class BindError : public EndpointError {
public:
    using EndpointError::EndpointError;
};

// Socket helpers shared by both backends (socket.cpp, over ndm::UdpSocket).
struct OpenedSocket {
    int fd = -1;
    Address local;
    bool gso = false;
    bool gro = false;
    std::size_t receive_buffer = 0;  // UdpSocket::receive_buffer_bytes
};
// Opens, configures (buffers, IP_RECVERR, GRO, GSO probe, received TOS) and binds; dual-stack
// for "::" with a fallback to 0.0.0.0 when IPv6 is unavailable. Throws EndpointError.
OpenedSocket open_udp_socket(const SocketOptions& opt);
// Drains the socket error queue (MSG_ERRQUEUE) into h.on_peer_error.
void drain_error_queue(int fd, RxHandler& h);
// The control data of a received message: the UDP_GRO segment size (0 if
// absent), the ECN codepoint of the IP_TOS / IPV6_TCLASS cmsg (not-ECT if
// absent) and the SO_RXQ_OVFL drop count (0 if absent).
RxControl parse_rx_control(const msghdr& msg);
// Delivers a received (possibly GRO-coalesced) payload split into datagrams
// (ndm::for_each_gro_segment), each with the payload's codepoint.
void deliver_split(std::span<const std::uint8_t> payload, const RxControl& control, const Address& from,
                   RxHandler& h);
// Fills a control buffer with a UDP_SEGMENT cmsg (segment > 0) and an ECN
// cmsg (ecn not not-ECT) for a send to `to`; returns the length written.
std::size_t write_tx_cmsgs(std::uint8_t* buf, std::size_t cap, std::uint16_t segment, const sockaddr* to, Ecn ecn);
// Is this send error the kernel refusing GSO (no checksum offload, bad size)?
bool is_gso_refusal(int error);
// Is this errno an ICMP error the socket holds (IP_RECVERR)? On an
// unconnected socket it fails the next send or receive whichever peer it
// is for, and that call clears it; the error queue says which peer.
bool is_icmp_error(int error);
// Sends a GSO payload one datagram at a time with plain sendmsg (fallback
// after a GSO refusal, resend after an ICMP error). A send that an ICMP
// error consumed is tried again (a few times) and sets *icmp_seen. Returns 0
// or the first errno that stayed.
int send_segments(int fd, const std::uint8_t* data, std::size_t len, std::size_t segment, const Address& to,
                  Ecn ecn, bool* icmp_seen = nullptr);

inline int Backend::adopt(const OpenedSocket& s) {
    local_ = s.local;
    gso_ = s.gso;
    gro_ = s.gro;
    receive_buffer_ = s.receive_buffer;
    return s.fd;
}

std::unique_ptr<Backend> make_uring_backend(const SocketOptions& opt);  // throws EndpointError
std::unique_ptr<Backend> make_epoll_backend(const SocketOptions& opt);
// The socket `cfg` asks for under the backend it names; IoBackend::automatic
// is io_uring where the kernel allows it, else the epoll fallback
// (endpoint_config.cpp). Throws EndpointError (BindError) as the backends do.
std::unique_ptr<Backend> open_backend(const EndpointConfig& cfg);

}  // namespace ndm::io
