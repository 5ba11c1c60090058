// emu::SharedLink: the connections of one test share one emulated
// path. Two saturating senders through two ports of one link get the link's
// rate together (two private links would give twice that); every port gets
// exactly its own datagrams, duplicates included; a datagram still in flight
// when its port goes away is discarded, never handed to a later port.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "test_emu_util.hpp"

using namespace emu_test;
using ndm::emu::SharedLink;

namespace {

std::shared_ptr<SharedLink> shared(const char* spec, std::uint64_t seed = 1) {
    return std::make_shared<SharedLink>(ndm::emu::make_link(ndm::emu::parse_profile(spec), ndm::emu::Direction::up, seed));
}

// Payload: the sender's number (8 bytes), then its packet counter.
std::vector<std::uint8_t> tagged_payload(std::uint64_t who, std::uint64_t i, std::size_t size) {
    std::vector<std::uint8_t> p = payload(i, size);
    std::memcpy(p.data(), &who, 8);
    std::memcpy(p.data() + 8, &i, 8);
    return p;
}

struct PortRun {
    std::uint64_t delivered_bytes = 0;
    std::uint64_t delivered = 0;
    std::uint64_t foreign = 0;  // datagrams another port sent
};

// `ports.size()` senders, each a CBR of `size`-byte datagrams every `spacing`
// for `seconds`; every port drained as the endpoint does (next_delivery, then
// deliver until false) at each send time and at the end.
std::vector<PortRun> saturate(std::vector<std::unique_ptr<ndm::Link>>& ports, std::size_t size, Duration spacing,
                              int seconds) {
    std::vector<PortRun> runs(ports.size());
    ndm::Datagram buf;
    auto drain = [&](Instant now) {
        for (std::size_t k = 0; k < ports.size(); ++k) {
            while (ports[k]->next_delivery() <= now && ports[k]->deliver(now, buf)) {
                std::uint64_t who = 0;
                std::memcpy(&who, buf.bytes.data(), 8);
                ++runs[k].delivered;
                runs[k].delivered_bytes += buf.bytes.size();
                if (who != k) ++runs[k].foreign;
            }
        }
    };
    // The senders take turns, evenly spread over each `spacing`.
    const std::uint64_t m = ports.size();
    const Duration step = spacing / static_cast<std::int64_t>(m);
    const auto n = static_cast<std::uint64_t>(std::chrono::seconds(seconds) / spacing) * m;
    for (std::uint64_t i = 0; i < n; ++i) {
        const Instant t = Instant{} + step * static_cast<std::int64_t>(i);
        drain(t);
        ports[i % m]->send({tagged_payload(i % m, i / m, size)}, t);
    }
    drain(Instant{} + std::chrono::seconds(seconds));
    return runs;
}

}  // namespace

TEST_CASE("emu shared link: two saturating ports get the link's rate together, not each") {
    // Each sender offers 1452 B every 400 us = 29 Mbit/s into a 20 Mbit/s link.
    auto link = shared("rate=20mbit,queue=100pkt");
    std::vector<std::unique_ptr<ndm::Link>> ports;
    ports.push_back(link->port());
    ports.push_back(link->port());
    REQUIRE(link->open_ports() == 2);
    const auto runs = saturate(ports, 1452, 400us, 5);
    const double total_bps = static_cast<double>(runs[0].delivered_bytes + runs[1].delivered_bytes) * 8 / 5;
    MESSAGE("shared: port 0 ", runs[0].delivered_bytes * 8 / 5e6, " Mbit/s, port 1 ", runs[1].delivered_bytes * 8 / 5e6,
            " Mbit/s, together ", total_bps / 1e6, " Mbit/s");
    CHECK(total_bps <= 20e6 * 1.001);
    CHECK(total_bps >= 20e6 * 0.99);
    // Droptail shares a saturated FIFO in proportion to the offered loads: equal here.
    CHECK(runs[0].delivered_bytes == doctest::Approx(static_cast<double>(runs[1].delivered_bytes)).epsilon(0.05));
    CHECK(runs[0].foreign == 0);
    CHECK(runs[1].foreign == 0);
    const auto& s = link->link().emu_stats();
    CHECK(s.sent == 2 * 12500);
    CHECK(s.delivered == runs[0].delivered + runs[1].delivered);
    CHECK(s.drops(ndm::emu::DropReason::queue_overflow) > 0);
    // A port's stats() are the shared link's.
    CHECK(ports[0]->stats().sent == s.sent);
    CHECK(ports[1]->stats().delivered == s.delivered);

    // The contrast: a private link per sender (what ndm-send -P did) gives each the full rate.
    std::vector<std::unique_ptr<ndm::Link>> own;
    own.push_back(ndm::emu::make_link(ndm::emu::parse_profile("rate=20mbit,queue=100pkt"), ndm::emu::Direction::up, 1));
    own.push_back(ndm::emu::make_link(ndm::emu::parse_profile("rate=20mbit,queue=100pkt"), ndm::emu::Direction::up, 2));
    const auto sep = saturate(own, 1452, 400us, 5);
    CHECK(static_cast<double>(sep[0].delivered_bytes + sep[1].delivered_bytes) * 8 / 5 >= 2 * 20e6 * 0.99);
}

TEST_CASE("emu shared link: each port delivers exactly its own datagrams, duplicates and delay included") {
    auto link = shared("delay=10ms,jitter=5ms,order=iid,duplicate=20%,loss=10%", 3);
    std::vector<std::unique_ptr<ndm::Link>> ports;
    for (int k = 0; k < 3; ++k) ports.push_back(link->port());
    const auto runs = saturate(ports, 200, 1ms, 2);
    std::uint64_t delivered = 0;
    for (const auto& r : runs) {
        CHECK(r.foreign == 0);
        CHECK(r.delivered > 1500);  // 2000 sent, 10 % lost, 20 % duplicated
        delivered += r.delivered;
    }
    const auto& s = link->link().emu_stats();
    CHECK(s.duplicated > 0);
    CHECK(s.delivered == delivered);
    CHECK(link->orphaned() == 0);
}

TEST_CASE("emu shared link: datagrams in flight for a closed port are discarded, not misdelivered") {
    auto link = shared("delay=50ms");
    auto a = link->port();
    std::vector<std::uint8_t> d = tagged_payload(0, 0, 100);
    a->send({d}, Instant{});
    a->send({d}, Instant{});
    a.reset();  // the connection ended with two datagrams on the wire
    CHECK(link->open_ports() == 0);
    auto b = link->port();
    d = tagged_payload(1, 0, 100);
    b->send({d}, at(1ms));
    ndm::Datagram out;
    CHECK(b->next_delivery() == at(50ms));  // a's datagram, still due on the link
    CHECK_FALSE(b->deliver(at(50ms), out));
    CHECK(link->orphaned() == 2);
    CHECK(b->next_delivery() == at(51ms));
    REQUIRE(b->deliver(at(51ms), out));
    std::uint64_t who = 0;
    std::memcpy(&who, out.bytes.data(), 8);
    CHECK(who == 1);
    CHECK(b->next_delivery() == ndm::kNever);
    // The ports keep the link alive.
    std::weak_ptr<SharedLink> weak = link;
    link.reset();
    CHECK_FALSE(weak.expired());
    b.reset();
    CHECK(weak.expired());
}
