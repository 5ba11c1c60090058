// Bounded state (docs/security.md, "Limits"): for each cap on what a peer can
// make a connection hold, a peer driven past it in virtual time, with packets
// forged under the connection's real keys, and the outcome the table states:
// the close code and reason, or a silent drop, and state that did not grow.
// Then the timeouts that free state, in virtual time and on an Endpoint.
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "connection_pair.hpp"
#include "endpoint_test_util.hpp"
#include "ndm/endpoint.hpp"
#include "quic_test_util.hpp"
#include "wire/frame.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using ndm::test::ConnectionPair;
using transport::PacketSpace;

namespace {

// A 1-RTT packet from `from` to its peer carrying `frames`.
std::vector<std::uint8_t> forge(Connection& from, std::uint64_t pn, const std::vector<wire::Frame>& frames) {
    return test::seal(from, PacketSpace::application, pn, test::encode(frames));
}

// Packet numbers for forged packets: above what `from` really sent, so none
// is taken for a duplicate.
struct Forger {
    ConnectionPair& p;
    std::uint64_t pn;
    explicit Forger(ConnectionPair& pair) : p(pair), pn(pair.client->stats(pair.now).packets_sent + 5) {}
    // The client "sends" frames to the server.
    void send(const std::vector<wire::Frame>& frames) { p.server->on_datagram(forge(*p.client, pn++, frames), p.now); }
};

std::uint64_t code(CloseCode c) { return static_cast<std::uint64_t>(c); }

bool closed_with(const Connection& c, CloseCode expected, const std::string& reason_part) {
    const CloseInfo& info = c.close_info();
    const bool ok = c.state() == ConnectionState::closing && info.code == code(expected) && !info.by_peer &&
                    info.reason.find(reason_part) != std::string::npos;
    if (!ok) MESSAGE("state ", static_cast<int>(c.state()), ", code ", close_code_name(info.code), ": ", info.reason);
    return ok;
}

// Drains what the server sends (its peer never hears it) and returns how many datagrams.
std::size_t drain_server(ConnectionPair& p) {
    std::size_t n = 0;
    while (p.server->poll_datagram(p.buf, p.now)) ++n;
    return n;
}

}  // namespace

TEST_CASE("a peer opening a stream past initial_max_streams is closed with STREAM_LIMIT_ERROR and no stream is made") {
    ConnectionPair p;
    p.server_cfg.initial_max_streams = 4;
    REQUIRE(p.handshake());
    static const std::uint8_t byte[1] = {1};
    Forger f(p);
    f.send({wire::StreamFrame{4 * 4, 0, byte, false}});  // the fifth bidirectional stream
    CHECK(closed_with(*p.server, CloseCode::stream_limit_error, "exceeds the limit of 4 bidirectional streams"));
    CHECK(Connection::Impl::of(*p.server).streams.size() == 0);
}

TEST_CASE("a peer sending past a stream's window is closed with FLOW_CONTROL_ERROR before anything is buffered") {
    ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 64 * 1024;
    REQUIRE(p.handshake());
    static const std::uint8_t byte[1] = {1};
    Forger f(p);
    f.send({wire::StreamFrame{0, 64 * 1024, byte, false}});  // ends one byte past the window
    CHECK(closed_with(*p.server, CloseCode::flow_control_error, "exceeds its limit 65536"));
    const auto* s = Connection::Impl::of(*p.server).streams.find(0);
    REQUIRE(s);
    CHECK(s->recv.highest_received() == 0);
    CHECK(s->recv.range_count() == 0);
}

TEST_CASE("a peer spreading data over streams past the connection window is closed with FLOW_CONTROL_ERROR") {
    ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 64 * 1024;
    p.server_cfg.initial_max_data = 100'000;
    REQUIRE(p.handshake());
    static const std::uint8_t byte[1] = {1};
    Forger f(p);
    f.send({wire::StreamFrame{0, 59'999, byte, false}});  // 60 000 counted
    CHECK(p.server->is_established());
    f.send({wire::StreamFrame{4, 59'999, byte, false}});  // 120 000 > 100 000
    CHECK(closed_with(*p.server, CloseCode::flow_control_error, "connection data 120000 exceeds its limit 100000"));
}

TEST_CASE("a peer fragmenting a stream past ConnectionLimits::stream_ranges is closed with PROTOCOL_VIOLATION") {
    ConnectionPair p;
    p.server_cfg.limits.stream_ranges = 100;
    REQUIRE(p.handshake());
    static const std::uint8_t byte[1] = {7};
    Forger f(p);
    std::uint64_t off = 10'000;
    int frames = 0;
    while (p.server->is_established() && frames < 1000) {
        f.send({wire::StreamFrame{0, off, byte, false}});  // 1-byte islands, every other offset
        off -= 2;
        ++frames;
    }
    CHECK(closed_with(*p.server, CloseCode::protocol_violation, "too fragmented: more than 100 out-of-order ranges"));
    CHECK(frames == 101);
    CHECK(Connection::Impl::of(*p.server).streams.find(0)->recv.range_count() <= 101);
}

TEST_CASE("a peer fragmenting many streams past ConnectionLimits::stream_ranges_total is closed with PROTOCOL_VIOLATION") {
    // Each stream stays under its own cap (100); together they pass 200.
    ConnectionPair p;
    p.server_cfg.limits.stream_ranges = 100;
    p.server_cfg.limits.stream_ranges_total = 200;
    REQUIRE(p.handshake());
    static const std::uint8_t byte[1] = {7};
    Forger f(p);
    int frames = 0;
    for (std::uint64_t stream = 0; stream < 4 * 4 && p.server->is_established(); stream += 4)
        for (std::uint64_t off = 10'000; off > 10'000 - 2 * 80 && p.server->is_established(); off -= 2, ++frames)
            f.send({wire::StreamFrame{stream, off, byte, false}});
    CHECK(closed_with(*p.server, CloseCode::protocol_violation, "more than 200 out-of-order ranges in all"));
    CHECK(frames == 201);
}

TEST_CASE("CRYPTO data past ConnectionLimits::crypto_buffer is closed with CRYPTO_BUFFER_EXCEEDED, up to it is held") {
    ConnectionPair p;
    p.server_cfg.limits.crypto_buffer = 8192;
    REQUIRE(p.handshake());
    std::vector<std::uint8_t> data(192, 0x16);
    Forger f(p);
    f.send({wire::CryptoFrame{8000, data}});  // ends exactly at the cap: buffered, out of order
    CHECK(p.server->is_established());
    f.send({wire::CryptoFrame{8192, std::span(data).first(1)}});
    CHECK(closed_with(*p.server, CloseCode::crypto_buffer_exceeded, "CRYPTO data up to offset 8193"));
}

TEST_CASE("a CRYPTO buffer below RFC 9000's 4096 bytes and other limits out of range are refused at creation") {
    ConnectionConfig cfg;
    cfg.tls.trust = tls::ClientCredentials::insecure();
    auto refused = [&](auto edit, const char* what) {
        ConnectionConfig c = cfg;
        edit(c.limits);
        CHECK_THROWS_WITH_AS(Connection::connect(c, Instant{}), doctest::Contains(what), std::invalid_argument);
    };
    refused([](ConnectionLimits& l) { l.crypto_buffer = 4095; }, "below RFC 9000 §7.5's 4096");
    refused([](ConnectionLimits& l) { l.active_connection_ids = 1; }, "outside 2..64");
    refused([](ConnectionLimits& l) { l.active_connection_ids = 65; }, "outside 2..64");
    refused([](ConnectionLimits& l) { l.ack_ranges_tracked = 127; }, "below 128");
    refused([](ConnectionLimits& l) { l.stream_ranges_total = 0; }, "at least 1");
    refused([](ConnectionLimits& l) { l.sent_packets_tracked = 1023; }, "below 1024");
    CHECK(Connection::connect(cfg, Instant{}) != nullptr);
}

TEST_CASE("a peer issuing more connection IDs than ConnectionLimits::active_connection_ids is closed with CONNECTION_ID_LIMIT_ERROR") {
    ConnectionPair p;
    p.server_cfg.limits.active_connection_ids = 4;
    REQUIRE(p.handshake());
    CHECK(p.client->handshake_summary().peer.active_connection_id_limit == 4);  // advertised (RFC 9000 §18.2)
    std::array<std::array<std::uint8_t, 8>, 5> cids{};
    std::array<std::array<std::uint8_t, 16>, 5> tokens{};
    Forger f(p);
    // The real client issued sequence numbers 1..first-1 itself (RFC 9000
    // §5.1.1, up to the limit): the forged ones continue after them.
    const std::uint64_t first = Connection::Impl::of(*p.client).local_cids.next_sequence();
    REQUIRE(first <= 4);
    for (std::uint64_t seq = first; seq <= 4; ++seq) {
        cids[seq].fill(static_cast<std::uint8_t>(0x40 + seq));
        tokens[seq].fill(static_cast<std::uint8_t>(0x80 + seq));
        f.send({wire::NewConnectionIdFrame{seq, 0, cids[seq], tokens[seq]}});
        if (seq < 4) CHECK(p.server->is_established());  // sequence 0 and 1..3: four active
    }
    CHECK(closed_with(*p.server, CloseCode::connection_id_limit_error, "5 active connection IDs; the limit is 4"));
    CHECK(Connection::Impl::of(*p.server).peer_cids.active() <= 5);
}

TEST_CASE("a peer forcing retirements it never acknowledges past twice the ID limit is closed with CONNECTION_ID_LIMIT_ERROR") {
    // Each NEW_CONNECTION_ID retires all before it (Retire Prior To): the
    // RETIRE_CONNECTION_ID frames wait for acknowledgements that never come.
    ConnectionPair p;
    REQUIRE(p.handshake());
    std::array<std::array<std::uint8_t, 8>, 8> cids{};
    std::array<std::array<std::uint8_t, 16>, 8> tokens{};
    Forger f(p);
    // After the IDs the real client issued (1..seq-1): the first forged frame retires them all.
    std::uint64_t seq = Connection::Impl::of(*p.client).local_cids.next_sequence();
    for (; seq < cids.size() && p.server->is_established(); ++seq) {
        cids[seq].fill(static_cast<std::uint8_t>(0x40 + seq));
        tokens[seq].fill(static_cast<std::uint8_t>(0x80 + seq));
        f.send({wire::NewConnectionIdFrame{seq, seq, cids[seq], tokens[seq]}});
        drain_server(p);  // the server sends its RETIRE_CONNECTION_ID frames; the peer never acks them
    }
    CHECK(closed_with(*p.server, CloseCode::connection_id_limit_error, "more than 4 connection ID retirements"));
    CHECK(seq == 6);  // retirements of 0..4: five pending
}

TEST_CASE("received packet ranges stay at ConnectionLimits::ack_ranges_tracked, and packets below them are dropped as duplicates") {
    ConnectionPair p;
    p.server_cfg.limits.ack_ranges_tracked = 128;
    REQUIRE(p.handshake());
    Forger f(p);
    const std::uint64_t first = f.pn;
    for (int i = 0; i < 1000; ++i) {
        f.pn += 1;  // every other packet number: one range each
        f.send({wire::PingFrame{}});
    }
    const auto& tracker = Connection::Impl::of(*p.server).acks_of(PacketSpace::application);
    CHECK(tracker.received().interval_count() == 128);
    CHECK(p.server->is_established());
    // A packet number below the remembered ranges is taken for a duplicate: dropped, no close.
    const auto dropped = p.server->stats(p.now).packets_dropped;
    p.server->on_datagram(forge(*p.client, first + 2, {wire::PingFrame{}}), p.now);
    CHECK(p.server->stats(p.now).packets_dropped == dropped + 1);
    CHECK(p.server->is_established());
}

TEST_CASE("a peer that sends but never acknowledges is closed at ConnectionLimits::sent_packets_tracked, not left to grow") {
    // Every two PINGs earn an ACK-only packet, which the peer never
    // acknowledges: without the cap each one stays on record while the
    // peer's traffic keeps the idle timer from ever firing.
    ConnectionPair p;
    p.server_cfg.limits.sent_packets_tracked = 1024;
    REQUIRE(p.handshake());
    Forger f(p);
    std::size_t answers = 0;
    for (int i = 0; i < 5000 && p.server->is_established(); ++i) {
        f.send({wire::PingFrame{}});
        answers += drain_server(p);
        p.now += 1ms;
    }
    CHECK(closed_with(*p.server, CloseCode::protocol_violation, "more than 1024 of our packets unacknowledged"));
    CHECK(Connection::Impl::of(*p.server).loss.outstanding(PacketSpace::application) <= 1026);  // and the close
    CHECK(answers >= 1000);
}

TEST_CASE("a close reason longer than 1024 bytes is refused with FRAME_ENCODING_ERROR, never stored") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    // CONNECTION_CLOSE (0x1c): PROTOCOL_VIOLATION, frame type 0, reason length 1025 (2-byte varint).
    std::vector<std::uint8_t> payload{0x1c, 0x0a, 0x00, 0x44, 0x01};
    payload.resize(payload.size() + 1025, 'x');
    Forger f(p);
    p.server->on_datagram(test::seal(*p.client, PacketSpace::application, f.pn, payload), p.now);
    CHECK(closed_with(*p.server, CloseCode::frame_encoding_error, "reason length 1025 exceeds 1024"));
}

TEST_CASE("a flood of PATH_CHALLENGE frames leaves one PATH_RESPONSE pending, for the latest") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    std::vector<wire::Frame> challenges;
    for (std::uint8_t i = 0; i < 50; ++i) {
        wire::PathChallengeFrame c;
        c.data.fill(i);
        challenges.push_back(c);
    }
    Forger f(p);
    f.send(challenges);
    std::size_t responses = 0;
    std::uint8_t echoed = 0;
    while (std::size_t n = p.server->poll_datagram(p.buf, p.now)) {
        const auto opened = test::open_datagram(*p.client, {p.buf.begin(), p.buf.begin() + static_cast<std::ptrdiff_t>(n)}, p.now);
        for (const auto& pkt : opened.packets)
            for (const auto& fr : pkt.frames)
                if (const auto* r = std::get_if<wire::PathResponseFrame>(&fr)) {
                    ++responses;
                    echoed = r->data[0];
                }
    }
    CHECK(responses == 1);
    CHECK(echoed == 49);
}

// ---------------------------------------------------------------------------
// Timeouts that free state (docs/security.md, "Timeouts")

TEST_CASE("a server connection whose client never answers is closed at its handshake timeout with its records freed") {
    ConnectionPair p;
    p.server_cfg.handshake_timeout = 2s;
    p.start();
    std::vector<std::uint8_t> hello(2000);
    hello.resize(p.client->poll_datagram(hello, p.now));
    auto server = Connection::accept(p.server_cfg, hello, p.now);
    REQUIRE(server);
    const Instant start = p.now;
    Instant now = start;
    for (int i = 0; i < 1000 && !server->is_closed(); ++i) {
        while (server->poll_datagram(p.buf, now)) {
        }
        now = std::max(now, server->next_timeout());
        server->on_timeout(now);
    }
    REQUIRE(server->is_closed());
    CHECK(now - start == 2s);
    CHECK(server->close_info().code == code(CloseCode::handshake_timeout));
    CHECK(server->next_timeout() == kNever);
    const auto& impl = Connection::Impl::of(*server);
    for (const PacketSpace s : {PacketSpace::initial, PacketSpace::handshake, PacketSpace::application})
        CHECK(impl.loss.outstanding(s) == 0);
}

TEST_CASE("a closing connection whose peer is gone ends after three PTOs (RFC 9000 10.2)") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const Duration three_pto = Connection::Impl::of(*p.server).three_pto();
    const Instant start = p.now;
    p.server->close(0, "done", p.now);
    drain_server(p);
    while (!p.server->is_closed() && p.server->next_timeout() != kNever) {
        p.now = std::max(p.now, p.server->next_timeout());
        p.server->on_timeout(p.now);
        drain_server(p);
    }
    CHECK(p.server->is_closed());
    CHECK(p.now - start == three_pto);
    CHECK(Connection::Impl::of(*p.server).loss.outstanding(PacketSpace::application) == 0);
}

namespace {
// An endpoint bound to `address` (any port).
EndpointConfig bound_to(const char* address) {
    EndpointConfig cfg = test::tls_endpoint_config();
    cfg.bind_address = address;
    return cfg;
}
// A server on 127.0.0.1 that gives up a handshake after 1 s, with this Retry
// policy (by default it admits every Initial) and per-address cap.
EndpointConfig flood_target(RetryPolicy retry = RetryPolicy::never, std::size_t per_address = 256) {
    EndpointConfig cfg = bound_to("127.0.0.1");
    cfg.accept_connections = true;
    cfg.retry = retry;
    cfg.max_connections_per_address = per_address;
    cfg.connection.handshake_timeout = 1s;
    return cfg;
}
// Two endpoints in turn, neither blocking for more than a millisecond, so
// that round trips (and the PTOs they set) stay loopback-short.
bool run_both(Endpoint& a, Endpoint& b, const std::function<bool()>& pred, Duration limit) {
    const Instant end = steady_now() + limit;
    while (!pred() && steady_now() < end) {
        a.run_once(steady_now() + 1ms);
        b.run_once(steady_now() + 1ms);
    }
    return pred();
}
bool established(const Endpoint& ep, ConnectionHandle h) {
    const Connection* c = ep.find(h);
    return c && c->is_established();
}
// n Initials of distinct clients from one address and port; returns once the server has read them.
void flood(Endpoint& server, test::SilentClient& from, int n) {
    for (int i = 0; i < n; ++i) from.send_initial(5000 + static_cast<std::uint64_t>(i));
    server.run_until([&] { return server.stats().datagrams_received >= static_cast<std::uint64_t>(n); }, 5s);
}
}  // namespace

TEST_CASE("endpoint: a flood of Initials leaves no state once it stops, within the handshake timeout") {
    // The server makes a half-open connection for each Initial of a client
    // that never answers; handshake_timeout (1 s here) removes them all.
    Endpoint server(flood_target());
    constexpr int kFlood = 60;
    test::SilentClient from(server.local_port());
    flood(server, from, kFlood);
    CHECK(server.connection_count() == static_cast<std::size_t>(kFlood));
    const Instant stopped = steady_now();
    CHECK(server.run_until([&] { return server.connection_count() == 0; }, 5s));
    const Duration gone_after = steady_now() - stopped;
    MESSAGE("flood state gone ", std::chrono::duration_cast<std::chrono::milliseconds>(gone_after).count(),
            " ms after it stopped");
    CHECK(gone_after < 1500ms);
}

TEST_CASE("endpoint: connections from one address past max_connections_per_address are dropped, another address gets in") {
    Endpoint server(flood_target(RetryPolicy::never, 5));
    constexpr int kFlood = 12;
    test::SilentClient from(server.local_port());
    flood(server, from, kFlood);
    CHECK(server.connection_count() == 5);
    CHECK(server.stats().per_address_refused == static_cast<std::uint64_t>(kFlood - 5));

    // A client on another loopback address is not held to 127.0.0.1's count.
    Endpoint other(bound_to("127.0.0.2"));
    const auto h = other.connect("127.0.0.1", server.local_port());
    CHECK(run_both(other, server, [&] { return established(other, h); }, 5s));
    // Once the flood's handshakes time out, 127.0.0.1 may connect again. The
    // other client is driven too: its handshake may not be complete at the
    // server yet (it is established at the client first), and undriven it
    // would time out with the flood's under load.
    CHECK(run_both(other, server, [&] { return server.connection_count() == 1; }, 5s));
    Endpoint again(bound_to("127.0.0.1"));
    const auto h2 = again.connect("127.0.0.1", server.local_port());
    CHECK(run_both(again, server, [&] { return established(again, h2); }, 5s));
}

TEST_CASE("endpoint: over max_connections_per_address an Initial gets a Retry, and its returned token evicts a spoofed handshake") {
    // A spoofer of 127.0.0.1 fills its quota with handshakes it never
    // completes; the address's owner still gets in, through a Retry.
    Endpoint server(flood_target(RetryPolicy::under_load, 5));
    constexpr int kFlood = 12;
    test::SilentClient from(server.local_port());
    flood(server, from, kFlood);
    CHECK(server.connection_count() == 5);
    CHECK(server.stats().retries_sent == static_cast<std::uint64_t>(kFlood - 5));
    CHECK(server.stats().per_address_refused == 0);

    Endpoint owner(bound_to("127.0.0.1"));
    const auto h = owner.connect("127.0.0.1", server.local_port());
    CHECK(run_both(owner, server, [&] { return established(owner, h); }, 5s));
    CHECK(owner.find(h)->handshake_summary().retry);
    CHECK(server.stats().half_open_evicted == 1);
    CHECK(server.stats().retries_sent == static_cast<std::uint64_t>(kFlood - 5 + 1));
}

TEST_CASE("endpoint: idle timeout and the draining period remove connections and their state") {
    EndpointConfig scfg = bound_to("127.0.0.1");
    scfg.accept_connections = true;
    scfg.connection.idle_timeout = 500ms;
    Endpoint server(scfg);
    EndpointConfig ccfg = bound_to("127.0.0.1");
    ccfg.connection.idle_timeout = 500ms;
    Endpoint client(ccfg);
    auto both = [&](const std::function<bool()>& pred, Duration limit) { return run_both(client, server, pred, limit); };
    // A peer closes: the server drains for three PTOs and removes it.
    const auto h = client.connect("127.0.0.1", server.local_port());
    REQUIRE(both([&] { return established(client, h) && server.connection_count() == 1; }, 5s));
    client.connection(h)->close(0, "bye", steady_now());
    CHECK(both([&] { return server.connection_count() == 0 && client.connection_count() == 0; }, 3s));
    REQUIRE(client.close_info(h));
    // A peer goes silent: the idle timeout removes it.
    const auto h2 = client.connect("127.0.0.1", server.local_port());
    std::optional<ConnectionHandle> accepted;
    REQUIRE(both([&] { return accepted || (accepted = server.next_accepted()); }, 5s));
    REQUIRE(server.find(*accepted)->is_established());
    REQUIRE(client.find(h2)->is_established());
    const Instant silent = steady_now();
    CHECK(server.run_until([&] { return server.connection_count() == 0; }, 3s));
    const Duration gone = steady_now() - silent;
    CHECK(gone >= 450ms);
    CHECK(gone < 1500ms);
}
