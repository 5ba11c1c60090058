// A plain UDP socket of a test's own on 127.0.0.1 (an ephemeral port, a
// 4 MiB receive buffer), non-blocking, closed with the object: the far end
// of tests that watch datagrams on the wire, or (bound and closed at once)
// a port nobody listens on.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include <doctest/doctest.h>

namespace ndm::test {

struct LoopbackUdp {
    int fd = -1;
    std::uint16_t port = 0;
    LoopbackUdp() {
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
        const int buf = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    }
    ~LoopbackUdp() { close(fd); }
    LoopbackUdp(const LoopbackUdp&) = delete;
    LoopbackUdp& operator=(const LoopbackUdp&) = delete;
    void send_to(std::uint16_t p, const void* data, std::size_t n) const {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(p);
        sendto(fd, data, n, 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
};

// A loopback port on which nobody listens (a datagram to it draws ICMP port unreachable).
inline std::uint16_t dead_loopback_port() {
    const LoopbackUdp s;
    return s.port;
}

}  // namespace ndm::test
