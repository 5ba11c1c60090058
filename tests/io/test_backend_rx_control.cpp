// What the backends read from each datagram's control messages (UDP_GRO,
// SO_RXQ_OVFL, IP_TOS) when all of them come at once: a GRO super-datagram
// received after the kernel dropped datagrams for a full buffer carries three
// cmsgs of CMSG_SPACE(4) = 24 bytes each. A control buffer too short for them
// cuts the last one, the TOS byte, and the connection's ECN counts go wrong
// (RFC 9000 §13.4.1), which made the peer's ECN validation fail.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backend_test_util.hpp"
#include "io/backend.hpp"
#include "skip.hpp"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace {

struct Counter final : ndm::io::RxHandler {
    std::size_t datagrams = 0;
    ndm::Ecn last = ndm::Ecn::not_ect;
    void on_datagram(std::span<const std::uint8_t>, const ndm::io::Address&, ndm::Ecn ecn) override {
        ++datagrams;
        last = ecn;
    }
    void on_peer_error(const ndm::io::Address&, int, const std::string&) override {}
};

// A sender of ECT(0) GSO datagrams (two 1200-byte segments each) to port.
struct GsoSender {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    explicit GsoSender(std::uint16_t port) {
        REQUIRE(fd >= 0);
        const int tos = 2, segment = 1200;  // ECT(0)
        REQUIRE(setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) == 0);
        if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &segment, sizeof segment) != 0)
            ndm::test::skip_test("no UDP GSO on this kernel");
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);
    }
    ~GsoSender() { close(fd); }
    void send_one() {
        const std::vector<std::uint8_t> two(2400, 0);
        REQUIRE(send(fd, two.data(), two.size(), 0) == 2400);
    }
};

}  // namespace

TEST_CASE("backends: a GRO datagram after kernel drops still reports its ECN codepoint, and the drops are counted") {
    ndm::io::SocketOptions small;
    small.buffer_bytes = 64 << 10;
    FOR_EACH_IO_BACKEND(small);
    if (!be->gro()) {
        ndm::test::skip_test("no UDP GRO on this kernel");
        return;
    }
    GsoSender sender(be->local_address().port());
    for (int i = 0; i < 1000; ++i) sender.send_one();  // 2.4 MB into a 64 KB buffer, unread
    Counter rx;
    for (std::size_t before = SIZE_MAX; before != rx.datagrams;) {  // read until a turn finds nothing
        before = rx.datagrams;
        be->wait(ndm::steady_now() + std::chrono::milliseconds(20), rx);
    }
    const std::size_t drained = rx.datagrams;
    sender.send_one();
    for (int turn = 0; turn < 50 && rx.datagrams < drained + 2; ++turn)
        be->wait(ndm::steady_now() + std::chrono::milliseconds(20), rx);
    REQUIRE(rx.datagrams == drained + 2);
    CHECK(be->receive_drops() > 0);
    CHECK(rx.last == ndm::Ecn::ect0);
}
