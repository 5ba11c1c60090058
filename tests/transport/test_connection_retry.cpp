// Retry on the connection (RFC 9000 §8.1.2, §17.2.5; RFC 9001 §5.8; RFC 9002
// §6.3): a client takes one authenticated Retry before any other server
// packet, starts over towards the Retry's connection ID with its token, and
// checks the server's retry_source_connection_id; a server accepted after a
// Retry states it. The tests play the server's stateless Retry themselves
// (the Endpoint's gate: test_retry_gate.cpp and test_endpoint.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "connection_pair.hpp"
#include "crypto/packet_protection.hpp"
#include "wire/frame.hpp"
#include "wire/packet_codec.hpp"
#include "wire/quic_header.hpp"

using ndm::crypto::QuicVersion;

using namespace ndm;
using ndm::test::ConnectionPair;

namespace {

using Datagrams = std::vector<std::vector<std::uint8_t>>;
const std::vector<std::uint8_t> kToken = {'r', 'e', 't', 'r', 'y', '-', 't', 'o', 'k', 'e', 'n'};

wire::ConnectionId retry_cid() {
    wire::ConnectionId c;
    c.length = 8;
    for (std::uint8_t i = 0; i < 8; ++i) c.bytes[i] = static_cast<std::uint8_t>(0xa0 + i);
    return c;
}

// The Retry a server would send for the client Initial `initial`.
std::vector<std::uint8_t> make_retry(const std::vector<std::uint8_t>& initial, const wire::ConnectionId& scid,
                                     const std::vector<std::uint8_t>& token = kToken) {
    wire::quic::PacketView v;
    REQUIRE(wire::quic::parse_packet_header(initial, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
    REQUIRE(v.kind == wire::quic::PacketKind::initial);
    std::vector<std::uint8_t> out(256);
    out.resize(wire::quic::write_retry(out, QuicVersion::v1, wire::ConnectionId::from(v.scid), scid, token, v.dcid, 0x5));
    REQUIRE(!out.empty());
    return out;
}

wire::quic::PacketView first_packet(const std::vector<std::uint8_t>& d) {
    wire::quic::PacketView v;
    REQUIRE(wire::quic::parse_packet_header(d, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
    return v;
}

std::vector<std::uint8_t> bytes_of(std::span<const std::uint8_t> s) { return {s.begin(), s.end()}; }

// A pair whose client's first Initial is answered with `retry_for(initial)`
// instead of reaching the server; every later datagram passes. `seen` gets
// each client datagram the server receives.
struct RetriedPair {
    ConnectionPair p;
    std::vector<std::uint8_t> first_initial;
    std::vector<std::vector<std::uint8_t>> seen;
    std::function<Datagrams(const std::vector<std::uint8_t>&)> retries_for =
        [](const std::vector<std::uint8_t>& initial) { return Datagrams{make_retry(initial, retry_cid())}; };

    RetriedPair() {
        p.to_server = [this](std::vector<std::uint8_t>& d) {
            if (first_initial.empty()) {
                first_initial = d;
                for (const auto& r : retries_for(d)) p.client->on_datagram(r, p.now);
                return false;
            }
            seen.push_back(d);
            return true;
        };
    }
    [[nodiscard]] std::vector<std::uint8_t> original_dcid() const { return bytes_of(first_packet(first_initial).dcid); }
    bool settle() {
        p.start();
        return p.run_until([&] {
            const bool client_done = p.client->is_established() || p.client->is_closed();
            return client_done && p.server && (p.server->is_established() || p.server->is_closed());
        });
    }
};

}  // namespace

TEST_CASE("retry: the client returns the token towards the Retry's connection ID, resending its ClientHello") {
    ConnectionPair p;
    p.start();
    std::vector<std::uint8_t> buf(kMaxDatagramSize);
    std::vector<std::uint8_t> first(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(p.client->poll_datagram(buf, p.now)));
    REQUIRE(first.size() >= kMinDatagramSize);
    auto& c = Connection::Impl::of(*p.client);
    REQUIRE(c.loss.bytes_in_flight() > 0);

    p.client->on_datagram(make_retry(first, retry_cid()), p.now);
    // RFC 9002 §6.3: the Retry acknowledges nothing and declares nothing lost.
    CHECK(c.loss.bytes_in_flight() == 0);
    CHECK(c.stats(p.now).packets_lost == 0);
    CHECK(c.stats(p.now).congestion_events == 0);

    const std::size_t n = p.client->poll_datagram(buf, p.now);
    REQUIRE(n >= kMinDatagramSize);
    const std::vector<std::uint8_t> second(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    const auto v = first_packet(second);
    CHECK(v.kind == wire::quic::PacketKind::initial);
    CHECK(bytes_of(v.dcid) == bytes_of(retry_cid().span()));
    CHECK(bytes_of(v.token) == kToken);
    CHECK(bytes_of(v.scid) == bytes_of(first_packet(first).scid));  // the client keeps its own ID
    // Packet numbers continue (RFC 9000 §17.2.5.3), and the whole ClientHello
    // goes again, from offset 0, under keys from the new ID (RFC 9001 §5.2).
    CHECK(c.loss.next_packet_number(transport::PacketSpace::initial) == 2);
    CHECK(c.crypto_of(transport::PacketSpace::initial).has_pending() == false);
    CHECK(c.loss.bytes_in_flight() >= kMinDatagramSize);

    auto server_keys = crypto::initial_keys(retry_cid().span(), true, QuicVersion::v1);
    auto copy = second;
    wire::quic::DatagramPackets packets(copy, wire::kShortCidLength);
    wire::quic::PacketView pv;
    REQUIRE(packets.next(pv));
    wire::quic::OpenedPacket opened;
    REQUIRE(wire::quic::open_packet(copy, pv, &server_keys.read, std::nullopt, opened) == wire::quic::OpenError::none);
    CHECK(opened.packet_number == 1);
    wire::Reader rd(opened.payload);
    wire::Error e;
    bool hello_from_zero = false;
    for (wire::Frame f; !rd.empty() && wire::decode_frame(rd, f, e, 0);)
        if (auto* cf = std::get_if<wire::CryptoFrame>(&f)) hello_from_zero |= cf->offset == 0 && !cf->data.empty();
    CHECK(hello_from_zero);
}

TEST_CASE("retry: after a Retry both sides name its connection IDs in their parameters (RFC 9000 7.3)") {
    RetriedPair r;
    // The server's RetryValidation carries the client's first DCID, which the
    // test reads from the Initial it intercepted before the server exists.
    r.retries_for = [&](const std::vector<std::uint8_t>& initial) {
        r.p.server_retry = RetryValidation{bytes_of(first_packet(initial).dcid)};
        return Datagrams{make_retry(initial, retry_cid())};
    };
    REQUIRE(r.settle());
    REQUIRE(r.p.client->is_established());
    REQUIRE(r.p.server->is_established());
    const auto client_view = r.p.client->handshake_summary();
    CHECK(client_view.retry);
    CHECK(r.p.server->handshake_summary().retry);
    CHECK(client_view.peer.retry_source_connection_id == bytes_of(retry_cid().span()));
    CHECK(client_view.peer.original_destination_connection_id == r.original_dcid());
    // A returned token validated the address: no anti-amplification limit.
    CHECK(Connection::Impl::of(*r.p.server).address_validated);
    CHECK(r.p.client->stats(r.p.now).packets_lost == 0);

    // And data flows.
    const auto s = r.p.client->open_stream();
    REQUIRE(s);
    const std::vector<std::uint8_t> msg(5000, 0x42);
    CHECK(r.p.client->write(*s, msg) == msg.size());
    r.p.client->finish(*s);
    std::vector<std::uint8_t> got;
    REQUIRE(r.p.run_until([&] {
        std::uint8_t buf[2048];
        while (std::size_t n = r.p.server->read(*s, buf)) got.insert(got.end(), buf, buf + n);
        return r.p.server->stream_finished(*s);
    }));
    CHECK(got == msg);
}

TEST_CASE("retry: a Retry with a bad tag, for another connection or after the first is dropped") {
    SUBCASE("bad integrity tag (RFC 9001 5.8)") {
        RetriedPair r;
        r.retries_for = [](const std::vector<std::uint8_t>& initial) {
            auto retry = make_retry(initial, retry_cid());
            retry.back() ^= 1;
            return Datagrams{retry};
        };
        REQUIRE(r.settle());
        CHECK(r.p.client->is_established());  // the server answered the retransmitted Initial
        CHECK_FALSE(r.p.client->handshake_summary().retry);
        REQUIRE_FALSE(r.seen.empty());
        CHECK(bytes_of(first_packet(r.seen.front()).dcid) == r.original_dcid());
        CHECK(first_packet(r.seen.front()).token.empty());
        CHECK(r.p.client->stats(r.p.now).packets_dropped >= 1);
    }
    SUBCASE("addressed to another connection ID") {
        RetriedPair r;
        r.retries_for = [](const std::vector<std::uint8_t>& initial) {
            auto copy = initial;
            wire::quic::PacketView v;
            REQUIRE(wire::quic::parse_packet_header(copy, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
            copy[6 + v.dcid.size() + 1] ^= 0xff;  // the client's SCID, which the Retry's DCID echoes
            return Datagrams{make_retry(copy, retry_cid())};
        };
        REQUIRE(r.settle());
        CHECK(r.p.client->is_established());
        CHECK_FALSE(r.p.client->handshake_summary().retry);
    }
    SUBCASE("a second Retry") {
        RetriedPair r;
        wire::ConnectionId other = retry_cid();
        other.bytes[0] ^= 0xff;
        r.retries_for = [&](const std::vector<std::uint8_t>& initial) {
            r.p.server_retry = RetryValidation{bytes_of(first_packet(initial).dcid)};
            return Datagrams{make_retry(initial, retry_cid()), make_retry(initial, other)};
        };
        REQUIRE(r.settle());
        REQUIRE(r.p.client->is_established());
        CHECK(r.p.client->handshake_summary().peer.retry_source_connection_id == bytes_of(retry_cid().span()));
        CHECK(bytes_of(first_packet(r.seen.front()).dcid) == bytes_of(retry_cid().span()));
    }
}

TEST_CASE("retry: the client closes when the server's retry_source_connection_id is missing, wrong or unasked") {
    SUBCASE("missing after a Retry: TRANSPORT_PARAMETER_ERROR") {
        RetriedPair r;
        r.retries_for = [&](const std::vector<std::uint8_t>& initial) {
            r.p.server_retry = RetryValidation{bytes_of(first_packet(initial).dcid)};
            return Datagrams{make_retry(initial, retry_cid())};
        };
        r.p.server_params = [](wire::TransportParams& tp) { tp.retry_source_connection_id.reset(); };
        r.settle();
        CHECK_FALSE(r.p.client->is_established());
        CHECK(r.p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::transport_parameter_error));
        CHECK(r.p.client->close_info().reason == "peer sent no retry_source_connection_id");
    }
    SUBCASE("another ID than the Retry's: PROTOCOL_VIOLATION") {
        RetriedPair r;
        r.retries_for = [&](const std::vector<std::uint8_t>& initial) {
            r.p.server_retry = RetryValidation{bytes_of(first_packet(initial).dcid)};
            return Datagrams{make_retry(initial, retry_cid())};
        };
        r.p.server_params = [](wire::TransportParams& tp) { tp.retry_source_connection_id->bytes[0] ^= 1; };
        r.settle();
        CHECK_FALSE(r.p.client->is_established());
        CHECK(r.p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
    }
    SUBCASE("present though no Retry was sent: TRANSPORT_PARAMETER_ERROR") {
        ConnectionPair p;
        p.server_params = [](wire::TransportParams& tp) { tp.retry_source_connection_id = retry_cid(); };
        p.start();
        p.run_until([&] { return p.client->is_established() || p.client->is_closed(); });
        CHECK_FALSE(p.client->is_established());
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::transport_parameter_error));
        CHECK(p.client->close_info().reason.find("no Retry") != std::string::npos);
    }
}

TEST_CASE("retry: a server sends no Retry-related parameter without a Retry, and a client ignores a Retry once it heard the server") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    CHECK_FALSE(p.client->handshake_summary().retry);
    CHECK(p.client->handshake_summary().peer.retry_source_connection_id.empty());
    // A Retry now (forged with the right tag, as only an on-path host could) changes nothing.
    const auto& c = Connection::Impl::of(*p.client);
    std::vector<std::uint8_t> retry(256);
    retry.resize(wire::quic::write_retry(retry, QuicVersion::v1, c.local_cid, retry_cid(), kToken, c.original_dcid.span(), 0));
    const auto dropped = p.client->stats(p.now).packets_dropped;
    p.client->on_datagram(retry, p.now);
    CHECK(p.client->stats(p.now).packets_dropped == dropped + 1);
    CHECK(p.client->is_established());
    CHECK(Connection::Impl::of(*p.client).retry_token.empty());
}
