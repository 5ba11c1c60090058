#include "tools/emu/relay.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "ndm/endpoint.hpp"

namespace ndm::tools {

namespace {

[[noreturn]] void die(const std::string& msg) { throw std::runtime_error(msg); }

constexpr std::size_t kMaxDatagram = 65536;

// 8 MiB buffers absorb bursts: the emulator, not the kernel, decides what is
// dropped. No error reporting: the relay never reads an error queue.
UdpSocket udp_socket(int family, const std::string& what, bool gso) {
    try {
        UdpSocket s(family, UdpSocketOptions{});
        s.set_gso(gso);
        // ECN crosses the relay as it crosses a router: each datagram's
        // codepoint is read, handed to the emulator (which may mark it CE or
        // bleach it) and set on the datagram sent on. A kernel without
        // IP_RECVTOS leaves every datagram not-ECT, as a bleaching path would.
        (void)s.enable_ecn_reporting();
        return s;
    } catch (const UdpSocketError& e) {
        die(what + ": " + e.what());
    }
}

std::string client_key(const sockaddr_storage& a, socklen_t len) {
    return {reinterpret_cast<const char*>(&a), static_cast<std::size_t>(len)};
}

}  // namespace

sockaddr_storage resolve_udp(const std::string& what, const std::string& text, bool passive, socklen_t& len) {
    // A malformed address or port is a bad command line (invalid_argument);
    // a well-formed name that does not resolve a runtime failure (ResolveError).
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon + 1 == text.size())
        throw std::invalid_argument(what + ": '" + text + "' is not ADDR:PORT");
    std::string host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    unsigned long number = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    const unsigned long lowest = passive ? 0 : 1;  // binding port 0: any free port
    if (ec != std::errc() || end != port.data() + port.size() || number < lowest || number > 65535)
        throw std::invalid_argument(fmt::format("{} {}: port '{}': expected a UDP port, a whole number from {} to 65535",
                                                what, text, port, passive ? "0 (any free port)" : "1"));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (!host.empty()) check_host(host, what + " " + text);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0)
        throw ResolveError(fmt::format("{}: cannot resolve host name '{}': {}", what, host, gai_strerror(rc)));
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

// The datagrams the emulator delivered in one pass, each with the socket
// that sends it (UdpDatagram::to is null for the connected upstream sockets).
struct EmuRelay::Batch {
    std::array<Datagram, kBatch> out;
    std::array<UdpDatagram, kBatch> datagram{};
    std::array<UdpSocket*, kBatch> socket{};
    std::size_t n = 0;
};

EmuRelay::EmuRelay(const std::string& listen, const std::string& to, const emu::Profile& profile,
                   std::uint64_t seed)
    : up_(emu::make_link(profile, emu::Direction::up, seed)),
      down_(emu::make_link(profile, emu::Direction::down, seed)),
      up_tags_(std::make_unique<Tagged>()),
      down_tags_(std::make_unique<Tagged>()),
      rx_(std::make_unique<UdpReceiveBatch>(kBatch, kMaxDatagram)),
      tx_(std::make_unique<Batch>()) {
    socklen_t listen_len = 0;
    const sockaddr_storage listen_addr = resolve_udp("--listen", listen, true, listen_len);
    to_ = resolve_udp("--to", to, false, to_len_);
    listen_ = udp_socket(listen_addr.ss_family, "--listen", gso_);
    if (const int e = listen_.bind(reinterpret_cast<const sockaddr*>(&listen_addr), listen_len); e != 0)
        die("--listen: cannot bind " + listen + ": " + std::strerror(e));
    set_observer(emu::Direction::up, nullptr);
    set_observer(emu::Direction::down, nullptr);
}

EmuRelay::~EmuRelay() = default;

std::uint16_t EmuRelay::listen_port() const { return listen_.local_port(); }

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

bool EmuRelay::DropList::drop_next() {
    ++arrived;
    if (!std::binary_search(numbers.begin(), numbers.end(), arrived)) return false;
    ++dropped;
    return true;
}

void EmuRelay::set_drop_list(emu::Direction d, std::vector<std::uint64_t> numbers) {
    std::sort(numbers.begin(), numbers.end());
    listed_[index(d)].numbers = std::move(numbers);
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
    s.socket = std::make_unique<UdpSocket>(udp_socket(to_.ss_family, "--to", gso_));
    if (const int e = s.socket->connect(reinterpret_cast<const sockaddr*>(&to_), to_len_); e != 0)
        die(std::string("--to: cannot connect: ") + std::strerror(e));
    const auto id = static_cast<std::uint32_t>(sessions_.size());
    sessions_.push_back(std::move(s));
    by_client_.emplace(key, id);
    sessions_changed_ = true;
    return id;
}

void EmuRelay::receive_listen(Instant) {
    const int n = listen_.receive(*rx_);
    if (n <= 0) return;
    const Instant now = steady_now();  // emulator ingress stamp, right after the kernel handed them over
    for (int i = 0; i < n; ++i) {
        sockaddr_storage from{};
        std::memcpy(&from, rx_->from(i), rx_->from_len(i));
        const auto s = session_for(from, rx_->from_len(i), now);
        if (listed_[0].drop_next()) continue;
        up_tags_->sent(s);
        up_->send({rx_->payload(i), rx_->ecn(i)}, now);
    }
}

void EmuRelay::receive_upstream(std::uint32_t session, Instant) {
    // Errors (ECONNREFUSED while the server is not up yet) just end the batch.
    const int n = sessions_[session].socket->receive(*rx_);
    if (n <= 0) return;
    const Instant now = steady_now();
    sessions_[session].last_active = now;
    for (int i = 0; i < n; ++i) {
        if (listed_[1].drop_next()) continue;
        down_tags_->sent(session);
        down_->send({rx_->payload(i), rx_->ecn(i)}, now);
    }
}

void EmuRelay::flush_batch() {
    Batch& b = *tx_;
    // Runs of consecutive datagrams for one socket go out together: UdpSocket
    // sends each destination's run as UDP GSO super-datagrams while the kernel
    // takes them (the buffers are sent in place, no copy), else with
    // sendmmsg. A failed send (full buffer, server not up) drops those
    // datagrams, as a router would: never back-pressure the sender.
    for (std::size_t i = 0; i < b.n;) {
        std::size_t j = i + 1;
        while (j < b.n && b.socket[j] == b.socket[i]) ++j;
        b.socket[i]->set_gso(gso_);  // one refusal turns GSO off for the whole relay
        const UdpSendResult r = b.socket[i]->send({b.datagram.data() + i, j - i});
        send_errors_ += r.dropped;
        gso_sends_ += r.gso_sends;
        if (r.gso_refused) gso_ = false;
        i = j;
    }
    b.n = 0;
}

void EmuRelay::deliver_due(Instant now) {
    Batch& b = *tx_;
    for (const bool is_up : {true, false}) {
        emu::EmulatedLink& link = is_up ? *up_ : *down_;
        const Tagged& tags = is_up ? *up_tags_ : *down_tags_;
        while (link.next_delivery() <= now) {
            if (b.n == kBatch) flush_batch();
            const std::size_t k = b.n;
            if (!link.deliver(now, b.out[k])) continue;
            Session& s = sessions_[tags.delivered_session()];
            if (!s.socket) {
                ++orphaned_;
                continue;
            }
            s.last_active = now;
            b.datagram[k] = {b.out[k].bytes, nullptr, 0, b.out[k].ecn};
            if (is_up) {
                b.socket[k] = s.socket.get();
            } else {
                b.socket[k] = &listen_;
                b.datagram[k].to = reinterpret_cast<const sockaddr*>(&s.client);
                b.datagram[k].to_len = s.client_len;
            }
            ++b.n;
        }
    }
    flush_batch();
}

void EmuRelay::expire_idle(Instant now) {
    if (std::erase_if(retired_, [&](const Retired& r) { return r.until <= now; }) > 0) sessions_changed_ = true;
    for (auto& s : sessions_) {
        if (!s.socket || now - s.last_active < kSessionIdle) continue;
        s.socket.reset();
        by_client_.erase(client_key(s.client, s.client_len));
        sessions_changed_ = true;
    }
}

void EmuRelay::set_rebind(Duration every, Duration start) {
    rebind_every_ = every;
    rebind_start_ = start;
}

// Each live session gets a new upstream socket (a new source port); the old
// one lingers, read and dropped, then closes.
void EmuRelay::rebind(Instant now) {
    for (auto& s : sessions_) {
        if (!s.socket) continue;
        auto fresh = std::make_unique<UdpSocket>(udp_socket(to_.ss_family, "--to", gso_));
        if (const int e = fresh->connect(reinterpret_cast<const sockaddr*>(&to_), to_len_); e != 0)
            die(std::string("--rebind: cannot connect a new upstream socket: ") + std::strerror(e));
        retired_.push_back({std::move(s.socket), now + kRebindLinger});
        s.socket = std::move(fresh);
    }
    ++rebinds_;
    sessions_changed_ = true;
}

void EmuRelay::drain_retired(std::size_t i) {
    const int n = retired_[i].socket->receive(*rx_);
    if (n > 0) rebind_dropped_ += static_cast<std::uint64_t>(n);
}

void EmuRelay::run(const std::atomic<bool>& stop, Duration stats_every, std::ostream* stats_out) {
    std::vector<pollfd> fds;
    std::vector<std::uint32_t> fd_session;  // fds[i + 1] belongs to session fd_session[i]
    Instant next_stats = stats_every > Duration{0} && stats_out ? steady_now() + stats_every : kNever;
    Instant next_expiry = steady_now() + std::chrono::seconds(1);
    Instant next_rebind = rebind_every_ > Duration{0} ? steady_now() + rebind_start_ : kNever;
    while (!stop.load(std::memory_order_relaxed)) {
        Instant now = steady_now();
        if (now >= next_rebind) {
            rebind(now);
            next_rebind = now + rebind_every_;
        }
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
            fds.assign(1, {listen_.fd(), POLLIN, 0});
            fd_session.clear();
            for (std::uint32_t i = 0; i < sessions_.size(); ++i)
                if (sessions_[i].socket) {
                    fds.push_back({sessions_[i].socket->fd(), POLLIN, 0});
                    fd_session.push_back(i);
                }
            for (const Retired& r : retired_) fds.push_back({r.socket->fd(), POLLIN, 0});
            sessions_changed_ = false;
        }
        const Instant wake = std::min({up_->next_delivery(), down_->next_delivery(), next_stats, next_expiry,
                                       next_rebind, now + std::chrono::milliseconds(100)});
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
        for (std::size_t i = 1; i < fds.size(); ++i) {
            if (!(fds[i].revents & (POLLIN | POLLERR))) continue;
            if (i - 1 < fd_session.size()) receive_upstream(fd_session[i - 1], now);
            else drain_retired(i - 1 - fd_session.size());
        }
    }
}

void EmuRelay::print_stats(std::ostream& os) const {
    std::size_t active = 0;
    for (const auto& s : sessions_) active += s.socket != nullptr;
    os << "up (client -> server):\n" << emu::format_stats(up_->emu_stats()) << "\n"
       << "down (server -> client):\n" << emu::format_stats(down_->emu_stats()) << "\n"
       << "clients: " << sessions_.size() << " seen, " << active << " active; datagrams the relay could not send on: "
       << send_errors_ << "; GSO sends: " << gso_sends_ << (gso_ ? "" : " (GSO off: --no-gso, or refused on this path)") << "\n";
    if (!listed_[0].numbers.empty() || !listed_[1].numbers.empty())
        os << "dropped by number (--drop-up, --drop-down): up " << listed_[0].dropped << ", down " << listed_[1].dropped
           << "\n";
    if (rebind_every_ > Duration{0})
        os << "rebindings: " << rebinds_ << "; datagrams to a port given up, dropped: " << rebind_dropped_ << "\n";
}

}  // namespace ndm::tools
