// Unreliable datagrams (RFC 9221): negotiation and sizes, delivery and the
// fate of each datagram told to the sender, the PROTOCOL_VIOLATIONs of §3,
// the receive queue's cap (oldest dropped, told once), and in virtual time
// a rate of datagrams over a lossy link (lost ones are lost, never resent)
// and over a bottleneck (the congestion window, not the application, sets
// the rate).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <sstream>
#include <variant>
#include <vector>

#include "connection_pair.hpp"
#include "ndm/qlog.hpp"
#include "ndm/sim.hpp"
#include "quic_test_util.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using test::ConnectionPair;

namespace {

std::uint64_t next_pn(const Connection& from, Instant now) { return from.stats(now).packets_sent + 5; }

std::vector<std::uint8_t> payload(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint8_t>(seed + i * 7);
    return d;
}

// A pair whose two sides advertise max_datagram_frame_size as given.
ConnectionPair pair_with(std::uint64_t client_max, std::uint64_t server_max) {
    ConnectionPair p;
    p.client_cfg.max_datagram_frame_size = client_max;
    p.server_cfg.max_datagram_frame_size = server_max;
    return p;
}

template <class E>
std::vector<E> take_events(Connection& c) {
    std::vector<E> out;
    while (auto ev = c.poll_event())
        if (const auto* e = std::get_if<E>(&*ev)) out.push_back(*e);
    return out;
}

}  // namespace

TEST_CASE("datagrams: sent only to a peer that advertised them, within its size") {
    SUBCASE("not advertised: refused, with the reason") {
        ConnectionPair p = pair_with(65535, 0);
        const auto early = payload(10, 1);
        p.start();
        CHECK(p.client->send_datagram(early).status == DatagramStatus::not_negotiated);  // before the handshake
        REQUIRE(p.handshake());
        CHECK(p.client->max_datagram_payload() == 0);
        CHECK(p.client->send_datagram(early).status == DatagramStatus::not_negotiated);
        CHECK(p.client->handshake_summary().peer.max_datagram_frame_size == 0);
        // The client advertised: the server may send.
        CHECK(p.server->handshake_summary().peer.max_datagram_frame_size == 65535);
        CHECK(p.server->max_datagram_payload() == 1408);
        CHECK(p.server->send_datagram(early).queued());
    }
    SUBCASE("the packet bounds the payload: 1452-byte datagrams carry 1408") {
        ConnectionPair p = pair_with(0, 65535);
        REQUIRE(p.handshake());
        CHECK(p.client->max_datagram_payload() == 1408);
        const auto big = payload(1409, 2);
        CHECK(p.client->send_datagram(big).status == DatagramStatus::too_big);
        const auto fits = payload(1408, 3);
        const DatagramSendResult r = p.client->send_datagram(fits);
        REQUIRE(r.queued());
        CHECK(r.id == 0);
        p.exchange();
        // Delivered byte-exact, told once by an event.
        CHECK(take_events<event::DatagramReceived>(*p.server).size() == 1);
        CHECK(p.server->datagrams_readable() == 1);
        const auto got = p.server->recv_datagram();
        REQUIRE(got);
        CHECK(*got == fits);
        CHECK_FALSE(p.server->recv_datagram());
        // The sender learns it was acknowledged once the ACK comes.
        p.run_until([&] { return p.client->stats(p.now).datagrams_acked == 1; });
        const auto acked = take_events<event::DatagramAcked>(*p.client);
        REQUIRE(acked.size() == 1);
        CHECK(acked[0].id == 0);
        const ConnectionStats st = p.client->stats(p.now);
        CHECK(st.datagrams_sent == 1);
        CHECK(st.datagrams_lost == 0);
        CHECK(p.server->stats(p.now).datagrams_received == 1);
    }
    SUBCASE("the peer's max_datagram_frame_size bounds the frame") {
        ConnectionPair p = pair_with(0, 100);
        REQUIRE(p.handshake());
        // 1 type byte, 2 length bytes (97 >= 64), 97 payload bytes: 100.
        CHECK(p.client->max_datagram_payload() == 97);
        CHECK(p.client->send_datagram(payload(98, 4)).status == DatagramStatus::too_big);
        CHECK(p.client->send_datagram(payload(97, 4)).queued());
        p.exchange();
        CHECK(p.server->is_established());
        CHECK(p.server->recv_datagram()->size() == 97);
    }
    SUBCASE("an empty datagram is a datagram") {
        ConnectionPair p = pair_with(0, 65535);
        REQUIRE(p.handshake());
        CHECK(p.client->send_datagram({}).queued());
        p.exchange();
        const auto got = p.server->recv_datagram();
        REQUIRE(got);
        CHECK(got->empty());
    }
    SUBCASE("closed: refused") {
        ConnectionPair p = pair_with(0, 65535);
        REQUIRE(p.handshake());
        p.client->close(0, "done", p.now);
        CHECK(p.client->send_datagram(payload(5, 5)).status == DatagramStatus::closed);
    }
    CHECK(datagram_status_name(DatagramStatus::queue_full) == "queue full");
}

TEST_CASE("datagrams: a DATAGRAM frame is a PROTOCOL_VIOLATION unless advertised and within the size (RFC 9221 §3)") {
    struct Case {
        std::uint64_t server_max;
        std::vector<std::uint8_t> frame;
        const char* reason;
    };
    std::vector<std::uint8_t> hundred{0x31, 0x40, 0x61};  // 97 bytes: a 100-byte frame
    hundred.resize(100, 0x5a);
    std::vector<std::uint8_t> hundred_one{0x31, 0x40, 0x62};  // 98 bytes: 101
    hundred_one.resize(101, 0x5a);
    std::vector<std::uint8_t> to_end{0x30};  // 0x30: 1 + 99 bytes to the end of the packet
    to_end.resize(100, 0x5a);
    std::vector<std::uint8_t> to_end_over{0x30};
    to_end_over.resize(101, 0x5a);
    const Case cases[] = {
        {0, {0x31, 0x01, 0x5a}, "DATAGRAM frame, but max_datagram_frame_size was not advertised"},
        {0, {0x30, 0x5a}, "DATAGRAM frame, but max_datagram_frame_size was not advertised"},
        {100, hundred, nullptr},
        {100, hundred_one, "DATAGRAM frame of 101 bytes exceeds the advertised max_datagram_frame_size of 100"},
        {100, to_end, nullptr},
        {100, to_end_over, "DATAGRAM frame of 101 bytes exceeds the advertised max_datagram_frame_size of 100"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.frame.size());
        ConnectionPair p = pair_with(0, c.server_max);
        REQUIRE(p.handshake());
        p.server->on_datagram(
            test::seal(*p.client, transport::PacketSpace::application, next_pn(*p.client, p.now), c.frame), p.now);
        if (!c.reason) {
            CHECK(p.server->is_established());
            CHECK(p.server->datagrams_readable() == 1);
            continue;
        }
        CHECK(p.server->state() == ConnectionState::closing);
        CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
        CHECK(p.server->close_info().reason.find(c.reason) != std::string::npos);
    }
}

TEST_CASE("datagrams: the receive queue drops its oldest past the cap, counts them and says so once") {
    ConnectionPair p = pair_with(0, 65535);
    // Room for 4 datagrams of 1000 bytes (each charged 64 bytes more).
    p.server_cfg.limits.datagram_receive_buffer = 4 * (1000 + 64);
    REQUIRE(p.handshake());
    (void)take_events<event::Established>(*p.server);
    for (std::uint8_t i = 0; i < 10; ++i) REQUIRE(p.client->send_datagram(payload(1000, i)).queued());
    p.exchange();
    const ConnectionStats st = p.server->stats(p.now);
    CHECK(st.datagrams_received == 10);
    CHECK(st.datagrams_dropped == 6);
    std::size_t received = 0, dropped = 0;
    while (auto ev = p.server->poll_event()) {
        received += std::holds_alternative<event::DatagramReceived>(*ev);
        dropped += std::holds_alternative<event::DatagramsDropped>(*ev);
    }
    CHECK(received == 1);
    CHECK(dropped == 1);
    // The newest four remain, in arrival order.
    for (std::uint8_t i = 6; i < 10; ++i) {
        const auto d = p.server->recv_datagram();
        REQUIRE(d);
        CHECK(*d == payload(1000, i));
    }
    CHECK_FALSE(p.server->recv_datagram());
    // After a read, the next drop is told again.
    for (std::uint8_t i = 0; i < 5; ++i) REQUIRE(p.client->send_datagram(payload(1000, i)).queued());
    p.exchange();
    CHECK(take_events<event::DatagramsDropped>(*p.server).size() == 1);
    CHECK(p.server->stats(p.now).datagrams_dropped == 7);
}

TEST_CASE("datagrams: the send buffer refuses the newest when full, and takes more once they are sent") {
    ConnectionPair p = pair_with(0, 65535);
    p.client_cfg.datagram_send_buffer = 3 * (1000 + 64);
    REQUIRE(p.handshake());
    for (std::uint8_t i = 0; i < 3; ++i) REQUIRE(p.client->send_datagram(payload(1000, i)).queued());
    const DatagramSendResult full = p.client->send_datagram(payload(1000, 3));
    CHECK(full.status == DatagramStatus::queue_full);
    CHECK(p.client->stats(p.now).datagrams_refused == 1);
    p.exchange();
    const DatagramSendResult again = p.client->send_datagram(payload(1000, 3));
    REQUIRE(again.queued());
    CHECK(again.id == 3);  // ids count queued datagrams only
}

namespace {

// In virtual time: the client queues a 1000-byte datagram every `gap`
// (payload: its sequence number) for `seconds` over a SimpleLink, the
// server reads each as it arrives. What each side saw.
struct RateRun {
    std::uint64_t offered = 0, refused = 0;
    std::map<std::uint64_t, unsigned> seen;  // sequence number -> copies read
    std::uint64_t seen_in_time = 0;          // of them, read before the offering ended
    std::uint64_t link_bytes_in_time = 0;    // bytes the client had sent into the link by then
    ConnectionStats client, server;
    LinkStats forward;
    std::uint64_t lost_events = 0, acked_events = 0;
};

RateRun run_rate(sim::SimpleLinkConfig forward, Duration gap, int seconds, const std::string& cc) {
    sim::SimpleLinkConfig back;
    back.delay = forward.delay;
    back.seed = forward.seed + 100;
    sim::Simulator s(std::make_unique<sim::SimpleLink>(forward), std::make_unique<sim::SimpleLink>(back));
    ConnectionConfig cc_client, cc_server;
    cc_client.cc = cc_server.cc = cc;
    cc_server.max_datagram_frame_size = 65535;
    s.connect(cc_client, cc_server);
    REQUIRE(s.run_until([&] { return s.client()->is_established() && s.server() && s.server()->is_established(); },
                        s.now() + 5s));
    RateRun r;
    const Instant start = s.now(), end = start + std::chrono::seconds(seconds);
    Instant next = start;
    auto read_server = [&] {
        Connection* srv = s.server();
        while (auto d = srv->recv_datagram()) {
            REQUIRE(d->size() == 1000);
            std::uint64_t seq = 0;
            for (int i = 0; i < 8; ++i) seq = seq << 8 | (*d)[static_cast<std::size_t>(i)];
            ++r.seen[seq];
        }
        while (srv->poll_event()) {
        }
    };
    auto watch_client = [&] {
        Connection* c = s.client();
        while (auto ev = c->poll_event()) {
            r.lost_events += std::holds_alternative<event::DatagramLost>(*ev);
            r.acked_events += std::holds_alternative<event::DatagramAcked>(*ev);
        }
    };
    while (next < end) {
        s.run_until(next);
        std::vector<std::uint8_t> d(1000, 0xab);
        for (int i = 0; i < 8; ++i) d[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(r.offered >> (56 - 8 * i));
        const DatagramSendResult res = s.client()->send_datagram(d);
        if (res.queued()) ++r.offered;
        else r.refused += res.status == DatagramStatus::queue_full;
        s.flush();
        read_server();
        watch_client();
        next += gap;
    }
    r.seen_in_time = r.seen.size();
    r.link_bytes_in_time = s.client()->stats(s.now()).bytes_sent;
    // Until every datagram sent is acknowledged or declared lost.
    s.run_until([&] {
        read_server();
        watch_client();
        const ConnectionStats st = s.client()->stats(s.now());
        return st.datagrams_sent == r.offered && st.datagrams_acked + st.datagrams_lost == st.datagrams_sent;
    }, s.now() + 30s);
    read_server();
    watch_client();
    r.client = s.client()->stats(s.now());
    r.server = s.server()->stats(s.now());
    r.forward = s.client_to_server_stats();
    return r;
}

}  // namespace

TEST_CASE("datagrams: 4 Mbit/s of datagrams over a 2 % loss link arrive at ~98 %, none twice, none resent") {
    // 10 ms RTT: at 2 % random loss Cubic's window still carries 4 Mbit/s
    // (at 40 ms it would not: then the window, not the link, is the limit).
    sim::SimpleLinkConfig fwd;
    fwd.delay = 5ms;
    fwd.rate_bps = 20e6;
    fwd.loss = 0.02;
    fwd.seed = 7;
    const RateRun r = run_rate(fwd, 2ms, 20, "cubic");
    CHECK(r.offered == 10'000);
    CHECK(r.refused == 0);  // the window kept up: every datagram offered was taken
    CHECK(r.client.datagrams_sent == r.offered);
    const double share = static_cast<double>(r.seen.size()) / static_cast<double>(r.offered);
    MESSAGE("datagrams delivered: " << r.seen.size() << " of " << r.offered << " (" << share * 100 << " %), lost "
                                    << r.client.datagrams_lost << ", link dropped " << r.forward.dropped_random);
    CHECK(share > 0.97);
    CHECK(share < 0.99);
    for (const auto& [seq, copies] : r.seen) {
        CHECK(seq < r.offered);
        CHECK(copies == 1);  // none twice
    }
    // Nothing resent: no stream data, no retransmitted packet, and each
    // datagram the link lost is one the sender was told of.
    CHECK(r.client.packets_retransmitted == 0);
    CHECK(r.client.stream_bytes_sent == 0);
    CHECK(r.client.datagrams_acked + r.client.datagrams_lost == r.client.datagrams_sent);
    CHECK(r.client.datagrams_acked <= r.seen.size());
    CHECK(r.seen.size() + r.client.datagrams_lost >= r.offered);  // a loss declared may still have arrived
    CHECK(r.client.datagrams_lost >= r.offered - r.seen.size());
    CHECK(r.lost_events == r.client.datagrams_lost);
    CHECK(r.acked_events == r.client.datagrams_acked);
    CHECK(r.server.datagrams_received == r.seen.size());
    // The losses were congestion signals to the controller.
    CHECK(r.client.congestion_events > 0);
}

TEST_CASE("datagrams: the congestion window, not the application, sets the rate over a bottleneck") {
    sim::SimpleLinkConfig fwd;
    fwd.delay = 20ms;
    fwd.rate_bps = 10e6;
    fwd.queue_packets = 100;
    fwd.seed = 3;
    // 40 Mbit/s offered into 10 Mbit/s.
    const RateRun r = run_rate(fwd, 200us, 10, "cubic");
    const double delivered_bps = static_cast<double>(r.seen_in_time) * 1000 * 8 / 10;
    const double sent_bps = static_cast<double>(r.link_bytes_in_time) * 8 / 10;
    MESSAGE("offered " << r.offered << " refused " << r.refused << ", sent " << sent_bps / 1e6
                       << " Mbit/s into the link, delivered " << delivered_bps / 1e6
                       << " Mbit/s of payload in the 10 s, link dropped " << r.forward.dropped_queue << " of "
                       << r.forward.sent);
    // The sender cannot exceed the bottleneck: the rest waits and is refused
    // at the send buffer, not thrown into the link. What it sent in 10 s is
    // the link's 10 s, its 100-packet queue and one window in flight at most.
    CHECK(r.refused > 20'000);
    CHECK(sent_bps < 10e6 * 1.05 + (100 + 60) * 1100 * 8 / 10.0);
    CHECK(delivered_bps < 10e6);
    CHECK(delivered_bps > 8e6);  // and it uses the bottleneck
    CHECK(r.forward.dropped_queue < r.forward.sent / 20);  // the window, not the queue, limits
    CHECK(r.client.packets_retransmitted == 0);
    for (const auto& [seq, copies] : r.seen) CHECK(copies == 1);
}

TEST_CASE("datagrams: qlog shows DATAGRAM frames as the QUIC schema's datagram frame, with their length") {
    std::ostringstream client_qlog, server_qlog;
    ConnectionPair p = pair_with(0, 65535);
    p.client_cfg.observer = [&](const trace::ConnectionInfo& info) { return qlog::make_writer(client_qlog, info); };
    p.server_cfg.observer = [&](const trace::ConnectionInfo& info) { return qlog::make_writer(server_qlog, info); };
    REQUIRE(p.handshake());
    REQUIRE(p.client->send_datagram(payload(321, 9)).queued());
    p.exchange();
    REQUIRE(p.server->recv_datagram());
    const std::string frame = R"({"frame_type":"datagram","length":321})";
    CHECK(client_qlog.str().find(frame) != std::string::npos);  // packet_sent
    CHECK(server_qlog.str().find(frame) != std::string::npos);  // packet_received
}

TEST_CASE("datagrams: one larger than the whole receive buffer is dropped itself, not the ones queued") {
    ConnectionPair p = pair_with(0, 65535);
    p.server_cfg.limits.datagram_receive_buffer = 1000 + 64;
    REQUIRE(p.handshake());
    REQUIRE(p.client->send_datagram(payload(1000, 1)).queued());
    REQUIRE(p.client->send_datagram(payload(1001, 2)).queued());
    p.exchange();
    CHECK(p.server->stats(p.now).datagrams_dropped == 1);
    CHECK(take_events<event::DatagramsDropped>(*p.server).size() == 1);
    const auto d = p.server->recv_datagram();
    REQUIRE(d);
    CHECK(*d == payload(1000, 1));
}
