// ndm::UdpSocket (ndm/udp_socket.hpp): socket set-up, batched receive and the
// GSO send of runs of datagrams, shared by the Endpoint's backends and the
// tools' relay.
#include "ndm/udp_socket.hpp"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "io/backend.hpp"
#include "io/transmit_batch.hpp"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace ndm {

namespace {

void set_buffer(int fd, int force_opt, int opt, int bytes, const char* name) {
    // SO_*BUFFORCE ignores net.core.[rw]mem_max when we have CAP_NET_ADMIN.
    if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) return;
    if (setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes) != 0) {
        spdlog::debug("ndm io: {} {} refused: {}", name, bytes, std::strerror(errno));
    }
}

void report_errors(int fd, int family) {
    const int one = 1;
    if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one);
        // Path MTU discovery would drop our 64 KB datagrams with EMSGSIZE on
        // loopback-sized MTUs; let the kernel fragment instead.
        int pmtu = IPV6_PMTUDISC_DONT;
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
    }
    // ICMP errors (port unreachable) become socket errors and error-queue
    // entries, so a dead peer is reported instead of timing out. Set for v4 on
    // v6 sockets too: v4-mapped traffic uses the IPv4 error path.
    setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    int pmtu4 = IP_PMTUDISC_DONT;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu4, sizeof pmtu4);
}

bool same_destination(const UdpDatagram& a, const UdpDatagram& b) {
    return a.to == b.to || (a.to && b.to && a.to_len == b.to_len && std::memcmp(a.to, b.to, a.to_len) == 0);
}

// One GSO send carries one IP header template, so one codepoint.
bool same_run(const UdpDatagram& a, const UdpDatagram& b) { return a.ecn == b.ecn && same_destination(a, b); }

}  // namespace

// ---------------------------------------------------------------------------
// The UDP_GRO and UDP_SEGMENT control messages (udp(7)) and the TOS / Traffic
// Class ones that carry ECN (ip(7) IP_TOS, ipv6(7) IPV6_TCLASS), for both
// backends too

namespace io {

RxControl parse_rx_control(const msghdr& received) {
    RxControl out;
    // io_uring's recvmsg_out layout may place the control data at an address
    // that is not aligned for cmsghdr: walk an aligned copy instead.
    alignas(cmsghdr) std::uint8_t control[256];
    msghdr msg{};
    msg.msg_controllen = std::min<std::size_t>(received.msg_controllen, sizeof control);
    if (msg.msg_controllen == 0 || received.msg_control == nullptr) return out;
    std::memcpy(control, received.msg_control, msg.msg_controllen);
    msg.msg_control = control;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        const std::size_t len = c->cmsg_len >= CMSG_LEN(0) ? c->cmsg_len - CMSG_LEN(0) : 0;
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO && len >= sizeof(int)) {
            std::memcpy(&out.gro_segment, CMSG_DATA(c), sizeof(int));
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && len >= 1) {
            out.ecn = ecn_of_tos(*CMSG_DATA(c));  // one byte (ip(7) IP_RECVTOS)
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS && len >= sizeof(int)) {
            int tclass = 0;  // an int (ipv6(7) IPV6_RECVTCLASS)
            std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
            out.ecn = ecn_of_tos(static_cast<unsigned>(tclass));
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL && len >= sizeof(std::uint32_t)) {
            std::memcpy(&out.kernel_drops, CMSG_DATA(c), sizeof(std::uint32_t));  // socket(7)
        }
    }
    return out;
}

namespace {
template <class T>
std::size_t put_cmsg(std::uint8_t* buf, std::size_t cap, int level, int type, T value) {
    if (cap < CMSG_SPACE(sizeof(T))) return 0;
    std::memset(buf, 0, CMSG_SPACE(sizeof(T)));
    auto* c = reinterpret_cast<cmsghdr*>(buf);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(sizeof(T));
    std::memcpy(CMSG_DATA(c), &value, sizeof value);
    return CMSG_SPACE(sizeof(T));
}

// IPv4 and v4-mapped destinations take IP_TOS (a v6 socket sends to a mapped
// address through the IPv4 path, udp_sendmsg, which reads SOL_IP cmsgs),
// others IPV6_TCLASS.
bool ipv4_path(const sockaddr& to) {
    return to.sa_family == AF_INET ||
           IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6*>(&to)->sin6_addr);
}
}  // namespace

std::size_t write_tx_cmsgs(std::uint8_t* buf, std::size_t cap, std::uint16_t segment, const sockaddr* to, Ecn ecn) {
    std::size_t n = 0;
    if (segment > 0) n += put_cmsg(buf, cap, IPPROTO_UDP, UDP_SEGMENT, segment);
    if (ecn != Ecn::not_ect && to != nullptr) {
        const int tos = static_cast<int>(tos_with(0, ecn));
        n += ipv4_path(*to) ? put_cmsg(buf + n, cap - n, IPPROTO_IP, IP_TOS, tos)
                           : put_cmsg(buf + n, cap - n, IPPROTO_IPV6, IPV6_TCLASS, tos);
    }
    return n;
}

bool is_gso_refusal(int error) { return error == EIO || error == EINVAL || error == ENOPROTOOPT; }

}  // namespace io

// ---------------------------------------------------------------------------
// UdpReceiveBatch

UdpReceiveBatch::UdpReceiveBatch(std::size_t count, std::size_t size, std::span<std::uint8_t> memory)
    : size_(size), msgs_(count), iov_(count), names_(count), control_(count) {
    if (memory.size() < count * size) {
        own_.resize(count * size);
        memory = own_;
    }
    memory_ = memory.data();
}

int UdpReceiveBatch::receive(int fd) {
    for (std::size_t k = 0; k < msgs_.size(); ++k) {
        iov_[k] = {memory_ + k * size_, size_};
        msghdr& m = msgs_[k].msg_hdr;
        m = {};
        m.msg_name = &names_[k];
        m.msg_namelen = sizeof names_[k];
        m.msg_iov = &iov_[k];
        m.msg_iovlen = 1;
        m.msg_control = control_[k].bytes;
        m.msg_controllen = sizeof control_[k].bytes;
        msgs_[k].msg_len = 0;
    }
    const int n = recvmmsg(fd, msgs_.data(), static_cast<unsigned>(msgs_.size()), MSG_DONTWAIT, nullptr);
    return n < 0 ? -errno : n;
}

std::span<const std::uint8_t> UdpReceiveBatch::payload(std::size_t i) const {
    return {memory_ + i * size_, msgs_[i].msg_len};
}
const sockaddr* UdpReceiveBatch::from(std::size_t i) const {
    return static_cast<const sockaddr*>(msgs_[i].msg_hdr.msg_name);
}
socklen_t UdpReceiveBatch::from_len(std::size_t i) const { return msgs_[i].msg_hdr.msg_namelen; }
bool UdpReceiveBatch::truncated(std::size_t i) const { return (msgs_[i].msg_hdr.msg_flags & MSG_TRUNC) != 0; }
UdpReceiveInfo UdpReceiveBatch::info(std::size_t i) const { return io::parse_rx_control(msgs_[i].msg_hdr); }

// ---------------------------------------------------------------------------
// UdpSocket: set-up

UdpSocket::UdpSocket(int family, const UdpSocketOptions& opt) {
    fd_ = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw UdpSocketError(std::string("socket: ") + std::strerror(errno), errno);
    if (opt.report_errors) report_errors(fd_, family);
    if (opt.reuse_port) {
        const int one = 1;
        if (setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
            const int e = errno;
            close(fd_);
            throw UdpSocketError(std::string("SO_REUSEPORT: ") + std::strerror(e), e);
        }
    }
    set_buffer(fd_, SO_RCVBUFFORCE, SO_RCVBUF, opt.buffer_bytes, "SO_RCVBUF");
    set_buffer(fd_, SO_SNDBUFFORCE, SO_SNDBUF, opt.buffer_bytes, "SO_SNDBUF");
}

UdpSocket::~UdpSocket() {
    if (fd_ >= 0) close(fd_);
}

UdpSocket::UdpSocket(UdpSocket&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      gso_(o.gso_),
      gro_(o.gro_),
      peer_(o.peer_),
      iov_(std::move(o.iov_)),
      msgs_(std::move(o.msgs_)),
      control_(std::move(o.control_)) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) close(fd_);
        fd_ = std::exchange(o.fd_, -1);
        gso_ = o.gso_;
        gro_ = o.gro_;
        peer_ = o.peer_;
        iov_ = std::move(o.iov_);
        msgs_ = std::move(o.msgs_);
        control_ = std::move(o.control_);
    }
    return *this;
}

int UdpSocket::release() { return std::exchange(fd_, -1); }

int UdpSocket::bind(const sockaddr* a, socklen_t len) {
    if (a->sa_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
        // Dual-stack only for the wildcard: a specific v6 address cannot take v4.
        const int v6only = IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) ? 0 : 1;
        setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    return ::bind(fd_, a, len) == 0 ? 0 : errno;
}

int UdpSocket::connect(const sockaddr* a, socklen_t len) {
    if (::connect(fd_, a, len) != 0) return errno;
    peer_ = {};
    std::memcpy(&peer_, a, std::min<std::size_t>(len, sizeof peer_));
    return 0;
}

int UdpSocket::enable_gro() {
    const int one = 1;
    gro_ = setsockopt(fd_, IPPROTO_UDP, UDP_GRO, &one, sizeof one) == 0;
    return gro_ ? 0 : errno;
}

int UdpSocket::enable_ecn_reporting() {
    // IP_RECVTOS on a v6 socket too: its IPv4(-mapped) traffic reports IP_TOS.
    const int one = 1;
    int family = AF_INET;
    socklen_t len = sizeof family;
    getsockopt(fd_, SOL_SOCKET, SO_DOMAIN, &family, &len);
    if (family == AF_INET6 && setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one) != 0) return errno;
    const bool v4 = setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) == 0;
    return v4 || family == AF_INET6 ? 0 : errno;
}

int UdpSocket::enable_drop_counting() {
    const int one = 1;
    return setsockopt(fd_, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) == 0 ? 0 : errno;
}

std::size_t UdpSocket::receive_buffer_bytes() const {
    int bytes = 0;
    socklen_t len = sizeof bytes;
    if (getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, &len) != 0 || bytes < 0) return 0;
    return static_cast<std::size_t>(bytes);
}

int UdpSocket::enable_gso() {
    // getsockopt(UDP_SEGMENT) exists exactly when the kernel supports GSO.
    int seg = 0;
    socklen_t len = sizeof seg;
    gso_ = getsockopt(fd_, IPPROTO_UDP, UDP_SEGMENT, &seg, &len) == 0;
    return gso_ ? 0 : errno;
}

sockaddr_storage UdpSocket::local_address(socklen_t& len) const {
    sockaddr_storage a{};
    len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return a;
}

std::uint16_t UdpSocket::local_port() const {
    socklen_t len = 0;
    const sockaddr_storage a = local_address(len);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
}

// ---------------------------------------------------------------------------
// UdpSocket: sends

UdpSendResult UdpSocket::send(std::span<const UdpDatagram> d) {
    UdpSendResult r;
    for (std::size_t i = 0; i < d.size();) {
        std::size_t j = i + 1;
        while (j < d.size() && same_run(d[i], d[j])) ++j;
        send_run(d.subspan(i, j - i), r);
        i = j;
    }
    return r;
}

// One destination's run with one codepoint: GSO sends of what the GSO rule
// lets share a send (iovecs point at the caller's bytes, no copy), single
// datagrams by sendmmsg.
void UdpSocket::send_run(std::span<const UdpDatagram> run, UdpSendResult& r) {
    iov_.resize(run.size());
    msgs_.resize(run.size());
    control_.resize(run.size());
    const sockaddr* path = run[0].to ? run[0].to : reinterpret_cast<const sockaddr*>(&peer_);
    if (path->sa_family == AF_UNSPEC) path = nullptr;  // neither given nor connected: no codepoint can be set
    for (std::size_t k = 0; k < run.size(); ++k) {
        iov_[k] = {const_cast<std::uint8_t*>(run[k].data.data()), run[k].data.size()};
        msghdr& m = msgs_[k].msg_hdr;
        m = {};
        m.msg_name = const_cast<sockaddr*>(run[k].to);
        m.msg_namelen = run[k].to ? run[k].to_len : 0;
        m.msg_iov = &iov_[k];
        m.msg_iovlen = 1;
        m.msg_controllen = io::write_tx_cmsgs(control_[k].bytes, sizeof control_[k].bytes, 0, path, run[k].ecn);
        m.msg_control = m.msg_controllen ? control_[k].bytes : nullptr;
        msgs_[k].msg_len = 0;
    }
    if (!gso_) return send_each(0, run.size(), r);
    for (std::size_t i = 0; i < run.size();) {
        io::GsoRun g;
        g.add(run[i].data.size());
        std::size_t k = i + 1;
        while (k < run.size() && g.accepts(run[k].data.size())) g.add(run[k++].data.size());
        if (k - i == 1 || g.segment() == 0) {
            send_each(i, k, r);
            i = k;
            continue;
        }
        alignas(cmsghdr) std::uint8_t control[64];
        msghdr m = msgs_[i].msg_hdr;
        m.msg_iovlen = k - i;
        m.msg_control = control;
        m.msg_controllen =
            io::write_tx_cmsgs(control, sizeof control, static_cast<std::uint16_t>(g.segment()), path, run[i].ecn);
        ssize_t rc;
        int icmp = 0;  // an ICMP error held for another peer fails one send (io::is_icmp_error): again
        do rc = sendmsg(fd_, &m, MSG_DONTWAIT);
        while (rc < 0 && (errno == EINTR || (io::is_icmp_error(errno) && icmp++ < 3)));
        if (rc < 0 && io::is_gso_refusal(errno)) {
            gso_ = false;  // this path has no GSO: datagram by datagram from now on
            r.gso_refused = true;
            return send_each(i, run.size(), r);
        }
        if (rc < 0) r.dropped += k - i;
        else ++r.gso_sends;
        i = k;
    }
}

void UdpSocket::send_each(std::size_t i, std::size_t j, UdpSendResult& r) {
    int icmp = 0;
    while (i < j) {
        const int rc = sendmmsg(fd_, &msgs_[i], static_cast<unsigned>(j - i), MSG_DONTWAIT);
        if (rc > 0) {
            i += static_cast<std::size_t>(rc);
        } else if (rc < 0 && (errno == EINTR || (io::is_icmp_error(errno) && icmp++ < 3))) {
            continue;  // an ICMP error held for another peer (io::is_icmp_error) failed it, and is cleared
        } else {
            ++r.dropped;  // the first did not go: drop it and go on
            ++i;
        }
    }
}

}  // namespace ndm
