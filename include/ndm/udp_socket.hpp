// ndm::UdpSocket: one non-blocking UDP socket with batched I/O: recvmmsg
// batches in (UDP_GRO super-datagrams split into their datagrams), runs of
// datagrams to one destination out as UDP GSO sends (UDP_SEGMENT, udp(7)),
// datagram by datagram with sendmmsg where the path refuses GSO.
//
// Why a socket and not the Endpoint: the tools' second data path, the
// `ndm-emu relay` (tools/emu/relay.*), forwards datagrams between
// addresses and carries no connection, so the connection-routing Endpoint
// does not fit it; what it shares with the Endpoint is the socket. There is
// one implementation of each socket job: the Endpoint's backends (src/io)
// open their socket through this class (buffers, ICMP reporting, the GRO and
// GSO probes), the epoll backend receives through UdpReceiveBatch, and
// send() groups datagrams with the GSO rule the Endpoint's TransmitBatch
// follows (io::GsoRun). The backends keep their own send slots (io_uring needs
// each message header to outlive the call), built on the same cmsg helper.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/ecn.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

// A socket call failed; code() is the errno.
class UdpSocketError : public std::runtime_error {
public:
    UdpSocketError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
    [[nodiscard]] int code() const { return code_; }

private:
    int code_;
};

struct UdpSocketOptions {
    // SO_RCVBUF / SO_SNDBUF request (SO_*BUFFORCE when privileged): bursts are
    // absorbed by the socket, not dropped by the kernel.
    int buffer_bytes = 8 << 20;
    // ICMP errors reported (IP_RECVERR / IPV6_RECVERR, read from the error
    // queue) and path MTU discovery off, so 64 KB datagrams are fragmented
    // rather than refused: what the Endpoint needs. A socket that never reads
    // its error queue leaves this off.
    bool report_errors = false;
    // SO_REUSEPORT: several sockets (one per thread, say) bind one address
    // and port, and the kernel spreads datagrams over them by a hash of the
    // 4-tuple. Set before bind.
    bool reuse_port = false;
};

// A datagram to send: its bytes, destination (nullptr on a connected socket)
// and the ECN codepoint of its IP header (IP_TOS / IPV6_TCLASS, RFC 3168).
struct UdpDatagram {
    std::span<const std::uint8_t> data;
    const sockaddr* to = nullptr;
    socklen_t to_len = 0;
    Ecn ecn = Ecn::not_ect;
};

struct UdpSendResult {
    std::size_t dropped = 0;    // datagrams the kernel did not take (full buffer, unreachable)
    std::size_t gso_sends = 0;  // sends that carried several datagrams as one GSO super-datagram
    bool gso_refused = false;   // the path refused GSO: gso() is off from now on
};

// Calls f(datagram) for each datagram of a received payload: a GRO
// super-datagram of `segment`-byte datagrams (the last may be shorter), or
// one datagram when segment is 0 or covers it all.
template <class F>
void for_each_gro_segment(std::span<const std::uint8_t> payload, int segment, F&& f) {
    if (segment <= 0 || static_cast<std::size_t>(segment) >= payload.size()) {
        f(payload);
        return;
    }
    const auto seg = static_cast<std::size_t>(segment);
    for (std::size_t off = 0; off < payload.size(); off += seg) {
        f(payload.subspan(off, payload.size() - off < seg ? payload.size() - off : seg));
    }
}

// What the control messages of one received message say.
struct UdpReceiveInfo {
    int gro_segment = 0;     // the UDP_GRO segment size, 0 when the message is one datagram
    Ecn ecn = Ecn::not_ect;  // of its IP header (needs enable_ecn_reporting())
    // How many receives (datagrams, or a local sender's whole GSO batches)
    // the kernel had dropped on the socket for a full receive buffer when it
    // arrived, since the socket was opened; 0 until the first drop (needs
    // enable_drop_counting(): SO_RXQ_OVFL).
    std::uint32_t kernel_drops = 0;
};

// Buffers for one recvmmsg call: `count` messages of up to `size` bytes with
// their source address and control data (the UDP_GRO segment size).
class UdpReceiveBatch {
public:
    // In `memory` (count × size bytes, owned by the caller) or, when it is
    // empty, in memory of its own.
    UdpReceiveBatch(std::size_t count, std::size_t size, std::span<std::uint8_t> memory = {});

    // One recvmmsg without blocking: the messages received, or -errno
    // (-EAGAIN when nothing waits).
    int receive(int fd);

    // Message i of the last receive().
    [[nodiscard]] std::span<const std::uint8_t> payload(std::size_t i) const;
    [[nodiscard]] const sockaddr* from(std::size_t i) const;
    [[nodiscard]] socklen_t from_len(std::size_t i) const;
    [[nodiscard]] bool truncated(std::size_t i) const;
    // Its control messages, read in one pass; gro_segment() and ecn() read
    // one field of it each.
    [[nodiscard]] UdpReceiveInfo info(std::size_t i) const;
    [[nodiscard]] int gro_segment(std::size_t i) const { return info(i).gro_segment; }
    [[nodiscard]] Ecn ecn(std::size_t i) const { return info(i).ecn; }
    [[nodiscard]] std::size_t capacity() const { return msgs_.size(); }

private:
    struct Control {
        // UDP_GRO, SO_RXQ_OVFL, IP_TOS and IPV6_TCLASS: CMSG_SPACE(4) = 24
        // bytes each; a shorter buffer would cut the last (the ECN codepoint).
        alignas(cmsghdr) std::uint8_t bytes[128];
    };
    std::vector<std::uint8_t> own_;
    std::uint8_t* memory_;
    std::size_t size_;
    std::vector<mmsghdr> msgs_;
    std::vector<iovec> iov_;
    std::vector<sockaddr_storage> names_;
    std::vector<Control> control_;
};

class UdpSocket {
public:
    UdpSocket() = default;
    // A non-blocking socket of `family` (AF_INET, AF_INET6) with the options
    // applied. Throws UdpSocketError("socket: <reason>").
    UdpSocket(int family, const UdpSocketOptions& options);
    ~UdpSocket();
    UdpSocket(UdpSocket&& o) noexcept;
    UdpSocket& operator=(UdpSocket&& o) noexcept;
    UdpSocket(const UdpSocket&) = delete;
    UdpSocket& operator=(const UdpSocket&) = delete;

    // 0 or the errno. An IPv6 socket bound to the wildcard takes IPv4 peers
    // too (v4-mapped); bound to a specific address it is IPv6 only.
    int bind(const sockaddr* address, socklen_t length);
    int connect(const sockaddr* address, socklen_t length);
    // Turns on UDP_GRO; 0 or the errno (gro() tells).
    int enable_gro();
    // Turns on GSO sends when the kernel supports them (getsockopt(UDP_SEGMENT),
    // Linux 4.18+); 0 or the errno (gso() tells). A path that refuses GSO at
    // send time turns it off again (send(), or the caller via set_gso).
    int enable_gso();
    void set_gso(bool on) { gso_ = on; }
    // Reports each received datagram's TOS / Traffic Class byte (IP_RECVTOS,
    // and IPV6_RECVTCLASS on an IPv6 socket), whose two low bits are its ECN
    // codepoint (UdpReceiveBatch::ecn); 0 or the errno.
    int enable_ecn_reporting();
    // Reports the socket's count of receives the kernel dropped (datagrams,
    // or whole GSO batches from a local sender) with each received one
    // (SO_RXQ_OVFL; UdpReceiveInfo::kernel_drops); 0 or the errno.
    int enable_drop_counting();

    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] bool gso() const { return gso_; }
    [[nodiscard]] bool gro() const { return gro_; }
    [[nodiscard]] sockaddr_storage local_address(socklen_t& length) const;
    [[nodiscard]] std::uint16_t local_port() const;
    // What the kernel lets the receive queue hold (getsockopt SO_RCVBUF):
    // twice what was asked for, the kernel's allowance for its bookkeeping
    // (socket(7)), counted in the buffers' true sizes; 0 if it does not say.
    [[nodiscard]] std::size_t receive_buffer_bytes() const;
    // Gives up the descriptor (the caller closes it).
    int release();

    int receive(UdpReceiveBatch& batch) const { return batch.receive(fd_); }
    // Sends the datagrams in order: each run to one destination with one
    // codepoint as GSO sends while gso() holds, else with sendmmsg. Never blocks: what the kernel
    // does not take is dropped and counted, as a router would drop it.
    UdpSendResult send(std::span<const UdpDatagram> datagrams);

private:
    void send_run(std::span<const UdpDatagram> run, UdpSendResult& r);
    void send_each(std::size_t from, std::size_t to, UdpSendResult& r);

    struct Control {
        alignas(cmsghdr) std::uint8_t bytes[64];
    };

    int fd_ = -1;
    bool gso_ = false;
    bool gro_ = false;
    // The connected peer (family 0 when not connected): whether a datagram
    // without `to` takes IP_TOS or IPV6_TCLASS for its codepoint.
    sockaddr_storage peer_{};
    std::vector<iovec> iov_;        // of the run being sent
    std::vector<mmsghdr> msgs_;     // likewise
    std::vector<Control> control_;  // likewise: each datagram's codepoint
};

}  // namespace ndm

#pragma GCC visibility pop
