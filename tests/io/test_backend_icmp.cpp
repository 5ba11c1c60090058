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

#include "backend_test_util.hpp"
#include "io/backend.hpp"
#include "ndm/udp_socket.hpp"
#include "loopback_udp.hpp"
#include "skip.hpp"

using ndm::io::Address;

namespace {

const Address kLoopback = Address::parse("127.0.0.1", 0);

Address loopback(std::uint16_t port) { return Address::parse("127.0.0.1", port); }

// The next datagram's bytes on `s`, or empty after `timeout`.
std::string receive(const ndm::test::LoopbackUdp& s, std::chrono::milliseconds timeout) {
    pollfd p{s.fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return {};
    char buf[2048];
    const ssize_t n = recv(s.fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string{};
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

}  // namespace

TEST_CASE("backends: a datagram to a live peer leaves although the socket holds another peer's ICMP error") {
    FOR_EACH_IO_BACKEND(ndm::io::SocketOptions{});
    const Address gone = loopback(ndm::test::dead_loopback_port());
    const ndm::test::LoopbackUdp live;
    Recorder rec;
    for (int round = 0; round < 3; ++round) {  // Linux rate-limits ICMP: a few rounds, not many
        CAPTURE(round);
        send(*be, gone, "to nobody");
        // Loopback answers with ICMP port unreachable within the send; the
        // pause only makes sure it is there before the next send.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const std::string text = "to the live peer " + std::to_string(round);
        send(*be, loopback(live.port), text);
        be->wait(ndm::steady_now() + std::chrono::milliseconds(20), rec);
        CHECK(receive(live, std::chrono::milliseconds(500)) == text);
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
    REQUIRE(sock.bind(kLoopback.sa(), kLoopback.length) == 0);
    const Address gone = loopback(ndm::test::dead_loopback_port());
    const ndm::test::LoopbackUdp live;
    const auto to = [](const Address& a, const std::string& text) {
        return ndm::UdpDatagram{{reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, a.sa(), a.length};
    };
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        const std::string nobody = "to nobody", text = "to the live peer " + std::to_string(round);
        const ndm::UdpDatagram first[] = {to(gone, nobody)};
        sock.send(first);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const Address live_address = loopback(live.port);
        const ndm::UdpDatagram second[] = {to(live_address, text)};
        CHECK(sock.send(second).dropped == 0);
        CHECK(receive(live, std::chrono::milliseconds(500)) == text);
    }
}
