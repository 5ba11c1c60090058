// UDP socket set-up and the pieces both backends share: addresses, the error
// queue (ICMP via IP_RECVERR), GRO splitting. The socket itself and the
// UDP_GRO / UDP_SEGMENT control messages are udp_socket.cpp's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/ip_icmp.h>
#include <netinet/udp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "io/backend.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/udp_socket.hpp"

namespace ndm::io {

// ---------------------------------------------------------------------------
// Address

std::uint16_t Address::port() const {
    if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
    if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
    return 0;
}

bool Address::operator==(const Address& o) const {
    if (family() != o.family()) return false;
    if (family() == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
        const auto* b = reinterpret_cast<const sockaddr_in*>(&o.storage);
        return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
    }
    if (family() == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
        const auto* b = reinterpret_cast<const sockaddr_in6*>(&o.storage);
        return a->sin6_port == b->sin6_port && std::memcmp(&a->sin6_addr, &b->sin6_addr, 16) == 0 &&
               a->sin6_scope_id == b->sin6_scope_id;
    }
    return false;
}

Address Address::host() const {
    Address out = *this;
    if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&out.storage)->sin_port = 0;
    if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&out.storage)->sin6_port = 0;
    return out;
}

transport::PeerAddress Address::peer() const {
    transport::PeerAddress p;
    p.port = port();
    if (family() == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
        std::memcpy(p.ip.data(), &a->sin6_addr, 16);
        p.scope = a->sin6_scope_id;
        p.v6 = true;
    } else if (family() == AF_INET) {
        std::memcpy(p.ip.data(), &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr, 4);
    }
    return p;
}

std::size_t Address::hash() const {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const std::uint8_t*>(p)[i]) * 1099511628211ull;
    };
    if (family() == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
        mix(&a->sin_addr, 4);
        mix(&a->sin_port, 2);
    } else if (family() == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
        mix(&a->sin6_addr, 16);
        mix(&a->sin6_port, 2);
    }
    return static_cast<std::size_t>(h);
}

std::string Address::to_string() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof buf);
        return fmt::format("{}:{}", buf, port());
    }
    if (family() == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
            return fmt::format("{}:{}", buf, port());
        }
        inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        return fmt::format("[{}]:{}", buf, port());
    }
    return "(no address)";
}

Address Address::from(const sockaddr* sa, socklen_t len) {
    Address a;
    a.length = std::min<socklen_t>(len, sizeof(a.storage));
    std::memcpy(&a.storage, sa, a.length);
    return a;
}

Address Address::parse(const std::string& host_in, std::uint16_t port) {
    std::string host = host_in;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    Address a;
    sockaddr_in v4{};
    sockaddr_in6 v6{};
    if (host == "localhost") host = "127.0.0.1";
    if (inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        return from(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
    }
    if (inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        return from(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
    }
    throw EndpointError(fmt::format("ndm: '{}' is not a numeric IPv4/IPv6 address", host_in));
}

bool is_host_name(std::string_view name) {
    // RFC 1123 §2.1 labels (letters, digits, hyphens, not at a label's ends),
    // with the underscore that real zones carry; an optional final dot.
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    if (name.empty() || name.size() > 253) return false;
    // Nor may the last label be all digits (RFC 3696 §2): "1.2.3.999" is a
    // malformed address, not a name.
    const std::string_view last = name.substr(name.rfind('.') == std::string_view::npos ? 0 : name.rfind('.') + 1);
    if (std::all_of(last.begin(), last.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
    std::size_t label = 0;
    for (std::size_t i = 0; i <= name.size(); ++i) {
        if (i == name.size() || name[i] == '.') {
            if (label == 0 || label > 63 || name[i - 1] == '-' || name[i - label] == '-') return false;
            label = 0;
            continue;
        }
        const auto c = static_cast<unsigned char>(name[i]);
        if (!std::isalnum(c) && c != '-' && c != '_') return false;
        ++label;
    }
    return true;
}

Address Address::resolve(const std::string& host, std::uint16_t port, int fam) {
    std::optional<Address> numeric;
    try {
        numeric = parse(host, port);
    } catch (const EndpointError&) {
    }
    const char* family_name = fam == AF_INET ? "IPv4" : "IPv6";
    if (numeric) {
        if (fam != AF_UNSPEC && numeric->family() != fam)
            throw std::invalid_argument(fmt::format("'{}' is not an {} address", host, family_name));
        return *numeric;
    }
    if (!is_host_name(host))
        throw std::invalid_argument(fmt::format("'{}' is neither a host name nor a numeric IPv4/IPv6 address", host));
    addrinfo hints{};
    hints.ai_family = fam;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0)
        throw ndm::ResolveError(fmt::format("cannot resolve host name '{}': {}", host,
                                            rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc)));
    std::optional<Address> found;
    for (const addrinfo* ai = res; ai != nullptr && !found; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        found = from(ai->ai_addr, ai->ai_addrlen);
        if (ai->ai_family == AF_INET)
            reinterpret_cast<sockaddr_in*>(&found->storage)->sin_port = htons(port);
        else
            reinterpret_cast<sockaddr_in6*>(&found->storage)->sin6_port = htons(port);
    }
    freeaddrinfo(res);
    if (!found) throw ndm::ResolveError(fmt::format("host name '{}' has no {} address", host, family_name));
    return *found;
}

bool Address::convert_to(int fam, Address& out) const {
    if (family() == fam) {
        out = *this;
        return true;
    }
    if (family() == AF_INET && fam == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
        sockaddr_in6 v6{};
        v6.sin6_family = AF_INET6;
        v6.sin6_port = a->sin_port;
        v6.sin6_addr.s6_addr[10] = 0xff;
        v6.sin6_addr.s6_addr[11] = 0xff;
        std::memcpy(&v6.sin6_addr.s6_addr[12], &a->sin_addr, 4);
        out = from(reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
        return true;
    }
    if (family() == AF_INET6 && fam == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
        if (!IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) return false;
        sockaddr_in v4{};
        v4.sin_family = AF_INET;
        v4.sin_port = a->sin6_port;
        std::memcpy(&v4.sin_addr, &a->sin6_addr.s6_addr[12], 4);
        out = from(reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
        return true;
    }
    return false;
}

// ---------------------------------------------------------------------------
// PageBuffer

PageBuffer::PageBuffer(std::size_t bytes) {
    constexpr std::size_t kHuge = 2u << 20;
    n_ = (bytes + kHuge - 1) & ~(kHuge - 1);
    // Over-allocate to align to 2 MiB so THP can back the region.
    const std::size_t map = n_ + kHuge;
    void* m = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw EndpointError(fmt::format("ndm: mmap of {} bytes failed: {}", map, std::strerror(errno)));
    auto base = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t aligned = (base + kHuge - 1) & ~(kHuge - 1);
    if (aligned > base) munmap(m, aligned - base);
    const std::uintptr_t tail = aligned + n_;
    if (base + map > tail) munmap(reinterpret_cast<void*>(tail), base + map - tail);
    p_ = reinterpret_cast<std::uint8_t*>(aligned);
    madvise(p_, n_, MADV_HUGEPAGE);
    // Populate now (one kernel pass) instead of one fault per page later.
    madvise(p_, n_, MADV_POPULATE_WRITE);
}

PageBuffer::~PageBuffer() {
    if (p_) munmap(p_, n_);
}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
    if (this != &o) {
        if (p_) munmap(p_, n_);
        p_ = o.p_;
        n_ = o.n_;
        o.p_ = nullptr;
        o.n_ = 0;
    }
    return *this;
}

// ---------------------------------------------------------------------------
// Socket set-up

namespace {

// A socket of the bind address's family, configured and bound; the error
// text (strerror) when that fails.
std::optional<ndm::UdpSocket> try_open(const SocketOptions& opt, const Address& bind_addr, std::string& error) {
    try {
        ndm::UdpSocket s(bind_addr.family(), {.buffer_bytes = opt.buffer_bytes, .report_errors = opt.report_errors, .reuse_port = opt.reuse_port});
        if (const int e = s.bind(bind_addr.sa(), bind_addr.length); e != 0) {
            error = std::strerror(e);
            return std::nullopt;
        }
        return s;
    } catch (const ndm::UdpSocketError& e) {
        error = std::strerror(e.code());
        return std::nullopt;
    }
}

}  // namespace

OpenedSocket open_udp_socket(const SocketOptions& opt) {
    std::string error;
    Address bind_addr = opt.bind;
    auto sock = try_open(opt, bind_addr, error);
    if (!sock && bind_addr.family() == AF_INET6 && (error == std::strerror(EAFNOSUPPORT) ||
                                                     error == std::strerror(EADDRNOTAVAIL))) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&bind_addr.storage);
        if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)) {
            spdlog::info("ndm io: IPv6 unavailable ({}), binding 0.0.0.0 instead", error);
            bind_addr = Address::parse("0.0.0.0", opt.bind.port());
            sock = try_open(opt, bind_addr, error);
        }
    }
    if (!sock) throw BindError(fmt::format("ndm: cannot bind UDP {}: {}", opt.bind.to_string(), error));
    OpenedSocket s;
    s.local.storage = sock->local_address(s.local.length);

    if (opt.gro) {
        if (const int e = sock->enable_gro(); e != 0) {
            spdlog::info("ndm io: UDP GRO refused by the kernel ({}); receiving datagram by datagram", std::strerror(e));
        }
    }
    if (opt.gso) {
        // A route that refuses GSO (EIO at send) disables it later (TxPool).
        if (const int e = sock->enable_gso(); e != 0) {
            spdlog::info("ndm io: UDP GSO unsupported by the kernel ({}); sending datagram by datagram",
                         std::strerror(e));
        }
    }
    // RFC 9000 §13.4.1: the codepoint of every received datagram is counted
    // and reported, so the connection needs it. Without it the peer's ECN
    // validation fails and it stops marking: nothing else breaks.
    if (const int e = sock->enable_ecn_reporting(); e != 0)
        spdlog::info("ndm io: the kernel does not report received TOS ({}); ECN codepoints read as not-ECT",
                     std::strerror(e));
    if (const int e = sock->enable_drop_counting(); e != 0)
        spdlog::debug("ndm io: SO_RXQ_OVFL refused ({}): EndpointStats::receive_drops stays 0", std::strerror(e));
    s.gro = sock->gro();
    s.gso = sock->gso();
    s.receive_buffer = sock->receive_buffer_bytes();
    s.fd = sock->release();
    return s;
}

void drain_error_queue(int fd, RxHandler& h) {
    for (int guard = 0; guard < 256; ++guard) {
        alignas(cmsghdr) std::uint8_t control[512];
        sockaddr_storage name{};
        std::uint8_t data[64];
        iovec iov{data, sizeof data};
        msghdr msg{};
        msg.msg_name = &name;
        msg.msg_namelen = sizeof name;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;  // EAGAIN: empty
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            const bool v4 = c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR;
            const bool v6 = c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR;
            if (!v4 && !v6) continue;
            sock_extended_err ee;
            std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
            // msg_name holds the destination of the datagram that failed.
            const Address peer = Address::from(reinterpret_cast<sockaddr*>(&name), msg.msg_namelen);
            std::string what;
            const bool port_unreach = (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == ICMP_DEST_UNREACH &&
                                       ee.ee_code == ICMP_PORT_UNREACH) ||
                                      (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == 1 && ee.ee_code == 4);
            if (port_unreach) {
                what = fmt::format("ICMP port unreachable from {} (nothing listens there)", peer.to_string());
            } else if (ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6) {
                what = fmt::format("ICMP error from {} for {}: {}", "the path", peer.to_string(),
                                   std::strerror(static_cast<int>(ee.ee_errno)));
            } else if (ee.ee_origin == SO_EE_ORIGIN_LOCAL) {
                // Local errors (e.g. EMSGSIZE) concern one datagram, not the peer.
                spdlog::debug("ndm io: local send error to {}: {}", peer.to_string(),
                              std::strerror(static_cast<int>(ee.ee_errno)));
                continue;
            } else {
                continue;
            }
            h.on_peer_error(peer, static_cast<int>(ee.ee_errno), what);
        }
    }
}

void deliver_split(std::span<const std::uint8_t> payload, const RxControl& control, const Address& from,
                   RxHandler& h) {
    ndm::for_each_gro_segment(payload, control.gro_segment,
                              [&](std::span<const std::uint8_t> d) { h.on_datagram(d, from, control.ecn); });
}

bool is_icmp_error(int error) { return error == ECONNREFUSED || error == EHOSTUNREACH || error == ENETUNREACH; }

int send_segments(int fd, const std::uint8_t* data, std::size_t len, std::size_t segment, const Address& to,
                  Ecn ecn, bool* icmp_seen) {
    if (segment == 0) segment = len;
    alignas(cmsghdr) std::uint8_t control[32];
    const std::size_t control_len = write_tx_cmsgs(control, sizeof control, 0, to.sa(), ecn);
    for (std::size_t off = 0; off < len; off += segment) {
        const std::size_t n = std::min(segment, len - off);
        iovec iov{const_cast<std::uint8_t*>(data + off), n};
        msghdr msg{};
        msg.msg_name = const_cast<sockaddr*>(to.sa());
        msg.msg_namelen = to.length;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (control_len > 0) {
            msg.msg_control = control;
            msg.msg_controllen = control_len;
        }
        for (int attempt = 0, icmp = 0;; ++attempt) {
            if (sendmsg(fd, &msg, 0) >= 0) break;
            if ((errno == EAGAIN || errno == ENOBUFS) && attempt < 100) {
                usleep(50);  // rare: socket buffer full during a fallback resend
                continue;
            }
            if (is_icmp_error(errno) && icmp++ < 3) {  // another peer's error, now cleared
                if (icmp_seen) *icmp_seen = true;
                continue;
            }
            return errno;
        }
    }
    return 0;
}

}  // namespace ndm::io
