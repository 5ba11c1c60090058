#include "common/emu_relay.hpp"

#include "io/backend.hpp"  // GSO helpers (write_gso_cmsg, is_gso_refusal)

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <ostream>
#include <stdexcept>

namespace ndm::tools {

namespace {

[[noreturn]] void die(const std::string& msg) { throw std::runtime_error(msg); }

constexpr std::size_t kMaxDatagram = 65536;

int udp_socket(int family, const std::string& what) {
    const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die(what + ": socket: " + std::strerror(errno));
    // Absorb bursts: the emulator, not the kernel, decides what is dropped.
    // SO_*BUFFORCE passes net.core.*mem_max when privileged; else the plain cap applies.
    const int buf = 8 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    return fd;
}

std::string client_key(const sockaddr_storage& a, socklen_t len) {
    return {reinterpret_cast<const char*>(&a), static_cast<std::size_t>(len)};
}

}  // namespace

Instant monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return Instant{Duration{static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec}};
}

sockaddr_storage resolve_udp(const std::string& what, const std::string& text, bool passive, socklen_t& len) {
    const auto colon = text.rfind(':');
    // A malformed or unresolvable address is a bad command line (invalid_argument).
    if (colon == std::string::npos || colon + 1 == text.size())
        throw std::invalid_argument(what + ": '" + text + "' is not ADDR:PORT");
    std::string host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0)
        throw std::invalid_argument(what + ": cannot resolve '" + text + "': " + gai_strerror(rc));
    sockaddr_storage out{};
    std::memcpy(&out, res->ai_addr, res->ai_addrlen);
    len = res->ai_addrlen;
    freeaddrinfo(res);
    return out;
}

// One direction's link plus the session each datagram in flight belongs to.
// The link numbers send() calls 0, 1, 2, ... and reports the number of each
// delivered copy to its observer, so a ring indexed by that number maps a
// delivery back to its session (a duplicate shares its original's number).
// 2^20 entries outlast any plausible reordering distance.
struct EmuRelay::Tagged {
    static constexpr std::size_t kRing = std::size_t{1} << 20;
    std::vector<std::uint32_t> session = std::vector<std::uint32_t>(kRing);
    std::uint64_t next_index = 0;
    std::uint64_t delivered_index = 0;
    void sent(std::uint32_t s) { session[next_index++ & (kRing - 1)] = s; }
    [[nodiscard]] std::uint32_t delivered_session() const { return session[delivered_index & (kRing - 1)]; }
};

struct EmuRelay::Batch {
    std::vector<std::uint8_t> rx_storage;  // kBatch × kMaxDatagram (receive batches only)
    std::array<mmsghdr, kBatch> msgs{};
    std::array<iovec, kBatch> iov{};
    std::array<sockaddr_storage, kBatch> addr{};
    // Send batches: the delivered datagrams and where each goes.
    std::array<std::vector<std::uint8_t>, kBatch> out;
    std::array<int, kBatch> fd{};
    std::size_t n = 0;
};

EmuRelay::EmuRelay(const std::string& listen, const std::string& to, const emu::Profile& profile,
                   std::uint64_t seed)
    : up_(emu::make_link(profile, emu::Direction::up, seed)),
      down_(emu::make_link(profile, emu::Direction::down, seed)),
      up_tags_(std::make_unique<Tagged>()),
      down_tags_(std::make_unique<Tagged>()),
      rx_(std::make_unique<Batch>()),
      tx_(std::make_unique<Batch>()) {
    socklen_t listen_len = 0;
    const sockaddr_storage listen_addr = resolve_udp("--listen", listen, true, listen_len);
    to_ = resolve_udp("--to", to, false, to_len_);
    listen_fd_ = udp_socket(listen_addr.ss_family, "--listen");
    if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&listen_addr), listen_len) != 0) {
        const int e = errno;
        close(listen_fd_);
        die("--listen: cannot bind " + listen + ": " + std::strerror(e));
    }
    rx_->rx_storage.resize(kBatch * kMaxDatagram);
    set_observer(emu::Direction::up, nullptr);
    set_observer(emu::Direction::down, nullptr);
}

EmuRelay::~EmuRelay() {
    for (auto& s : sessions_)
        if (s.fd >= 0) close(s.fd);
    if (listen_fd_ >= 0) close(listen_fd_);
}

std::uint16_t EmuRelay::listen_port() const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
}

void EmuRelay::set_observer(emu::Direction d, std::function<void(const emu::PacketEvent&)> f) {
    const bool is_up = d == emu::Direction::up;
    Tagged* tags = is_up ? up_tags_.get() : down_tags_.get();
    user_observer_[is_up ? 0 : 1] = std::move(f);
    const auto* user = &user_observer_[is_up ? 0 : 1];
    (is_up ? up_ : down_)->set_observer([tags, user](const emu::PacketEvent& e) {
        if (e.kind == emu::PacketEvent::Kind::delivered) tags->delivered_index = e.index;
        if (*user) (*user)(e);
    });
}

std::uint32_t EmuRelay::session_for(const sockaddr_storage& from, socklen_t len, Instant now) {
    const std::string key = client_key(from, len);
    if (const auto it = by_client_.find(key); it != by_client_.end()) {
        sessions_[it->second].last_active = now;
        return it->second;
    }
    Session s;
    s.client = from;
    s.client_len = len;
    s.last_active = now;
    s.fd = udp_socket(to_.ss_family, "--to");
    if (connect(s.fd, reinterpret_cast<const sockaddr*>(&to_), to_len_) != 0) {
        const int e = errno;
        close(s.fd);
        die(std::string("--to: cannot connect: ") + std::strerror(e));
    }
    const auto id = static_cast<std::uint32_t>(sessions_.size());
    sessions_.push_back(s);
    by_client_.emplace(key, id);
    sessions_changed_ = true;
    return id;
}

void EmuRelay::receive_listen(Instant) {
    Batch& b = *rx_;
    for (std::size_t i = 0; i < kBatch; ++i) {
        b.iov[i] = {b.rx_storage.data() + i * kMaxDatagram, kMaxDatagram};
        b.msgs[i].msg_hdr = {};
        b.msgs[i].msg_hdr.msg_name = &b.addr[i];
        b.msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
        b.msgs[i].msg_hdr.msg_iov = &b.iov[i];
        b.msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int n = recvmmsg(listen_fd_, b.msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;
    const Instant now = monotonic_now();  // emulator ingress stamp, right after the kernel handed them over
    for (int i = 0; i < n; ++i) {
        const auto s = session_for(b.addr[i], b.msgs[i].msg_hdr.msg_namelen, now);
        up_tags_->sent(s);
        up_->send({b.rx_storage.data() + i * kMaxDatagram, b.msgs[i].msg_len}, now);
    }
}

void EmuRelay::receive_upstream(std::uint32_t session, Instant) {
    Batch& b = *rx_;
    for (std::size_t i = 0; i < kBatch; ++i) {
        b.iov[i] = {b.rx_storage.data() + i * kMaxDatagram, kMaxDatagram};
        b.msgs[i].msg_hdr = {};
        b.msgs[i].msg_hdr.msg_iov = &b.iov[i];
        b.msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // Errors (ECONNREFUSED while the server is not up yet) just end the batch.
    const int n = recvmmsg(sessions_[session].fd, b.msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;
    const Instant now = monotonic_now();
    sessions_[session].last_active = now;
    for (int i = 0; i < n; ++i) {
        down_tags_->sent(session);
        down_->send({b.rx_storage.data() + i * kMaxDatagram, b.msgs[i].msg_len}, now);
    }
}

void EmuRelay::deliver_due(Instant now) {
    Batch& b = *tx_;
    // Sends runs of consecutive datagrams for the same socket and destination
    // together: as UDP GSO super-datagrams (one pass through the stack for up
    // to 64 equal-size datagrams, the last may be shorter; the iovecs point at
    // the delivered buffers, no copy) while the kernel takes them, else with
    // sendmmsg. A failed send (full buffer, server not up) drops those
    // datagrams, as a router would: never back-pressure the sender
    // (emulator-notes §1.8.2).
    const auto send_mmsg = [&](std::size_t i, std::size_t j) {
        while (i < j) {
            const int rc = sendmmsg(b.fd[i], &b.msgs[i], static_cast<unsigned>(j - i), MSG_DONTWAIT);
            if (rc > 0) {
                i += static_cast<std::size_t>(rc);
            } else if (rc < 0 && errno == EINTR) {
                continue;
            } else {
                ++send_errors_;
                ++i;
            }
        }
    };
    const auto send_gso = [&](std::size_t i, std::size_t j) {
        while (i < j) {
            const std::size_t seg = b.iov[i].iov_len;
            std::size_t g = i + 1, total = seg;
            while (g < j && g - i < io::kMaxGsoSegments && b.iov[g].iov_len <= seg &&
                   total + b.iov[g].iov_len <= io::kMaxUdpPayload) {
                total += b.iov[g].iov_len;
                if (b.iov[g++].iov_len < seg) break;  // only the last segment may be shorter
            }
            if (g - i == 1 || seg == 0) {
                send_mmsg(i, g);
                i = g;
                continue;
            }
            alignas(cmsghdr) std::uint8_t control[64];
            msghdr m{};
            m.msg_name = b.msgs[i].msg_hdr.msg_name;
            m.msg_namelen = b.msgs[i].msg_hdr.msg_namelen;
            m.msg_iov = &b.iov[i];
            m.msg_iovlen = g - i;
            m.msg_control = control;
            m.msg_controllen = io::write_gso_cmsg(control, sizeof control, static_cast<std::uint16_t>(seg));
            ssize_t rc;
            do rc = sendmsg(b.fd[i], &m, MSG_DONTWAIT);
            while (rc < 0 && errno == EINTR);
            if (rc < 0 && io::is_gso_refusal(errno)) {
                gso_ = false;  // this path has no GSO: datagram by datagram from now on
                send_mmsg(i, j);
                return;
            }
            if (rc < 0) send_errors_ += g - i;
            else ++gso_sends_;
            i = g;
        }
    };
    const auto flush = [&] {
        for (std::size_t i = 0; i < b.n;) {
            std::size_t j = i + 1;
            while (j < b.n && b.fd[j] == b.fd[i] && b.msgs[j].msg_hdr.msg_name == b.msgs[i].msg_hdr.msg_name) ++j;
            if (gso_) send_gso(i, j);
            else send_mmsg(i, j);
            i = j;
        }
        b.n = 0;
    };
    for (const bool is_up : {true, false}) {
        emu::EmulatedLink& link = is_up ? *up_ : *down_;
        const Tagged& tags = is_up ? *up_tags_ : *down_tags_;
        while (link.next_delivery() <= now) {
            if (b.n == kBatch) flush();
            const std::size_t k = b.n;
            if (!link.deliver(now, b.out[k])) continue;
            Session& s = sessions_[tags.delivered_session()];
            if (s.fd < 0) {
                ++orphaned_;
                continue;
            }
            s.last_active = now;
            b.iov[k] = {b.out[k].data(), b.out[k].size()};
            b.msgs[k].msg_hdr = {};
            b.msgs[k].msg_hdr.msg_iov = &b.iov[k];
            b.msgs[k].msg_hdr.msg_iovlen = 1;
            if (is_up) {
                b.fd[k] = s.fd;
            } else {
                b.fd[k] = listen_fd_;
                b.msgs[k].msg_hdr.msg_name = &s.client;
                b.msgs[k].msg_hdr.msg_namelen = s.client_len;
            }
            ++b.n;
        }
    }
    flush();
}

void EmuRelay::expire_idle(Instant now) {
    for (auto& s : sessions_) {
        if (s.fd < 0 || now - s.last_active < kSessionIdle) continue;
        close(s.fd);
        s.fd = -1;
        by_client_.erase(client_key(s.client, s.client_len));
        sessions_changed_ = true;
    }
}

void EmuRelay::run(const std::atomic<bool>& stop, Duration stats_every, std::ostream* stats_out) {
    std::vector<pollfd> fds;
    std::vector<std::uint32_t> fd_session;  // fds[i + 1] belongs to session fd_session[i]
    Instant next_stats = stats_every > Duration{0} && stats_out ? monotonic_now() + stats_every : kNever;
    Instant next_expiry = monotonic_now() + std::chrono::seconds(1);
    while (!stop.load(std::memory_order_relaxed)) {
        Instant now = monotonic_now();
        deliver_due(now);
        if (now >= next_stats) {
            print_stats(*stats_out);
            next_stats = now + stats_every;
        }
        if (now >= next_expiry) {
            expire_idle(now);
            next_expiry = now + std::chrono::seconds(1);
        }
        if (sessions_changed_) {
            fds.assign(1, {listen_fd_, POLLIN, 0});
            fd_session.clear();
            for (std::uint32_t i = 0; i < sessions_.size(); ++i)
                if (sessions_[i].fd >= 0) {
                    fds.push_back({sessions_[i].fd, POLLIN, 0});
                    fd_session.push_back(i);
                }
            sessions_changed_ = false;
        }
        const Instant wake = std::min({up_->next_delivery(), down_->next_delivery(), next_stats, next_expiry,
                                       now + std::chrono::milliseconds(100)});
        const auto ns = std::max<std::int64_t>(0, (wake - now).count());
        const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
        for (auto& p : fds) p.revents = 0;
        const int rc = ppoll(fds.data(), fds.size(), &ts, nullptr);
        if (rc < 0) {
            if (errno == EINTR) continue;
            die(std::string("ppoll: ") + std::strerror(errno));
        }
        if (rc == 0) continue;
        if (fds[0].revents & POLLIN) receive_listen(now);
        for (std::size_t i = 1; i < fds.size(); ++i)
            if (fds[i].revents & (POLLIN | POLLERR)) receive_upstream(fd_session[i - 1], now);
    }
}

void EmuRelay::print_stats(std::ostream& os) const {
    std::size_t active = 0;
    for (const auto& s : sessions_) active += s.fd >= 0;
    os << "up (client -> server):\n" << emu::format_stats(up_->emu_stats()) << "\n"
       << "down (server -> client):\n" << emu::format_stats(down_->emu_stats()) << "\n"
       << "clients: " << sessions_.size() << " seen, " << active << " active; datagrams the relay could not send on: "
       << send_errors_ << "; GSO sends: " << gso_sends_ << (gso_ ? "" : " (GSO refused on this path)") << "\n";
}

}  // namespace ndm::tools
