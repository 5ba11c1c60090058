// Session resumption, 0-RTT and NEW_TOKEN (RFC 9001 §4.5, §4.6, §5.7; RFC
// 9000 §7.4.1, §8.1.3) between two ndm connections in virtual time: a ticket
// from one connection resumes the next without a Certificate; data written
// before the handshake reaches the server in the client's first flight; a
// server that did not opt in refuses it and the same bytes arrive in 1-RTT
// packets; 1-RTT packets that overtake the client's Finished are held, not
// dropped; a NEW_TOKEN token lets a later connection past a Retry; and the
// ticket's byte format refuses what it did not write.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "connection_pair.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "transport/router.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using ndm::test::ConnectionPair;

namespace {

// The client's events so far: the tickets and tokens it was given.
struct Kept {
    std::vector<tls::ResumptionTicket> tickets;
    std::vector<std::vector<std::uint8_t>> tokens;
};
void keep_events(Connection& c, Kept& k) {
    while (auto ev = c.poll_event()) {
        if (auto* t = std::get_if<event::SessionTicket>(&*ev)) k.tickets.push_back(t->ticket);
        if (auto* t = std::get_if<event::NewToken>(&*ev)) k.tokens.push_back(t->token);
    }
}

// Whether the datagram holds a Handshake packet (the client's Finished).
bool has_handshake(const std::vector<std::uint8_t>& d) {
    wire::quic::DatagramPackets packets(d, wire::kShortCidLength);
    for (wire::quic::PacketView v; packets.next(v);)
        if (v.kind == wire::quic::PacketKind::handshake) return true;
    return false;
}

// A pair whose server is `server_cfg` (the credentials that sealed the
// tickets) and whose client trusts its certificate.
void use_server(ConnectionPair& p, const ConnectionConfig& server_cfg) {
    p.server_cfg = server_cfg;
    p.client_cfg.tls.trust = tls::ClientCredentials::pinned(server_cfg.tls.certificate->fingerprint());
}

// A first connection to a server that sends tickets (early_data: allows
// 0-RTT with them); returns its server config (the credentials, whose key
// seals the tickets) and the ticket the client was given.
std::pair<ConnectionConfig, tls::ResumptionTicket> first_connection(bool early_data) {
    ConnectionPair p;
    p.server_cfg.tls.session_tickets = true;
    p.server_cfg.tls.early_data = early_data;
    REQUIRE(p.handshake());
    Kept kept;
    p.run_until([&] {
        keep_events(*p.client, kept);
        return !kept.tickets.empty();
    });
    REQUIRE(kept.tickets.size() == 1);
    CHECK_FALSE(p.client->handshake_summary().resumed);
    CHECK(kept.tickets[0].early_data == early_data);
    CHECK(kept.tickets[0].alpn == "ndm");
    return {p.server_cfg, kept.tickets[0]};
}

std::vector<std::uint8_t> pattern(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return v;
}

// Everything the server can read of stream `id`.
std::vector<std::uint8_t> read_all(Connection& c, StreamId id) {
    std::vector<std::uint8_t> out, buf(65536);
    while (std::size_t n = c.read(id, buf)) out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    return out;
}

// The CRYPTO bytes a server sends at the Handshake level (its
// EncryptedExtensions to Finished: a Certificate and CertificateVerify only
// in a full handshake), seen through its observer (the datagrams themselves
// are padded alike, RFC 9000 §14.1).
struct HandshakeCrypto : trace::ConnectionObserver {
    std::uint64_t* total;
    explicit HandshakeCrypto(std::uint64_t* t) : total(t) {}
    void on_packet_sent(const trace::PacketSent& p) override {
        if (p.type != trace::PacketType::handshake) return;
        for (const trace::Frame& f : p.frames)
            if (f.type == trace::Frame::Type::crypto) *total += f.length;
    }
};
std::uint64_t server_handshake_bytes(ConnectionPair& p) {
    std::uint64_t bytes = 0;
    p.server_cfg.observer = [&bytes](const trace::ConnectionInfo&) -> std::unique_ptr<trace::ConnectionObserver> {
        return std::make_unique<HandshakeCrypto>(&bytes);
    };
    REQUIRE(p.handshake());
    return bytes;
}

}  // namespace

TEST_CASE("resumption: a ticket from the first connection resumes the second, with no Certificate") {
    auto [server_cfg, ticket] = first_connection(false);
    ConnectionPair full;
    use_server(full, server_cfg);
    const std::uint64_t full_bytes = server_handshake_bytes(full);

    ConnectionPair p;
    use_server(p, server_cfg);
    p.client_cfg.tls.resume = ticket;
    const std::uint64_t resumed_bytes = server_handshake_bytes(p);
    CHECK(p.client->handshake_summary().resumed);
    CHECK(p.server->handshake_summary().resumed);
    CHECK(p.client->handshake_summary().early_data == "none");
    // No Certificate and CertificateVerify: the server's flight is far shorter.
    CHECK_MESSAGE(resumed_bytes > 0, resumed_bytes);
    CHECK_MESSAGE(resumed_bytes + 200 < full_bytes, resumed_bytes, " vs ", full_bytes);
}

TEST_CASE("resumption: a ticket for another server name or ALPN is refused when the connection is made") {
    auto [server_cfg, ticket] = first_connection(false);
    ConnectionConfig c;
    ConnectionConfig s = server_cfg;
    sim::simulation_tls(c, s);
    c.tls.trust = tls::ClientCredentials::pinned(server_cfg.tls.certificate->fingerprint());
    c.tls.resume = ticket;
    c.tls.server_name = "other.example";
    CHECK_THROWS_AS(Connection::connect(c, Instant{}), std::invalid_argument);
    c.tls.server_name = ticket.server_name;
    c.tls.alpn = {"h3"};
    CHECK_THROWS_AS(Connection::connect(c, Instant{}), std::invalid_argument);
}

TEST_CASE("0-RTT: data written before the handshake reaches the server in the client's first flight") {
    auto [server_cfg, ticket] = first_connection(true);
    ConnectionPair p;
    use_server(p, server_cfg);
    p.client_cfg.tls.resume = ticket;
    p.client_cfg.tls.early_data = true;
    p.start();
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const auto data = pattern(3000);
    REQUIRE(p.client->write(*id, data, true) == data.size());
    // Only the client's first flight reaches the server: nothing comes back yet.
    p.to_client = [](std::vector<std::uint8_t>&) { return false; };
    p.exchange();
    REQUIRE(p.server);
    CHECK_FALSE(p.client->is_established());
    CHECK(read_all(*p.server, *id) == data);
    CHECK(p.server->stream_finished(*id));
    p.to_client = nullptr;
    REQUIRE(p.run_until([&] { return p.client->is_established() && p.server->is_established(); }));
    CHECK(p.client->handshake_summary().early_data == "accepted");
    CHECK(p.server->handshake_summary().early_data == "accepted");
    CHECK(p.client->handshake_summary().resumed);
    REQUIRE(p.run_until([&] { return p.client->stream_send_acked(*id); }));
    CHECK(p.client->stats(p.now).stream_bytes_retransmitted == 0);
}

TEST_CASE("0-RTT: a server that did not opt in refuses it, and the same bytes arrive in 1-RTT packets") {
    auto [server_cfg, ticket] = first_connection(true);
    ConnectionPair p;
    use_server(p, server_cfg);
    p.server_cfg.tls.early_data = false;  // same credentials, no 0-RTT
    p.client_cfg.tls.resume = ticket;
    p.client_cfg.tls.early_data = true;
    p.start();
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const auto data = pattern(5000);
    REQUIRE(p.client->write(*id, data, true) == data.size());
    REQUIRE(p.run_until([&] { return p.client->is_established() && p.server && p.server->is_established(); }));
    CHECK(p.client->handshake_summary().early_data == "rejected");
    CHECK(p.client->handshake_summary().resumed);
    REQUIRE(p.run_until([&] { return p.server->stream_finished(*id) || p.server->stream_readable(*id) >= data.size(); }));
    CHECK(read_all(*p.server, *id) == data);
    CHECK(p.server->stats(p.now).packets_dropped > 0);  // the 0-RTT packets it could not read
}

TEST_CASE("0-RTT: a replayed first flight gets its early data refused (RFC 8446 §8 anti-replay)") {
    auto [server_cfg, ticket] = first_connection(true);
    ConnectionPair p;
    use_server(p, server_cfg);
    p.client_cfg.tls.resume = ticket;
    p.client_cfg.tls.early_data = true;
    p.start();
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const auto data = pattern(500);
    REQUIRE(p.client->write(*id, data, true) == data.size());
    std::vector<std::vector<std::uint8_t>> flight;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        flight.push_back(d);
        return true;
    };
    p.to_client = [](std::vector<std::uint8_t>&) { return false; };
    p.exchange();
    REQUIRE(p.server);
    CHECK(read_all(*p.server, *id) == data);
    // An attacker sends the recorded flight to the server again: a new
    // connection, the same ClientHello. Its 0-RTT is not read.
    REQUIRE(!flight.empty());
    auto replayed = Connection::accept(p.server_cfg, flight[0], p.now);
    REQUIRE(replayed);
    for (std::size_t i = 1; i < flight.size(); ++i) replayed->on_datagram(flight[i], p.now);
    CHECK(replayed->stream_readable(*id) == 0);
    CHECK(replayed->stats(p.now).packets_dropped > 0);
}

TEST_CASE("early 1-RTT: packets that overtake the client's Finished are held and read at completion") {
    ConnectionPair p;
    p.start();
    std::vector<std::vector<std::uint8_t>> held;
    bool holding = true;
    // Hold the client's datagram with its Handshake packet (its Finished)
    // until 1-RTT data has reached the server ahead of it (RFC 9001 §5.7).
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        if (holding && has_handshake(d)) {
            held.push_back(d);
            return false;
        }
        return true;
    };
    REQUIRE(p.run_until([&] { return p.client->is_established(); }));
    REQUIRE(!held.empty());
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const auto data = pattern(2000);
    REQUIRE(p.client->write(*id, data, true) == data.size());
    p.exchange();
    CHECK_FALSE(p.server->is_established());
    CHECK(p.server->stats(p.now).early_packets_buffered >= 1);
    holding = false;
    for (auto& d : held) p.server->on_datagram(d, p.now, Ecn::not_ect);
    CHECK(p.server->is_established());
    CHECK(read_all(*p.server, *id) == data);  // read at completion, not resent after a timeout
    CHECK(p.server->stats(p.now).early_packets_dropped == 0);
}

TEST_CASE("early 1-RTT: beyond ConnectionLimits::early_packets they are dropped and counted") {
    ConnectionPair p;
    p.server_cfg.limits.early_packets = 1;
    p.start();
    bool holding = true;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        return !(holding && has_handshake(d));
    };
    REQUIRE(p.run_until([&] { return p.client->is_established(); }));
    for (int i = 0; i < 3; ++i) {
        const auto id = p.client->open_stream();
        REQUIRE(id);
        const auto data = pattern(100);
        REQUIRE(p.client->write(*id, data, true) == data.size());
        p.exchange();
    }
    const auto st = p.server->stats(p.now);
    CHECK(st.early_packets_buffered == 1);
    CHECK(st.early_packets_dropped >= 1);
    // The client's Finished is sent again on its probe timeout; all data arrives.
    holding = false;
    REQUIRE(p.run_until([&] { return p.server->is_established(); }));
}

TEST_CASE("NEW_TOKEN: a token from one connection lets the next from the same host past a Retry") {
    using transport::PeerAddress;
    using Kind = transport::Router::Routed::Kind;
    ConnectionConfig client_cfg, server_cfg;
    sim::simulation_tls(client_cfg, server_cfg);
    transport::RouterConfig rc;
    rc.accept_connections = true;
    rc.retry = transport::RetryMode::always;
    rc.connection_config = [&] { return server_cfg; };
    transport::Router router(rc);
    Instant now = Instant{} + 100s;
    const auto host = [](std::uint32_t h, std::uint16_t port) { return PeerAddress::ipv4(0x0a000000u + h, port); };
    const auto next = [&](Connection& c) {
        std::vector<std::uint8_t> d(kMaxDatagramSize);
        d.resize(c.poll_datagram(d, now));
        return d;
    };

    // The first connection goes through a Retry, completes, and is given a token.
    client_cfg.seed = 11;
    auto c1 = Connection::connect(client_cfg, now);
    auto r = router.handle(now, host(1, 4000), next(*c1), Ecn::not_ect);
    REQUIRE(r.kind == Kind::respond);
    c1->on_datagram(r.response, now);
    r = router.handle(now, host(1, 4000), next(*c1), Ecn::not_ect);
    REQUIRE(r.kind == Kind::accepted);
    auto s1 = std::move(r.connection);
    Kept kept;
    for (int i = 0; i < 50 && kept.tokens.empty(); ++i) {
        for (auto d = next(*c1); !d.empty(); d = next(*c1)) s1->on_datagram(d, now);
        for (auto d = next(*s1); !d.empty(); d = next(*s1)) c1->on_datagram(d, now);
        keep_events(*c1, kept);
        now += 1ms;
    }
    REQUIRE(c1->is_established());
    REQUIRE(kept.tokens.size() == 1);
    CHECK(router.stats().retries_sent == 1);

    // The next connection from that host, another port, is admitted at once.
    client_cfg.seed = 12;
    client_cfg.address_token = kept.tokens[0];
    auto c2 = Connection::connect(client_cfg, now);
    r = router.handle(now, host(1, 5000), next(*c2), Ecn::not_ect);
    REQUIRE(r.kind == Kind::accepted);
    CHECK(router.stats().retries_sent == 1);
    CHECK_FALSE(r.connection->handshake_summary().retry);
    // From another host the token proves nothing: a Retry, as without one (§8.1.3).
    client_cfg.seed = 13;
    auto c3 = Connection::connect(client_cfg, now);
    r = router.handle(now, host(2, 5000), next(*c3), Ecn::not_ect);
    CHECK(r.kind == Kind::respond);
    CHECK(router.stats().retries_sent == 2);
}

TEST_CASE("resumption: the ticket's byte format reads back what it wrote and refuses anything else") {
    tls::ResumptionTicket t;
    t.session = pattern(300);
    t.transport_parameters = pattern(60);
    t.server_name = "localhost";
    t.alpn = "h3";
    t.early_data = true;
    const auto bytes = t.serialize();
    const auto back = tls::ResumptionTicket::parse(bytes);
    CHECK(back.session == t.session);
    CHECK(back.transport_parameters == t.transport_parameters);
    CHECK(back.server_name == t.server_name);
    CHECK(back.alpn == t.alpn);
    CHECK(back.early_data);
    for (std::size_t cut = 0; cut < bytes.size(); cut += 7)
        CHECK_THROWS_AS(tls::ResumptionTicket::parse(std::span(bytes).first(cut)), tls::ResumptionError);
    auto extra = bytes;
    extra.push_back(0);
    CHECK_THROWS_AS(tls::ResumptionTicket::parse(extra), tls::ResumptionError);
    auto huge = bytes;
    huge[13] = 0x7f;  // the session data's length, first byte
    CHECK_THROWS_AS(tls::ResumptionTicket::parse(huge), tls::ResumptionError);
    CHECK_THROWS_AS(tls::ResumptionTicket::parse(std::vector<std::uint8_t>{'x'}), tls::ResumptionError);
}
