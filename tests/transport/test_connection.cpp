// The connection state machine without a network: handshake, streams,
// flow control, close, timeouts, and hostile input.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "connection_pair.hpp"
#include "process_memory.hpp"
#include "skip.hpp"
#include "quic_test_util.hpp"
#include "tls_test_util.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"
#include "wire/transport_params.hpp"

using namespace ndm;
using ndm::test::ConnectionPair;

namespace {

// A well-formed 1-RTT packet from `from` to its peer carrying `frames`,
// protected with from's keys: what a peer that sends these frames sends.
std::vector<std::uint8_t> craft(Connection& from, std::uint64_t pn, const std::vector<wire::Frame>& frames) {
    return test::seal(from, transport::PacketSpace::application, pn, test::encode(frames));
}

// The client's first datagram (its padded hello), as a spoofer would replay it.
std::vector<std::uint8_t> client_hello(ConnectionPair& p) {
    std::vector<std::uint8_t> buf(2000);
    const std::size_t n = p.client->poll_datagram(buf, p.now);
    REQUIRE(n > 0);
    buf.resize(n);
    return buf;
}

std::uint64_t next_pn(const Connection& from, Instant now) { return from.stats(now).packets_sent + 5; }

std::vector<std::uint8_t> bytes(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

// Sends `data` client→server on a fresh stream and returns what the server read.
std::vector<std::uint8_t> transfer(ConnectionPair& p, const std::vector<std::uint8_t>& data) {
    auto id = p.client->open_stream();
    REQUIRE(id);
    std::size_t written = 0;
    std::vector<std::uint8_t> received;
    std::vector<std::uint8_t> buf(65536);
    p.run_until([&] {
        if (written < data.size()) {
            written += p.client->write(*id, std::span(data).subspan(written), true);
        }
        while (auto ev = p.server->poll_event()) {
            (void)ev;
        }
        while (std::size_t n = p.server->read(*id, buf)) received.insert(received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return p.server->stream_finished(*id) || !p.server->is_established();
    });
    return received;
}

}  // namespace

TEST_CASE("handshake establishes both sides and carries application parameters") {
    ConnectionPair p;
    p.client_cfg.application_params = {1, 2, 3};
    p.server_cfg.application_params = {9};
    p.client_cfg.max_datagram_size = 9000;
    p.server_cfg.max_datagram_size = 1500;
    REQUIRE(p.handshake());
    CHECK(p.client->is_client());
    CHECK_FALSE(p.server->is_client());
    CHECK(std::vector<std::uint8_t>(p.server->peer_application_params().begin(), p.server->peer_application_params().end()) ==
          std::vector<std::uint8_t>{1, 2, 3});
    CHECK(std::vector<std::uint8_t>(p.client->peer_application_params().begin(), p.client->peer_application_params().end()) ==
          std::vector<std::uint8_t>{9});
    CHECK(p.client->max_datagram_size() == 1500);
    CHECK(p.server->max_datagram_size() == 1500);
    auto ev = p.client->poll_event();
    REQUIRE(ev);
    CHECK(std::holds_alternative<event::Established>(*ev));
}

TEST_CASE("bad configuration is a clear error") {
    ConnectionConfig c;
    c.max_datagram_size = 1000;
    CHECK_THROWS_WITH_AS(Connection::connect(c, Instant{}), "max datagram size 1000 outside 1200..65507 bytes",
                         std::invalid_argument);
    c.max_datagram_size = 1452;
    c.cc = "nope";
    CHECK_THROWS_AS(Connection::connect(c, Instant{}), std::invalid_argument);
}

TEST_CASE("a stream transfers byte-exact and both directions finish") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    auto data = bytes(3'000'000, 1);
    CHECK(transfer(p, data) == data);
    auto st = p.client->stats(p.now);
    CHECK(st.stream_bytes_sent == data.size());
    CHECK(st.packets_lost == 0);
    CHECK(p.server->stats(p.now).stream_bytes_delivered == data.size());
}

TEST_CASE("stream_send_acked turns true once the peer acknowledged every byte and the FIN") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto id = *p.client->open_stream();
    const auto data = bytes(100'000, 7);
    REQUIRE(p.client->write(id, data, true) == data.size());
    CHECK_FALSE(p.client->stream_send_acked(id));
    CHECK_FALSE(p.client->stream_send_acked(id + 4));  // never opened
    const auto uni = *p.server->open_uni_stream();
    CHECK_FALSE(p.client->stream_send_acked(uni));  // the server's: the client cannot send on it
    REQUIRE(p.run_until([&] { return p.client->stream_send_acked(id); }));
    CHECK(p.server->stats(p.now).stream_bytes_received == data.size());
    // Still true once both halves ended and the client forgot the stream.
    std::vector<std::uint8_t> out(data.size());
    REQUIRE(p.run_until([&] {
        (void)p.server->read(id, out);
        return p.server->stream_finished(id);
    }));
    p.server->finish(id);
    REQUIRE(p.run_until([&] {
        (void)p.client->read(id, out);
        return p.client->stream_finished(id);
    }));
    CHECK(p.client->stream_send_capacity(id) == 0);  // reaped
    CHECK(p.client->stream_send_acked(id));
}

TEST_CASE("64 KB datagrams are used when both sides allow them") {
    ConnectionPair p;
    p.client_cfg.max_datagram_size = p.server_cfg.max_datagram_size = 65507;
    REQUIRE(p.handshake());
    std::size_t largest = 0;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        largest = std::max(largest, d.size());
        return true;
    };
    auto data = bytes(2'000'000, 2);
    CHECK(transfer(p, data) == data);
    CHECK(largest == 65507);
}

TEST_CASE("flow control: a receiver that does not read stalls the sender, reading resumes it") {
    ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 100'000;
    p.server_cfg.initial_max_data = 150'000;
    REQUIRE(p.handshake());
    auto id = *p.client->open_stream();
    auto data = bytes(1'000'000, 3);
    std::size_t written = p.client->write(*&id, data);
    CHECK(written == data.size());
    p.run_until([] { return false; }, std::chrono::seconds(2));
    CHECK(p.client->stats(p.now).stream_bytes_sent == 100'000);  // exactly the window
    std::vector<std::uint8_t> got, buf(4096);
    p.run_until([&] {
        while (std::size_t n = p.server->read(id, buf)) got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return got.size() == data.size();
    });
    CHECK(got.size() == data.size());
    CHECK(got == data);
}

TEST_CASE("flow control: a capped receive window lets the peer send the cap past what was read, credit given stays") {
    ConnectionPair p;
    p.server_cfg.initial_max_data = 1'000'000;  // advertised in the handshake: stays
    p.server_cfg.autotune_receive_windows = false;
    REQUIRE(p.handshake());
    p.server->cap_receive_window(100'000);
    auto id = *p.client->open_stream();
    auto data = bytes(3'000'000, 5);
    CHECK(p.client->write(id, data) == data.size());
    p.run_until([] { return false; }, std::chrono::seconds(2));
    CHECK(p.client->stats(p.now).stream_bytes_sent == 1'000'000);
    // Reading it all slides the window: the cap ahead of what was read, not
    // the 1 MB window the configuration asked for.
    std::vector<std::uint8_t> got, buf(1 << 16);
    while (std::size_t n = p.server->read(id, buf)) got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK(got.size() == 1'000'000);
    p.run_until([] { return false; }, std::chrono::seconds(2));
    CHECK(p.client->stats(p.now).stream_bytes_sent == 1'100'000);
    // A larger cap takes effect at the next slide.
    p.server->cap_receive_window(400'000);
    p.run_until([&] {
        while (std::size_t n = p.server->read(id, buf)) got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return got.size() == data.size();
    });
    CHECK(got == data);
    CHECK_THROWS_AS(p.server->cap_receive_window(0), std::invalid_argument);
}

TEST_CASE("zero-copy prepare/commit and peek/consume transfer byte-exact under flow control") {
    // A small send buffer and receive window: the ring wraps many times on
    // both sides, prepare() runs short (asking for StreamWritable) and the
    // window only reopens through consume().
    ConnectionPair p;
    p.client_cfg.stream_send_buffer = 100'000;
    p.server_cfg.initial_max_stream_data = 150'000;
    p.server_cfg.initial_max_data = 200'000;
    REQUIRE(p.handshake());
    const auto id = *p.client->open_stream();
    const auto data = bytes(2'000'000, 4);
    std::size_t written = 0, peeks = 0;
    bool writable_event = false;
    std::vector<std::uint8_t> got;
    p.run_until([&] {
        while (written < data.size()) {
            auto room = p.client->prepare(id, 70'000);
            if (room.empty()) break;
            const std::size_t n = std::min(room.size(), data.size() - written);
            std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(written), n, room.begin());
            written += n;
            p.client->commit(id, n, written == data.size());
        }
        while (auto ev = p.client->poll_event()) writable_event |= std::holds_alternative<event::StreamWritable>(*ev);
        while (auto ev = p.server->poll_event()) (void)ev;
        for (auto view = p.server->peek(id); !view.empty(); view = p.server->peek(id)) {
            ++peeks;
            const std::size_t take = std::min<std::size_t>(view.size(), 30'000);  // not always all of it
            got.insert(got.end(), view.begin(), view.begin() + static_cast<std::ptrdiff_t>(take));
            p.server->consume(id, take);
        }
        return p.server->stream_finished(id);
    });
    CHECK(got == data);
    CHECK(writable_event);
    CHECK(peeks > data.size() / 30'000);
    CHECK(p.server->stats(p.now).stream_bytes_delivered == data.size());
}

TEST_CASE("zero-copy misuse is a clear error, nothing is sent or taken") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto id = *p.client->open_stream();
    auto room = p.client->prepare(id, 1000);
    REQUIRE(room.size() == 1000);
    CHECK_THROWS_AS(p.client->commit(id, 1001), std::logic_error);
    // write() in between may move the buffer: the prepared room is gone.
    (void)p.client->prepare(id, 1000);
    const std::vector<std::uint8_t> one{42};
    CHECK(p.client->write(id, one) == 1);
    CHECK_THROWS_AS(p.client->commit(id, 10), std::logic_error);
    p.client->commit(id, 0, true);  // nothing more, then FIN
    CHECK_THROWS_AS(p.client->prepare(id, 10), std::logic_error);  // after FIN
    std::vector<std::uint8_t> got;
    p.run_until([&] {
        auto view = p.server->peek(id);
        got.insert(got.end(), view.begin(), view.end());
        if (!view.empty()) CHECK_THROWS_AS(p.server->consume(id, view.size() + 1), std::logic_error);
        p.server->consume(id, view.size());
        return p.server->stream_finished(id);
    });
    CHECK(got == one);
    CHECK(p.server->peek(id).empty());
    CHECK_NOTHROW(p.server->consume(id, 0));
    CHECK_THROWS_AS(p.server->consume(id, 1), std::logic_error);  // a reaped stream has nothing to take
}

TEST_CASE("stream_readable counts what read() would return, and 0 for unknown and finished streams") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto id = *p.client->open_stream();
    CHECK(p.server->stream_readable(id) == 0);  // not opened by the peer yet
    const std::vector<std::uint8_t> data(3000, 9);
    CHECK(p.client->write(id, data, true) == data.size());
    p.run_until([&] { return p.server->stream_readable(id) == data.size(); });
    CHECK(p.server->stream_readable(id) == data.size());
    std::vector<std::uint8_t> buf(1000);
    CHECK(p.server->read(id, buf) == 1000);
    CHECK(p.server->stream_readable(id) == 2000);
    buf.resize(2000);
    CHECK(p.server->read(id, buf) == 2000);
    CHECK(p.server->stream_readable(id) == 0);
    CHECK(p.server->stream_finished(id));
    CHECK(p.server->stream_readable(id + 4) == 0);
}

TEST_CASE("graceful close reaches the peer with code and reason") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.client->close(42, "done here", p.now);
    p.run_until([&] { return p.server->state() != ConnectionState::established; });
    CHECK(p.server->close_info().code == 42);
    CHECK(p.server->close_info().reason == "done here");
    CHECK(p.server->close_info().by_peer);
    CHECK(p.server->close_info().application);
    p.run_until([&] { return p.client->is_closed() && p.server->is_closed(); });
    CHECK(p.client->is_closed());
    CHECK(p.server->is_closed());
}

TEST_CASE("idle timeout closes a silent connection") {
    ConnectionPair p;
    p.client_cfg.idle_timeout = std::chrono::seconds(2);
    REQUIRE(p.handshake());
    p.to_client = p.to_server = [](std::vector<std::uint8_t>&) { return false; };  // the path dies
    p.run_until([&] { return p.client->is_closed(); }, std::chrono::seconds(30));
    CHECK(p.client->is_closed());
    CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::idle_timeout));
}

TEST_CASE("ptos_in_a_row counts probe timeouts since the last ACK, pto_count all of them") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    static const std::uint8_t data[100] = {};
    bool silent = true;
    p.to_client = [&](std::vector<std::uint8_t>&) { return !silent; };  // the server's ACKs are lost
    REQUIRE(p.client->write(id, data) == sizeof data);
    p.run_until([&] { return p.client->stats(p.now).ptos_in_a_row >= 3; }, std::chrono::seconds(30));
    const ConnectionStats lost = p.client->stats(p.now);
    CHECK(lost.ptos_in_a_row == 3);
    CHECK(lost.pto_count >= 3);
    silent = false;  // the next probe's ACK gets through
    p.run_until([&] { return p.client->stats(p.now).stream_bytes_acked == sizeof data; }, std::chrono::seconds(30));
    const ConnectionStats heard = p.client->stats(p.now);
    CHECK(heard.ptos_in_a_row == 0);
    CHECK(heard.pto_count >= lost.pto_count);
}

TEST_CASE("handshake timeout when nobody answers") {
    ConnectionPair p;
    p.to_server = [](std::vector<std::uint8_t>&) { return false; };
    p.start();
    p.run_until([&] { return p.client->is_closed(); }, std::chrono::seconds(60));
    CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::handshake_timeout));
    CHECK(p.client->stats(p.now).pto_count >= 3);  // the hello was retried with backoff
}

TEST_CASE("close codes have RFC 9000's names, and the local ones lie outside every assigned range") {
    CHECK(close_code_name(0x0) == "NO_ERROR");
    CHECK(close_code_name(static_cast<std::uint64_t>(CloseCode::protocol_violation)) == "PROTOCOL_VIOLATION");
    CHECK(close_code_name(0x11) == "VERSION_NEGOTIATION_ERROR");
    CHECK(close_code_name(0x12) == "0x12");
    CHECK(close_code_name(0x100 + 120) == "CRYPTO_ERROR");  // no_application_protocol (RFC 9001 §8.1)
    CHECK(close_code_name(0x200) == "0x200");
    for (auto c : {CloseCode::idle_timeout, CloseCode::handshake_timeout}) {
        const auto v = static_cast<std::uint64_t>(c);
        CHECK(v > 0x1ff);                    // not CRYPTO_ERROR (0x100..0x1ff)
        CHECK(v <= wire::kVarintMax);         // representable, though never sent
    }
    CHECK(close_code_name(static_cast<std::uint64_t>(CloseCode::idle_timeout)) == "IDLE_TIMEOUT");
}

TEST_CASE("an unknown version gets a version negotiation answer and a clear error") {
    ConnectionPair p;
    p.start();
    auto buf = client_hello(p);
    buf[1] ^= 0x7f;  // another version: its packets are not v1's to open (RFC 8999)
    auto server = Connection::accept(p.server_cfg, buf, p.now);
    REQUIRE(server);
    std::vector<std::uint8_t> out(2000);
    const std::size_t m = server->poll_datagram(out, p.now);
    REQUIRE(m > 0);
    CHECK(server->is_closed());
    // RFC 9000 §17.2.1: versions 1 and 2 (RFC 9369) listed, the client's IDs swapped.
    wire::quic::PacketView vn;
    REQUIRE(wire::quic::parse_packet_header(std::span(out).first(m), wire::kShortCidLength, vn) ==
            wire::quic::HeaderError::none);
    CHECK(vn.kind == wire::quic::PacketKind::version_negotiation);
    REQUIRE(vn.versions.size() == 8);
    CHECK(wire::quic::listed_version(vn, 0) == kQuicVersion1);
    CHECK(wire::quic::listed_version(vn, 1) == kQuicVersion2);
    CHECK(std::ranges::equal(vn.dcid, p.client->local_cid()));
    // The client did offer version 1, so that answer is not for it (§6.2).
    p.client->on_datagram(std::span(out).first(m), p.now);
    CHECK(p.client->state() == ConnectionState::handshaking);
    // One that lists only other versions ends the attempt, naming them.
    const std::uint32_t others[] = {0xff00001d, 0x6b3343cf};
    const std::size_t n = wire::quic::write_version_negotiation(
        out, Connection::Impl::of(*p.client).original_dcid.span(), p.client->local_cid(), others, 0x2a);
    REQUIRE(n > 0);
    p.client->on_datagram(std::span(out).first(n), p.now);
    CHECK(p.client->is_closed());
    CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::version_negotiation_error));
    CHECK_MESSAGE(p.client->close_info().reason.find("0x00000001 (it offers: 0xff00001d, 0x6b3343cf)") != std::string::npos,
                  p.client->close_info().reason);
}

TEST_CASE("accept ignores datagrams that are not a client hello") {
    std::vector<std::uint8_t> junk(1200, 0xAB);
    CHECK(Connection::accept(ConnectionConfig{}, junk, Instant{}) == nullptr);
    CHECK(Connection::accept(ConnectionConfig{}, std::span<const std::uint8_t>{}, Instant{}) == nullptr);
}

TEST_CASE("truncated and corrupted datagrams are dropped without effect") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    auto pkt = craft(*p.client, next_pn(*p.client, p.now), {wire::PingFrame{}});
    for (std::size_t len = 0; len < pkt.size(); ++len) {
        p.server->on_datagram(std::span(pkt).first(len), p.now);
    }
    for (std::size_t bit = 0; bit < pkt.size() * 8; ++bit) {
        auto c = pkt;
        c[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        p.server->on_datagram(c, p.now);
    }
    CHECK(p.server->is_established());
    CHECK(p.server->stats(p.now).packets_dropped == pkt.size() + pkt.size() * 8);
}

namespace {
void expect_close(const std::vector<wire::Frame>& frames, CloseCode code, const char* reason_part) {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.server->on_datagram(craft(*p.client, next_pn(*p.client, p.now), frames), p.now);
    CHECK(p.server->state() == ConnectionState::closing);
    CHECK(p.server->close_info().code == static_cast<std::uint64_t>(code));
    CHECK_MESSAGE(p.server->close_info().reason.find(reason_part) != std::string::npos, p.server->close_info().reason);
    // The peer learns why.
    p.run_until([&] { return p.client->state() != ConnectionState::established; });
    CHECK(p.client->close_info().code == static_cast<std::uint64_t>(code));
    CHECK(p.client->close_info().by_peer);
}
}  // namespace

TEST_CASE("hostile frames close the connection with a reason") {
    SUBCASE("ACK of a packet never sent") {
        wire::AckFrame a;
        a.ranges = {{1'000'000, 1'000'000}};
        expect_close({a}, CloseCode::protocol_violation, "never sent");
    }
    SUBCASE("stream data beyond the flow-control limit") {
        static const std::uint8_t d[10] = {};
        expect_close({wire::StreamFrame{0, (32u << 20), d, false}}, CloseCode::flow_control_error, "exceeds its limit");
    }
    SUBCASE("a TLS message TLS does not expect, in a 1-RTT CRYPTO frame") {
        static const std::uint8_t d[4] = {};  // a HelloRequest, which TLS 1.3 does not have
        expect_close({wire::CryptoFrame{0, d}}, CloseCode{0x100 + 10}, "TLS alert unexpected_message");
    }
    SUBCASE("HANDSHAKE_DONE from a client") {
        expect_close({wire::HandshakeDoneFrame{}}, CloseCode::protocol_violation, "HANDSHAKE_DONE");
    }
    SUBCASE("a stream the server never opened") {
        static const std::uint8_t d[4] = {};
        expect_close({wire::StreamFrame{1, 0, d, false}}, CloseCode::stream_state_error, "never opened");
    }
    SUBCASE("beyond the stream limit") {
        static const std::uint8_t d[4] = {};
        expect_close({wire::StreamFrame{4 * 1000, 0, d, false}}, CloseCode::stream_limit_error, "limit");
    }
    SUBCASE("final size changes") {
        static const std::uint8_t d[4] = {};
        expect_close({wire::StreamFrame{0, 0, d, true}, wire::StreamFrame{0, 10, d, true}}, CloseCode::final_size_error,
                     "final size");
    }
}

TEST_CASE("connection ID frames out of range and a client's NEW_TOKEN close the connection naming the problem") {
    static const std::uint8_t cid[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const std::uint8_t token[16] = {};
    SUBCASE("NEW_CONNECTION_ID beyond active_connection_id_limit (RFC 9000 5.1.1)") {
        // The client issued sequence 1 already (min(2, 8) IDs): a third is one too many.
        expect_close({wire::NewConnectionIdFrame{5, 0, cid, token}}, CloseCode::connection_id_limit_error,
                     "the limit is 2");
    }
    SUBCASE("RETIRE_CONNECTION_ID of the packet's own ID or of one never issued (RFC 9000 19.16)") {
        expect_close({wire::RetireConnectionIdFrame{0}}, CloseCode::protocol_violation,
                     "RETIRE_CONNECTION_ID for sequence number 0 in a packet sent with that connection ID");
        expect_close({wire::RetireConnectionIdFrame{7}}, CloseCode::protocol_violation,
                     "RETIRE_CONNECTION_ID for sequence number 7, which was never issued");
    }
    SUBCASE("NEW_TOKEN from a client (RFC 9000 19.7)") {
        static const std::uint8_t t[] = {1};
        expect_close({wire::NewTokenFrame{t}}, CloseCode::protocol_violation, "NEW_TOKEN frame sent by a client");
    }
}

TEST_CASE("PATH_CHALLENGE is answered with its data in a PATH_RESPONSE, padded to 1200 bytes (RFC 9000 8.2.2)") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const std::array<std::uint8_t, 8> data{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    int responses = 0;
    std::size_t response_size = 0;
    p.to_client = [&](std::vector<std::uint8_t>& d) {
        const auto opened = test::open_datagram(*p.client, d, p.now);
        REQUIRE(!opened.packets.empty());
        for (const auto& pkt : opened.packets) {
            for (const auto& f : pkt.frames) {
                if (const auto* pr = std::get_if<wire::PathResponseFrame>(&f)) {
                    CHECK(pr->data == data);
                    ++responses;
                    response_size = d.size();
                }
            }
        }
        return false;  // it also ACKs the crafted packet number, which the client never sent
    };
    p.server->on_datagram(craft(*p.client, next_pn(*p.client, p.now), {wire::PathChallengeFrame{data}}), p.now);
    p.exchange();
    CHECK(responses == 1);
    CHECK(response_size >= kMinDatagramSize);
    CHECK(p.server->is_established());
    // An unsolicited PATH_RESPONSE is ignored (RFC 9000 8.2.2 allows it).
    p.client->on_datagram(craft(*p.server, 1000, {wire::PathResponseFrame{data}}), p.now);
    CHECK(p.client->is_established());
}

TEST_CASE("informational v1 frames leave the connection working") {
    ConnectionPair p;
    // Room for one more ID than the client issues (min(10, 8): sequence numbers 0..7).
    p.server_cfg.limits.active_connection_ids = 10;
    REQUIRE(p.handshake());
    // A packet number the client really sent and the server never saw, so
    // that the server's ACK of the crafted packet is an ACK of a sent packet.
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const std::uint64_t dropped = test::steal_client_pn(p, *id);
    wire::AckFrame ack_ecn;  // of the server's first packet, with ECN counts ndm does not use
    ack_ecn.ranges = {{0, 0}};
    ack_ecn.ecn = wire::EcnCounts{1, 0, 0};
    // A NEW_CONNECTION_ID within the limit is kept; the ID in use stays.
    static const std::uint8_t cid[] = {9, 9, 9, 9, 9, 9, 9, 9};
    static const std::uint8_t token[16] = {1};
    const std::vector<std::uint8_t> cid_before(p.server->peer_cid().begin(), p.server->peer_cid().end());
    p.server->on_datagram(craft(*p.client, dropped,
                                {wire::StreamsBlockedFrame{100, true}, wire::StreamsBlockedFrame{0, false},
                                 wire::MaxStreamsFrame{5, false}, ack_ecn, wire::NewConnectionIdFrame{8, 0, cid, token}}),
                          p.now);
    CHECK(p.server->is_established());
    CHECK(std::ranges::equal(p.server->peer_cid(), cid_before));
    const auto data = bytes(200'000, 7);
    CHECK(transfer(p, data) == data);
    // A client may receive NEW_TOKEN (and ndm keeps none).
    static const std::uint8_t t[] = {9, 9};
    p.client->on_datagram(craft(*p.server, 100'000, {wire::NewTokenFrame{t}}), p.now);
    CHECK(p.client->is_established());
}

TEST_CASE("the hello carries RFC 9000 transport parameters mapped from the config") {
    ConnectionPair p;
    p.client_cfg.initial_max_stream_data = 123'456;
    p.client_cfg.initial_max_streams = 9;
    p.client_cfg.max_datagram_size = 1400;
    p.start();
    std::vector<std::uint8_t> first(kMaxDatagramSize);
    first.resize(p.client->poll_datagram(first, p.now));
    auto server = Connection::accept(p.server_cfg, first, p.now);
    REQUIRE(server);
    // GnuTLS, as a server of its own, reads the extension off the ClientHello
    // (opened with the server's Initial keys, which it still has).
    tls::TlsSession reader(test::server_config());
    std::optional<wire::TransportParams> seen;
    const auto opened = test::open_datagram(*server, first, p.now);
    REQUIRE(opened.packets.size() == 1);
    for (const auto& f : opened.packets.front().frames) {
        if (const auto* c = std::get_if<wire::CryptoFrame>(&f)) {
            reader.provide(crypto::EncryptionLevel::initial, c->data);
            REQUIRE(reader.peer_transport_parameters());
            wire::TransportParams tp;
            wire::Error err;
            REQUIRE(wire::decode_transport_params(*reader.peer_transport_parameters(), wire::Role::client, tp, err));
            seen = tp;
        }
    }
    REQUIRE(seen);
    CHECK(seen->initial_max_stream_data_bidi_local == 123'456);
    CHECK(seen->initial_max_stream_data_bidi_remote == 123'456);
    CHECK(seen->initial_max_stream_data_uni == 0);
    CHECK(seen->initial_max_streams_bidi == 9);
    CHECK(seen->initial_max_streams_uni == 0);
    CHECK(seen->max_udp_payload_size == 1400);
    CHECK(seen->ack_delay_exponent == 0);
    CHECK(seen->max_ack_delay_ms == 25);
    CHECK(seen->max_idle_timeout_ms == 30'000);
}

TEST_CASE("malformed frames inside a valid packet close with the code the RFC names") {
    struct Case {
        std::vector<std::uint8_t> frame;
        CloseCode code;
        const char* reason;
    };
    const Case cases[] = {
        // STREAM with LEN=100 and 3 bytes following.
        {{0x0e, 0x00, 0x00, 0x40, 0x64, 1, 2, 3}, CloseCode::frame_encoding_error, "past end of packet"},
        {{0x13, 0xd0, 0, 0, 0, 0, 0, 0, 1}, CloseCode::frame_encoding_error, "exceeds 2^60"},
        {{0x07, 0x00}, CloseCode::frame_encoding_error, "empty token"},
        {{0x20}, CloseCode::frame_encoding_error, "unknown frame type"},
        // draft-ietf-quic-ack-frequency-14 §3: only for a side that advertised min_ack_delay.
        {{0x1f}, CloseCode::frame_encoding_error, "IMMEDIATE_ACK frame, but min_ack_delay was not advertised"},
        {{0x40, 0xaf, 0, 1, 0x40, 0x64, 1}, CloseCode::frame_encoding_error,
         "ACK_FREQUENCY frame, but min_ack_delay was not advertised"},
        {{0x40, 0x01}, CloseCode::protocol_violation, "non-minimal"},  // RFC 9000 §12.4
    };
    for (const auto& c : cases) {
        CAPTURE(c.reason);
        ConnectionPair p;
        REQUIRE(p.handshake());
        p.server->on_datagram(test::seal(*p.client, transport::PacketSpace::application, next_pn(*p.client, p.now), c.frame),
                              p.now);
        CHECK(p.server->state() == ConnectionState::closing);
        CHECK(p.server->close_info().code == static_cast<std::uint64_t>(c.code));
        CHECK(p.server->close_info().reason.find(c.reason) != std::string::npos);
    }
}

TEST_CASE("10^5 random datagrams during a transfer: all dropped, data intact") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    std::mt19937_64 rng(99);
    int injected = 0;
    p.to_server = [&](std::vector<std::uint8_t>&) {
        // Before each real datagram, 20 random ones: garbage, or garbage
        // behind the server's own connection ID (which only forged
        // authentication could get read, RFC 9001 §5.5).
        for (int i = 0; i < 20 && injected < 100'000; ++i, ++injected) {
            std::vector<std::uint8_t> junk(rng() % 1500);
            for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
            if (i % 2 && junk.size() > 40) {
                junk[0] = static_cast<std::uint8_t>(0x40 | (junk[0] & 0x3f));  // a short header
                const auto cid = p.server->local_cid();
                std::copy(cid.begin(), cid.end(), junk.begin() + 1);
            }
            p.server->on_datagram(junk, p.now);
        }
        return true;
    };
    auto data = bytes(8'000'000, 4);
    CHECK(transfer(p, data) == data);
    while (injected < 100'000) {
        std::vector<std::uint8_t> junk(rng() % 1500);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        p.server->on_datagram(junk, p.now);
        ++injected;
    }
    CHECK(p.server->is_established());
    CHECK(p.server->stats(p.now).packets_dropped >= 100'000);
}

TEST_CASE("protected random frames to a correct CID never crash, errors are protocol errors") {
    std::mt19937_64 rng(7);
    int closed = 0;
    for (int round = 0; round < 200; ++round) {
        ConnectionPair p;
        p.server_cfg.seed = 1000 + static_cast<std::uint64_t>(round);
        REQUIRE(p.handshake());
        for (int i = 0; i < 50 && p.server->is_established(); ++i) {
            std::vector<std::uint8_t> payload(1 + rng() % 64);
            // Bias towards valid frame types so the decoders are exercised.
            for (std::size_t k = 0; k < payload.size(); ++k)
                payload[k] = k == 0 ? static_cast<std::uint8_t>(rng() % 0x20) : static_cast<std::uint8_t>(rng());
            const std::uint64_t pn = next_pn(*p.client, p.now) + static_cast<std::uint64_t>(i);
            p.server->on_datagram(test::seal(*p.client, transport::PacketSpace::application, pn, payload), p.now);
        }
        if (!p.server->is_established()) {
            ++closed;
            auto code = p.server->close_info().code;
            CHECK(code != 0);
            CHECK_FALSE(p.server->close_info().reason.empty());
        }
        p.run_until([&] { return false; }, std::chrono::seconds(1));
    }
    CHECK(closed > 100);
}

// ---- Peer-supplied numbers at their extremes (every value from the network
// is range-checked or saturates: docs/security.md). Where the hole was undefined
// behaviour, the sanitizer build (scripts/build.sh --sanitize) aborts on the
// old code; the release build checks that the resulting value is sane.


TEST_CASE("a peer's max_idle_timeout beyond what a Duration holds leaves the local idle timeout in force") {
    // 10^13 ms (and 2^62-1, the largest varint) overflowed the signed ms -> ns
    // conversion in effective_idle_timeout: UB, the sanitizer build aborts. In
    // release the wrapped value went negative and the server timed out after
    // three PTOs (~80 ms here) instead of its own 30 s.
    for (const std::uint64_t peer_ms : {std::uint64_t{10'000'000'000'000}, wire::kVarintMax}) {
        CAPTURE(peer_ms);
        ConnectionPair p;
        p.client_cfg.idle_timeout = std::chrono::seconds(300);
        p.client_params = [&](wire::TransportParams& tp) { tp.max_idle_timeout_ms = peer_ms; };
        REQUIRE(p.handshake());
        const Instant t0 = p.now;
        p.to_client = p.to_server = [](std::vector<std::uint8_t>&) { return false; };  // silence
        p.run_until([&] { return p.server->is_closed(); }, std::chrono::seconds(60));
        REQUIRE(p.server->is_closed());
        CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::idle_timeout));
        CHECK(p.now - t0 >= std::chrono::seconds(29));
        CHECK_MESSAGE(p.server->close_info().reason.find("30000 ms") != std::string::npos, p.server->close_info().reason);
    }
}

TEST_CASE("transport parameters must name the connection IDs the packets carry (RFC 9000 7.3)") {
    SUBCASE("a client that states no initial_source_connection_id") {
        ConnectionPair p;
        p.client_params = ([](wire::TransportParams& tp) { tp.initial_source_connection_id.reset(); });
        CHECK_FALSE(p.handshake());
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::transport_parameter_error));
        CHECK(p.client->close_info().by_peer);
    }
    SUBCASE("a client whose parameters and Initial disagree on its Source Connection ID") {
        ConnectionPair p;
        p.client_params = ([](wire::TransportParams& tp) { tp.initial_source_connection_id->bytes[0] ^= 1; });
        CHECK_FALSE(p.handshake());
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
        CHECK(p.client->close_info().reason.find("initial_source_connection_id") != std::string::npos);
    }
    SUBCASE("a server that names another original_destination_connection_id") {
        ConnectionPair p;
        p.server_params = ([](wire::TransportParams& tp) { tp.original_destination_connection_id->bytes[0] ^= 1; });
        CHECK_FALSE(p.handshake());
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
        CHECK_FALSE(p.client->close_info().by_peer);
        CHECK(p.client->close_info().reason.find("original_destination_connection_id") != std::string::npos);
    }
    SUBCASE("a server that states no initial_source_connection_id") {
        ConnectionPair p;
        p.server_params = ([](wire::TransportParams& tp) { tp.initial_source_connection_id.reset(); });
        CHECK_FALSE(p.handshake());
        CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::transport_parameter_error));
    }
}

TEST_CASE("a peer's smaller max_idle_timeout still wins (RFC 9000 10.1)") {
    ConnectionPair p;
    p.client_params = [](wire::TransportParams& tp) { tp.max_idle_timeout_ms = 4000; };
    REQUIRE(p.handshake());
    const Instant t0 = p.now;
    p.to_client = p.to_server = [](std::vector<std::uint8_t>&) { return false; };
    p.run_until([&] { return p.server->is_closed(); }, std::chrono::seconds(60));
    CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::idle_timeout));
    CHECK(p.now - t0 >= std::chrono::seconds(4));
    CHECK(p.now - t0 < std::chrono::seconds(5));
}

TEST_CASE("extreme flow-control and stream values from the peer: limits hold or the connection closes") {
    static const std::uint8_t d[4] = {};
    SUBCASE("stream data ending at 2^62-1") {
        expect_close({wire::StreamFrame{0, wire::kVarintMax - 4, d, false}}, CloseCode::flow_control_error,
                     "exceeds its limit");
    }
    SUBCASE("the largest stream id") {
        expect_close({wire::StreamFrame{wire::kVarintMax & ~std::uint64_t{3}, 0, d, false}},
                     CloseCode::stream_limit_error, "limit");
    }
    SUBCASE("MAX_DATA, MAX_STREAM_DATA and MAX_STREAMS at their maxima, then a transfer") {
        ConnectionPair p;
        std::uint64_t client_one_rtt = 0;  // the client's 1-RTT packets: its next packet number in that space
        p.to_server = [&](std::vector<std::uint8_t>& d) {
            if ((d[0] & 0x80) == 0) ++client_one_rtt;
            return true;
        };
        REQUIRE(p.handshake());
        const auto id = p.server->open_stream();  // a server stream the client may raise
        REQUIRE(id);
        // The client's next packet number: the client sends it first (it has
        // a byte queued and exchange() polls it first), so the server's ACK
        // of it stays valid; that packet is dropped as a duplicate and its
        // byte recovered as a loss.
        const auto cid = p.client->open_stream();
        REQUIRE(cid);
        const std::uint8_t one[1] = {1};
        REQUIRE(p.client->write(*cid, one, true) == 1);
        p.server->on_datagram(craft(*p.client, client_one_rtt,
                                    {wire::MaxDataFrame{wire::kVarintMax}, wire::MaxStreamDataFrame{*id, wire::kVarintMax},
                                     wire::MaxStreamsFrame{std::uint64_t{1} << 60}}),
                              p.now);
        REQUIRE(p.server->is_established());
        auto data = bytes(100'000, 9);
        std::size_t written = 0;
        std::vector<std::uint8_t> got(data.size() + 1);
        std::size_t read = 0;
        p.run_until([&] {
            if (written < data.size()) written += p.server->write(*id, std::span(data).subspan(written), true);
            while (p.client->poll_event()) {}
            read += p.client->read(*id, std::span(got).subspan(read));
            return p.client->stream_finished(*id) || !p.client->is_established();
        });
        INFO(p.client->close_info().reason, " / ", p.server->close_info().reason);
        CHECK(p.client->is_established());
        CHECK(read == data.size());
        CHECK(std::equal(data.begin(), data.end(), got.begin()));
    }
}

TEST_CASE("a peer fragmenting a stream into 1-byte holes is closed, not fed quadratic work") {
    // 1-byte STREAM frames at every other offset, highest first: each one
    // inserted at the front of the reassembly ranges. Before the cap a 16 MB
    // window allowed 8 million ranges; 200 000 such frames (1.6 MB of
    // datagrams) took 60 s of CPU. Now the stream holds at most
    // max(1024, window / 1024) ranges and the connection closes.
    ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 1u << 20;  // cap: 1024 ranges
    REQUIRE(p.handshake());
    static const std::uint8_t one[1] = {7};
    std::uint64_t pn = p.client->stats(p.now).packets_sent + 5;
    std::uint64_t off = (1u << 20) - 2;
    std::size_t frames = 0;
    while (p.server->is_established() && frames < 4000) {
        std::vector<wire::Frame> batch;
        for (int i = 0; i < 100; ++i, off -= 2, ++frames) batch.push_back(wire::StreamFrame{0, off, one, false});
        p.server->on_datagram(craft(*p.client, pn++, batch), p.now);
    }
    CHECK(p.server->state() == ConnectionState::closing);
    CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
    CHECK_MESSAGE(p.server->close_info().reason.find("too fragmented: more than 1024") != std::string::npos,
                  p.server->close_info().reason);
    CHECK(frames <= 1100);
}

TEST_CASE("seven 1-byte STREAM frames 2 MiB apart cost the receiver bytes, not mapped megabytes (resident size)") {
    // Each once grew the stream's receive ring to span it and faulted a huge
    // page (MADV_HUGEPAGE) for its byte: 14 MB resident for 7 bytes.
    if (!test::kResidentSizeMeaningful) {
        test::skip_test("resident sizes under AddressSanitizer's allocator say nothing of glibc's");
        return;
    }
    ConnectionPair p;
    REQUIRE(p.handshake());
    static const std::uint8_t one[1] = {7};
    std::uint64_t pn = p.client->stats(p.now).packets_sent + 5;
    const std::size_t before = test::resident_bytes();
    for (std::uint64_t k = 1; k <= 7; ++k) {
        p.server->on_datagram(craft(*p.client, pn++, {wire::StreamFrame{0, k * (2u << 20), one, false}}), p.now);
    }
    const std::size_t after = test::resident_bytes();
    MESSAGE("resident before " << before / 1024 << " KiB, after " << after / 1024 << " KiB");
    CHECK(p.server->is_established());
    CHECK(after < before + (1u << 20));
}

TEST_CASE("a close acknowledges what arrived: the peer's last data, whose ACK was delayed, counts as delivered") {
    // The server's last bytes and FIN reach the client, which reads them and
    // closes at once, before its delayed ACK is due (BlockingStream's echo:
    // the server's close() then saw its stream unacknowledged and reported
    // data lost that the client had read).
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto id = p.client->open_stream();
    REQUIRE(id);
    const std::uint8_t hello[1] = {1};
    p.client->write(*id, hello);
    REQUIRE(p.run_until([&] { return p.server->stream_readable(*id) == 1; }));
    const std::vector<std::uint8_t> answer(3000, 0x61);  // three packets: one ACK is then due at once, one delayed
    REQUIRE(p.server->write(*id, answer, true) == answer.size());
    std::vector<std::uint8_t> buf(answer.size() + 1);
    std::size_t got = 0;
    Ecn ecn = Ecn::not_ect;
    while (std::size_t n = p.server->poll_datagram(p.buf, p.now, ecn)) {
        p.client->on_datagram(std::span(p.buf).first(n), p.now);
    }
    got = p.client->read(*id, buf);
    REQUIRE(got == answer.size());
    REQUIRE(p.client->stream_finished(*id));
    CHECK_FALSE(p.server->stream_send_acked(*id));
    p.client->close(0, "done", p.now);
    while (std::size_t n = p.client->poll_datagram(p.buf, p.now, ecn)) {
        p.server->on_datagram(std::span(p.buf).first(n), p.now);
    }
    CHECK(p.server->state() == ConnectionState::draining);
    CHECK(p.server->stream_send_acked(*id));
}

TEST_CASE("heavy real loss stays under the fragmentation cap") {
    // Every other packet of a transfer lost once: one hole per lost packet.
    ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 1u << 20;
    REQUIRE(p.handshake());
    std::size_t n = 0;
    p.to_server = [&](std::vector<std::uint8_t>&) { return ++n % 2 == 0 || n > 4000; };
    auto data = bytes(3'000'000, 11);
    CHECK(transfer(p, data) == data);
    CHECK(p.server->is_established());
}

TEST_CASE("connection IDs come from ConnectionConfig::random_bytes when it is set, else from the seed") {
    ConnectionConfig cfg;
    cfg.seed = 7;
    cfg.tls.trust = tls::ClientCredentials::insecure();
    const auto seeded_a = Connection::connect(cfg, Instant{});
    const auto seeded_b = Connection::connect(cfg, Instant{});
    CHECK(std::vector<std::uint8_t>(seeded_a->local_cid().begin(), seeded_a->local_cid().end()) ==
          std::vector<std::uint8_t>(seeded_b->local_cid().begin(), seeded_b->local_cid().end()));  // reproducible
    std::size_t calls = 0;
    cfg.random_bytes = [&calls](std::span<std::uint8_t> out) {
        ++calls;
        for (auto& b : out) b = 0xab;
    };
    const auto sourced = Connection::connect(cfg, Instant{});
    // The client's own CID, the server's initial DCID, and the secret that
    // places its skipped packet numbers (RFC 9000 §21.4) and the one of its
    // spin bit (§17.4).
    CHECK(calls == 4);
    const auto cid = sourced->local_cid();
    CHECK(cid.size() == 8);
    CHECK(std::all_of(cid.begin(), cid.end(), [](std::uint8_t b) { return b == 0xab; }));
}

TEST_CASE("a server never sends an unvalidated address more than three times what it received (RFC 9000 8.1)") {
    // A spoofed hello from an address that never answers: the server's
    // handshake packets and all their probes, over two minutes, stay within 3x.
    // The server's hello carries 512 bytes of application parameters (as
    // ndm-recv's can), so unlimited retransmissions of it would exceed that.
    ConnectionPair p;
    p.server_cfg.application_params.assign(512, 0x5a);
    p.server_cfg.handshake_timeout = std::chrono::seconds(120);
    p.start();
    const auto hello = client_hello(p);
    CHECK(hello.size() >= kMinDatagramSize);
    auto server = Connection::accept(p.server_cfg, hello, p.now);
    REQUIRE(server);
    std::uint64_t sent = 0, datagrams = 0;
    std::vector<std::uint8_t> out(2000);
    Instant now = p.now;
    const Instant end = now + std::chrono::seconds(120);
    while (now < end && !server->is_closed()) {
        while (std::size_t n = server->poll_datagram(out, now)) {
            sent += n;
            ++datagrams;
        }
        const Instant t = server->next_timeout();
        INFO("t - now = ", (t - now).count(), " ns, sent ", sent, ", closed ", server->is_closed());
        REQUIRE(t > now);  // blocked by the limit, it waits: no busy loop
        now = std::min(t, end);
        server->on_timeout(now);
    }
    MESSAGE("server sent ", sent, " bytes in ", datagrams, " datagrams for ", hello.size(), " received");
    CHECK(datagrams >= 1);  // it did answer
    CHECK(sent <= 3 * hello.size());
    // A second copy of the hello (the client retransmitting) raises the limit.
    ConnectionPair q;
    q.start();
    const auto hello2 = client_hello(q);
    auto server2 = Connection::accept(q.server_cfg, hello2, q.now);
    REQUIRE(server2);
    std::uint64_t sent2 = 0;
    while (std::size_t n = server2->poll_datagram(out, q.now)) sent2 += n;
    server2->on_datagram(hello2, q.now);  // a duplicate, but bytes from the address all the same
    while (std::size_t n = server2->poll_datagram(out, q.now)) sent2 += n;
    CHECK(sent2 <= 6 * hello2.size());
}

TEST_CASE("the address is validated once the client uses the server's connection ID, and the transfer is unlimited") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    // The server sends 200 kB on a stream of its own, far past 3x what it received.
    const auto data = bytes(200'000, 3);
    const auto id = p.server->open_stream();
    REQUIRE(id);
    std::size_t written = 0;
    std::vector<std::uint8_t> received, buf(65536);
    REQUIRE(p.run_until([&] {
        if (written < data.size()) written += p.server->write(*id, std::span(data).subspan(written), true);
        while (p.client->poll_event()) {
        }
        while (std::size_t n = p.client->read(*id, buf)) received.insert(received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return p.client->stream_finished(*id);
    }));
    CHECK(received == data);
    CHECK(p.server->stats(p.now).bytes_sent > 3 * p.server->stats(p.now).bytes_received);  // past the limit: validated
}

TEST_CASE("a server drops a client Initial in a datagram under 1200 bytes (RFC 9000 14.1)") {
    ConnectionPair p;
    p.start();
    const auto hello = client_hello(p);
    // The same ClientHello without the padding, sealed again: a valid packet, too small.
    std::vector<std::uint8_t> copy = hello;
    wire::quic::PacketView v;
    REQUIRE(wire::quic::parse_packet_header(copy, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
    wire::quic::OpenedPacket opened;
    auto& client = Connection::Impl::of(*p.client);
    REQUIRE(wire::quic::open_packet(copy, v, client.write_keys_of(transport::PacketSpace::initial), std::nullopt,
                                    opened) == wire::quic::OpenError::none);
    std::vector<wire::Frame> frames;
    wire::Reader r(opened.payload);
    wire::Error err;
    for (wire::Frame f; !r.empty() && wire::decode_frame(r, f, err);)
        if (!std::holds_alternative<wire::PaddingFrame>(f)) frames.push_back(f);
    REQUIRE(frames.size() == 1);  // the CRYPTO frame
    const auto small = test::seal(*p.client, transport::PacketSpace::initial, 0, test::encode(frames));
    REQUIRE(small.size() < kMinDatagramSize);
    CHECK(Connection::accept(p.server_cfg, small, p.now) == nullptr);
    CHECK(Connection::accept(p.server_cfg, hello, p.now) != nullptr);
}

TEST_CASE("a stateless reset ends the connection only when it carries the peer's token (RFC 9000 10.3.1)") {
    ConnectionPair p;
    std::array<std::uint8_t, 16> token{};
    token.fill(0xa5);
    p.server_cfg.stateless_reset_token = [&](std::span<const std::uint8_t>) { return token; };
    REQUIRE(p.handshake());
    CHECK(p.client->handshake_summary().peer.stateless_reset_token);
    // Looks like a short-header packet, as a reset does; the wrong last 16 bytes.
    std::vector<std::uint8_t> forged(40, 0x33);
    forged[0] = 0x41;
    p.client->on_datagram(forged, p.now);
    CHECK(p.client->is_established());
    auto reset = forged;
    std::copy(token.begin(), token.end(), reset.end() - 16);
    p.client->on_datagram(std::span(reset).last(20), p.now);  // under 21 bytes: not a reset
    CHECK(p.client->is_established());
    p.client->on_datagram(reset, p.now);
    CHECK(p.client->state() == ConnectionState::draining);
    CHECK(p.client->close_info().code == static_cast<std::uint64_t>(CloseCode::stateless_reset));
    CHECK(p.client->close_info().by_peer);
    CHECK(close_code_name(p.client->close_info().code) == "STATELESS_RESET");
    std::vector<std::uint8_t> out(kMaxDatagramSize);
    CHECK(p.client->poll_datagram(out, p.now) == 0);  // §10.3.1: nothing more is sent
    // A client issues no token: the same bytes do nothing to the server.
    p.server->on_datagram(reset, p.now);
    CHECK(p.server->is_established());
}

TEST_CASE("a stateless reset while closing ends the close frames without a second Closed event (RFC 9000 10.3.1)") {
    // Found by the connection fuzzer: the reset re-announced the close, so the
    // application saw Closed twice (and a reason other than its own).
    ConnectionPair p;
    std::array<std::uint8_t, 16> token{};
    token.fill(0x5a);
    p.server_cfg.stateless_reset_token = [&](std::span<const std::uint8_t>) { return token; };
    REQUIRE(p.handshake());
    while (p.client->poll_event()) {}
    p.client->close(7, "done here", p.now);
    int closed = 0;
    while (auto ev = p.client->poll_event()) closed += std::holds_alternative<event::Closed>(*ev) ? 1 : 0;
    CHECK(closed == 1);
    REQUIRE(p.client->state() == ConnectionState::closing);
    std::vector<std::uint8_t> reset(40, 0x33);
    reset[0] = 0x41;
    std::copy(token.begin(), token.end(), reset.end() - 16);
    p.client->on_datagram(reset, p.now);
    CHECK(p.client->state() == ConnectionState::draining);
    CHECK_FALSE(p.client->poll_event());  // no second Closed
    CHECK(p.client->close_info().code == 7);
    CHECK(p.client->close_info().reason == "done here");
    std::vector<std::uint8_t> out(kMaxDatagramSize);
    CHECK(p.client->poll_datagram(out, p.now) == 0);  // draining: nothing more is sent
}

TEST_CASE("a forged CONNECTION_CLOSE without the keys does nothing") {
    ConnectionPair p, other;
    other.server_cfg.seed = 99;
    REQUIRE(p.handshake());
    REQUIRE(other.handshake());
    // A well-formed close, protected with another connection's keys and
    // addressed to this server: what an attacker who saw the connection ID sends.
    wire::ConnectionCloseFrame close;
    close.error_code = 0;
    close.reason = "forged";
    auto forged = craft(*other.client, next_pn(*p.client, p.now), {close});
    const auto cid = p.server->local_cid();
    REQUIRE(forged.size() > 1 + cid.size());
    std::copy(cid.begin(), cid.end(), forged.begin() + 1);
    const auto dropped = p.server->stats(p.now).packets_dropped;
    p.server->on_datagram(forged, p.now);
    CHECK(p.server->is_established());
    CHECK(p.server->stats(p.now).packets_dropped == dropped + 1);
    // The same close with this connection's keys is the peer's, and is obeyed.
    p.server->on_datagram(craft(*p.client, next_pn(*p.client, p.now), {close}), p.now);
    CHECK(p.server->state() == ConnectionState::draining);
    CHECK(p.server->close_info().reason == "forged");
}
