// The backends' sends when the socket holds an ICMP error (IP_RECVERR). On an
// unconnected UDP socket Linux keeps the last ICMP error in sk_err and fails
// the next sendmsg with it, whichever peer that send is for (udp(7), "Error
// handling"). A server hears such errors from every client that went away, or
// from the spoofed sources of a flood it answered, so a live peer's datagram
// must not be the one that pays: it is sent again, and the error still reaches
// the peer it belongs to through the error queue.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/backend.hpp"
#include "ndm/udp_socket.hpp"
#include "skip.hpp"

using ndm::io::Address;

namespace {

// A loopback UDP socket of the test's own, closed with it.
struct PlainSocket {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    Address address;
    PlainSocket() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        address = Address::from(reinterpret_cast<sockaddr*>(&a), len);
    }
    ~PlainSocket() { close(fd); }
    PlainSocket(const PlainSocket&) = delete;
    PlainSocket& operator=(const PlainSocket&) = delete;

    // The next datagram's bytes, or empty after `timeout`.
    std::string receive(std::chrono::milliseconds timeout) const {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return {};
        char buf[2048];
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string{};
    }
};

// A port on which nobody listens: bound, learnt, closed.
Address dead_port() {
    PlainSocket s;
    return s.address;
}

struct Recorder final : ndm::io::RxHandler {
    std::vector<Address> errors;
    void on_datagram(std::span<const std::uint8_t>, const Address&, ndm::Ecn) override {}
    void on_peer_error(const Address& peer, int, const std::string&) override { errors.push_back(peer); }
};

void send(ndm::io::Backend& be, const Address& to, const std::string& text) {
    std::uint8_t* slot = be.tx_slot();
    REQUIRE(slot != nullptr);
    std::memcpy(slot, text.data(), text.size());
    be.tx_queue(text.size(), 0, to, ndm::Ecn::not_ect);
    be.flush();
}

std::unique_ptr<ndm::io::Backend> open_backend(bool uring) {
    ndm::io::SocketOptions opt;
    opt.bind = Address::parse("127.0.0.1", 0);
    if (!uring) return ndm::io::make_epoll_backend(opt);
    try {
        return ndm::io::make_uring_backend(opt);
    } catch (const ndm::EndpointError& e) {
        ndm::test::skip_test(std::string("no io_uring here: ") + e.what());
        return nullptr;
    }
}

}  // namespace

TEST_CASE("backends: a datagram to a live peer leaves although the socket holds another peer's ICMP error") {
    bool uring = false;
    SUBCASE("uring") { uring = true; }
    SUBCASE("epoll") { uring = false; }
    auto be = open_backend(uring);
    if (!be) return;
    const Address gone = dead_port();
    PlainSocket live;
    Recorder rec;
    for (int round = 0; round < 3; ++round) {  // Linux rate-limits ICMP: a few rounds, not many
        CAPTURE(round);
        send(*be, gone, "to nobody");
        // Loopback answers with ICMP port unreachable within the send; the
        // pause only makes sure it is there before the next send.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const std::string text = "to the live peer " + std::to_string(round);
        send(*be, live.address, text);
        be->wait(ndm::steady_now() + std::chrono::milliseconds(20), rec);
        CHECK(live.receive(std::chrono::milliseconds(500)) == text);
    }
    // The errors went to the peer that caused them, never to the live one.
    be->wait(ndm::steady_now(), rec);
    REQUIRE_FALSE(rec.errors.empty());
    for (const Address& a : rec.errors) CHECK(a == gone);
}

TEST_CASE("udp socket: a datagram to a live peer leaves although the socket holds another peer's ICMP error") {
    ndm::UdpSocketOptions opt;
    opt.report_errors = true;  // IP_RECVERR: ICMP errors of unconnected sends are held
    ndm::UdpSocket sock(AF_INET, opt);
    const Address local = Address::parse("127.0.0.1", 0);
    REQUIRE(sock.bind(local.sa(), local.length) == 0);
    const Address gone = dead_port();
    PlainSocket live;
    const auto to = [](const Address& a, const std::string& text) {
        return ndm::UdpDatagram{{reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, a.sa(), a.length};
    };
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        const std::string nobody = "to nobody", text = "to the live peer " + std::to_string(round);
        const ndm::UdpDatagram first[] = {to(gone, nobody)};
        sock.send(first);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const ndm::UdpDatagram second[] = {to(live.address, text)};
        CHECK(sock.send(second).dropped == 0);
        CHECK(live.receive(std::chrono::milliseconds(500)) == text);
    }
}
