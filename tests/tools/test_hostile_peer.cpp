// The hostile-peer suite (docs/security.md): one TEST_CASE per attack class, over a
// real connection pair in virtual time (connection_pair.hpp), with packets
// forged under the connection's own keys (quic_test_util.hpp), each asserting
// the outcome RFC 9000 names: a close with the §20 code and a reason, or a
// silent drop after which the connection still works byte-exact.
//
// Classes covered elsewhere stay there; this is the map, so that the suite is
// findable as one place (file: TEST_CASE / SUBCASE):
//   forged frames, wrong direction
//     test_connection.cpp: "hostile frames close the connection with a reason" / "HANDSHAKE_DONE from a client"
//     test_connection.cpp: "v1 frames ndm does not act on close with PROTOCOL_VIOLATION naming the frame"
//                          / "NEW_TOKEN from a client (RFC 9000 19.7)"
//     test_frame.cpp: "frame: frames allowed per packet type follow RFC 9000 12.4 Table 3" (the table itself)
//   ACK of a packet never sent (1-RTT)
//     test_connection.cpp: "hostile frames close the connection with a reason" / "ACK of a packet never sent"
//     test_loss_detector.cpp: "LossDetector: ACK of a packet never sent is invalid and changes nothing"
//   ACK ranges that underflow, ACK delay and exponent at their extremes (codec)
//     test_frame.cpp: "frame: ACK underflow and limits are rejected",
//                     "frame: a hostile ACK delay or exponent saturates without overflow"
//   packet-number decoding (RFC 9000 A.3)
//     test_packet.cpp: "packet: packet number decoding, RFC 9000 Appendix A.3"
//     test_packet_codec.cpp: "packet codec: a 2-byte packet number expands across its wrap (RFC 9000 §A.3)"
//   stream offsets and ids at their extremes, final size changes
//     test_connection.cpp: "extreme flow-control and stream values from the peer: limits hold or the connection
//                          closes" (data ending at 2^62-1, the largest stream id, MAX_* at their maxima)
//     test_connection.cpp: "hostile frames close the connection with a reason" / "final size changes"
//     test_frame.cpp: "frame: STREAM and CRYPTO length and offset errors"
//   MAX_STREAMS > 2^60, opening past the limit, stream data beyond MAX_STREAM_DATA
//     test_connection.cpp: "malformed frames inside a valid packet close with the code the RFC names" (0x13)
//     test_connection.cpp: "hostile frames close the connection with a reason" / "beyond the stream limit",
//                          "stream data beyond the flow-control limit"
//     test_frame.cpp: "frame: range checks of the v1 frames, each a FRAME_ENCODING_ERROR (RFC 9000 19)"
//   reassembly fragmentation
//     test_connection.cpp: "a peer fragmenting a stream into 1-byte holes is closed, not fed quadratic work"
//   huge varints and truncation (codec, and one of each inside a packet)
//     test_frame.cpp: "frame: unknown types, bad varints and truncation"
//     test_connection.cpp: "malformed frames inside a valid packet close with the code the RFC names"
//   amplification (RFC 9000 8.1)
//     test_connection.cpp: "a server never sends an unvalidated address more than three times what it received
//                          (RFC 9000 8.1)"
//     test_endpoint.cpp: "endpoint: a spoofed Initial from a port that never answers gets at most 3x its bytes
//                        back, ever (RFC 9000 8.1)"
//   floods of unauthenticated datagrams, forged close, stateless reset
//     test_connection.cpp: "10^5 random datagrams during a transfer: all dropped, data intact",
//                          "a forged CONNECTION_CLOSE without the keys does nothing",
//                          "a stateless reset ends the connection only when it carries the peer's token ..."
//     test_endpoint.cpp: "endpoint: a flood of handshakes that never complete is capped, ..."
//   NEW_CONNECTION_ID beyond the limit, RETIRE_CONNECTION_ID of an unissued sequence
//     test_connection.cpp: "v1 frames ndm does not act on ..." / "NEW_CONNECTION_ID beyond ...",
//                          "RETIRE_CONNECTION_ID: ndm issued only sequence 0, ..."
//     test_peer_connection_ids.cpp: all of it (limit, conflicting repeats, bounded retirements)
//   PATH_CHALLENGE answered
//     test_connection.cpp: "PATH_CHALLENGE is answered with its data in a PATH_RESPONSE, padded to 1200 bytes ..."
//   transport parameters (decoder: every range, duplicates, lengths, server-only ones from a client)
//     test_transport_params.cpp: "transport_params: out-of-range integer values are rejected",
//                                "... duplicates are rejected", "... a client must not send the server-only
//                                parameters", "... wrong lengths are rejected", "... malformed entries"
//     test_connection.cpp: "transport parameters must name the connection IDs the packets carry (RFC 9000 7.3)"
//                          (original_destination_connection_id mismatch: PROTOCOL_VIOLATION, which §7.3 allows)
//     test_connection.cpp: "a peer's max_idle_timeout beyond what a Duration holds ..."
//   the tools' test parameters (JSON hello)
//     test_perf_session.cpp: "perf session: every test parameter from the network is bounded",
//                            "perf session: reports from the peer are type- and range-checked"
//     cli/ndm_hostile_peer_test.sh: the same over real sockets, against ndm-recv
//
//   optimistic ACK (RFC 9000 21.4: 1-RTT packet numbers skipped on purpose)
//     here: "hostile peer: a receiver acknowledging packets it never got ..."
//     test_loss_detector.cpp: "LossDetector: an ACK of a skipped packet number is optimistic ..."
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "connection_pair.hpp"
#include "frame_equal.hpp"
#include "quic_test_util.hpp"
#include "tools/perf/perf_session.hpp"
#include "wire/frame.hpp"
#include "wire/transport_params.hpp"

using namespace ndm;
using test::ConnectionPair;
using transport::PacketSpace;

namespace {

using Bytes = std::vector<std::uint8_t>;
constexpr std::uint64_t kPnMax = (std::uint64_t{1} << 62) - 1;  // RFC 9000 §12.3

// Varints in their shortest form, then raw bytes: a frame as a peer may
// write it, including what no encoder writes.
Bytes wire_bytes(std::initializer_list<std::uint64_t> varints, const Bytes& tail = {}) {
    Bytes out(8 * varints.size() + tail.size());
    wire::Writer w(out);
    for (auto v : varints) REQUIRE(w.varint(v));
    REQUIRE(w.bytes(tail));
    out.resize(w.position());
    return out;
}

// x in the 8-byte varint form (RFC 9000 §16), for values near 2^62.
Bytes v8(std::uint64_t x) {
    Bytes out(8);
    wire::Writer w(out);
    REQUIRE(w.varint_fixed(x, 8));
    return out;
}

Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

Bytes random_bytes(std::size_t n, std::mt19937_64& rng) {
    Bytes v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

std::string code_name(CloseCode c) { return close_code_name(static_cast<std::uint64_t>(c)); }

// c closed because of what its peer sent: the code the RFC names, and a reason.
void check_closed(Connection& c, CloseCode code, std::string_view reason_part) {
    CHECK(c.state() == ConnectionState::closing);
    CHECK(close_code_name(c.close_info().code) == code_name(code));
    CHECK_FALSE(c.close_info().by_peer);
    CHECK_MESSAGE(c.close_info().reason.find(reason_part) != std::string::npos, c.close_info().reason);
}

// The client's packets to the server, forged: numbers from far above what
// the client sent, so they are new to the server.
struct Forger {
    ConnectionPair& p;
    std::uint64_t pn;
    explicit Forger(ConnectionPair& pair) : p(pair), pn(pair.client->stats(pair.now).packets_sent + 5) {}
    void send(const Bytes& payload, PacketSpace space = PacketSpace::application, std::size_t pad_to = 0) {
        p.server->on_datagram(test::seal(*p.client, space, pn++, payload, pad_to), p.now);
    }
    void send(const std::vector<wire::Frame>& frames) { send(test::encode(frames)); }
};

// An established pair whose server gets `payload` in one 1-RTT packet from
// the client: it must close with `code`, and tell the client so.
void expect_close(const Bytes& payload, CloseCode code, std::string_view reason_part) {
    ConnectionPair p;
    REQUIRE(p.handshake());
    Forger(p).send(payload);
    check_closed(*p.server, code, reason_part);
    p.run_until([&] { return p.client->state() != ConnectionState::established; });
    CHECK(p.client->close_info().by_peer);
    CHECK(close_code_name(p.client->close_info().code) == code_name(code));
}
void expect_close(const std::vector<wire::Frame>& frames, CloseCode code, std::string_view reason_part) {
    expect_close(test::encode(frames), code, reason_part);
}

// A pair stopped mid-handshake, where the client can still send in `space`
// and the server still reads it. Initial: the server read the ClientHello,
// its answer is held back (a client drops its Initial keys once it sends a
// Handshake packet, RFC 9001 §4.9.1). Handshake: the client read the
// server's flight, its Finished is held back.
void stop_mid_handshake(ConnectionPair& p, PacketSpace space) {
    auto passed = std::make_shared<int>(0);
    p.to_server = [passed](Bytes&) { return (*passed)++ == 0; };
    if (space == PacketSpace::initial) p.to_client = [](Bytes&) { return false; };
    p.start();
    p.exchange();
    REQUIRE(p.server);
    REQUIRE(p.server->state() == ConnectionState::handshaking);
    REQUIRE(Connection::Impl::of(*p.client).has_write_keys(space));
    REQUIRE(Connection::Impl::of(*p.server).has_read_keys(space));
}

// Sends `data` one way on stream `id` (a fresh one if none) and returns
// what the other side read.
Bytes transfer(ConnectionPair& p, Connection& from, Connection& to, const Bytes& data,
               std::optional<StreamId> id = std::nullopt) {
    if (!id) id = from.open_stream();
    REQUIRE(id);
    std::size_t written = 0;
    Bytes received, buf(65536);
    p.run_until([&] {
        if (written < data.size()) written += from.write(*id, std::span(data).subspan(written), true);
        while (to.poll_event()) {
        }
        while (std::size_t n = to.read(*id, buf)) received.insert(received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        return to.stream_finished(*id) || !to.is_established() || !from.is_established();
    });
    return received;
}

// Every frame the server's next datagrams carry, opened with the client's
// keys; the frames view into `keep`, which gets the datagrams.
std::vector<wire::Frame> server_output(ConnectionPair& p, std::vector<test::OpenedDatagram>& keep) {
    std::vector<wire::Frame> frames;
    Bytes buf(kMaxDatagramSize);
    while (std::size_t n = p.server->poll_datagram(buf, p.now)) {
        keep.push_back(test::open_datagram(*p.client, Bytes(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n)), p.now));
        CHECK(!keep.back().packets.empty());
        for (const auto& pkt : keep.back().packets) frames.insert(frames.end(), pkt.frames.begin(), pkt.frames.end());
    }
    return frames;
}

const std::uint8_t kData4[4] = {1, 2, 3, 4};
const std::uint8_t kData8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
const std::uint8_t kCid8[8] = {9, 8, 7, 6, 5, 4, 3, 2};
const std::uint8_t kToken16[16] = {0xaa};
const std::uint8_t kNewToken[3] = {1, 2, 3};

struct NamedFrame {
    const char* name;
    wire::Frame frame;
};

// RFC 9000 §12.4 Table 3: the frames neither Initial nor Handshake packets may carry.
std::vector<NamedFrame> frames_only_for_0rtt_and_1rtt() {
    wire::ConnectionCloseFrame app_close;
    app_close.application = true;
    app_close.error_code = 7;
    app_close.reason = "app";
    return {
        {"RESET_STREAM", wire::ResetStreamFrame{0, 1, 0}},
        {"STOP_SENDING", wire::StopSendingFrame{0, 1}},
        {"NEW_TOKEN", wire::NewTokenFrame{kNewToken}},
        {"STREAM", wire::StreamFrame{0, 0, kData4, false}},
        {"MAX_DATA", wire::MaxDataFrame{1u << 30}},
        {"MAX_STREAM_DATA", wire::MaxStreamDataFrame{0, 1u << 30}},
        {"MAX_STREAMS", wire::MaxStreamsFrame{10, true}},
        {"MAX_STREAMS", wire::MaxStreamsFrame{10, false}},
        {"DATA_BLOCKED", wire::DataBlockedFrame{0}},
        {"STREAM_DATA_BLOCKED", wire::StreamDataBlockedFrame{0, 0}},
        {"STREAMS_BLOCKED", wire::StreamsBlockedFrame{0, true}},
        {"STREAMS_BLOCKED", wire::StreamsBlockedFrame{0, false}},
        {"NEW_CONNECTION_ID", wire::NewConnectionIdFrame{1, 0, kCid8, kToken16}},
        {"RETIRE_CONNECTION_ID", wire::RetireConnectionIdFrame{0}},
        {"PATH_CHALLENGE", wire::PathChallengeFrame{{1, 2, 3, 4, 5, 6, 7, 8}}},
        {"PATH_RESPONSE", wire::PathResponseFrame{{1, 2, 3, 4, 5, 6, 7, 8}}},
        {"CONNECTION_CLOSE", app_close},
        {"HANDSHAKE_DONE", wire::HandshakeDoneFrame{}},
    };
}

}  // namespace

TEST_CASE("hostile peer: a frame in a packet type RFC 9000 12.4 does not allow it in is PROTOCOL_VIOLATION") {
    for (const PacketSpace space : {PacketSpace::initial, PacketSpace::handshake}) {
        const std::size_t pad = space == PacketSpace::initial ? kMinDatagramSize : 0;  // RFC 9000 §14.1
        for (const auto& [name, frame] : frames_only_for_0rtt_and_1rtt()) {
            CAPTURE(name);
            CAPTURE(static_cast<int>(space));
            ConnectionPair p;
            stop_mid_handshake(p, space);
            Forger(p).send(test::encode({frame}), space, pad);
            check_closed(*p.server, CloseCode::protocol_violation, std::string(name) + " frame not allowed");
        }
        // What those packets may carry leaves the handshake going.
        ConnectionPair p;
        stop_mid_handshake(p, space);
        Forger(p).send(test::encode({wire::PingFrame{}, wire::PaddingFrame{3}}), space, pad);
        CHECK(p.server->state() == ConnectionState::handshaking);
    }
}

TEST_CASE("hostile peer: frames for the wrong direction of a stream are STREAM_STATE_ERROR (RFC 9000 19.4-19.13)") {
    // Stream 3 is the server's unidirectional stream (send-only at the
    // server), stream 2 the client's (receive-only there), stream 1 a
    // server-initiated bidirectional stream the server never opened.
    SUBCASE("STREAM on the receiver's send-only stream (19.8)") {
        expect_close({wire::StreamFrame{3, 0, kData4, false}}, CloseCode::stream_state_error, "stream 3");
    }
    SUBCASE("MAX_STREAM_DATA for the receiver's receive-only stream (19.10)") {
        expect_close({wire::MaxStreamDataFrame{2, 1000}}, CloseCode::stream_state_error, "stream 2");
    }
    SUBCASE("STREAM_DATA_BLOCKED for the receiver's send-only stream (19.13)") {
        expect_close({wire::StreamDataBlockedFrame{3, 0}}, CloseCode::stream_state_error, "STREAM_DATA_BLOCKED");
    }
    SUBCASE("RESET_STREAM for the receiver's send-only stream (19.4)") {
        expect_close({wire::ResetStreamFrame{3, 1, 0}}, CloseCode::stream_state_error, "RESET_STREAM");
    }
    SUBCASE("STOP_SENDING for the receiver's receive-only stream (19.5)") {
        expect_close({wire::StopSendingFrame{2, 1}}, CloseCode::stream_state_error, "STOP_SENDING");
    }
    SUBCASE("STOP_SENDING for a stream of the receiver's it never opened (19.5)") {
        expect_close({wire::StopSendingFrame{1, 1}}, CloseCode::stream_state_error, "never opened");
    }
}

TEST_CASE("hostile peer: ACKs of packets never sent, in every space, are PROTOCOL_VIOLATION (RFC 9000 13.1)") {
    wire::AckFrame far;
    far.ranges = {{1000, 1000}};
    for (const PacketSpace space : {PacketSpace::initial, PacketSpace::handshake}) {
        CAPTURE(static_cast<int>(space));
        ConnectionPair p;
        stop_mid_handshake(p, space);
        Forger(p).send(test::encode({far}), space, space == PacketSpace::initial ? kMinDatagramSize : 0);
        check_closed(*p.server, CloseCode::protocol_violation, "never sent");
    }
    // 1-RTT: the packet the server is about to send, acknowledged before it
    // exists (the only optimistic ACK a sender that skips no numbers sees).
    ConnectionPair p;
    REQUIRE(p.handshake());
    const std::uint64_t next = Connection::Impl::of(*p.server).loss.next_packet_number(PacketSpace::application);
    wire::AckFrame ahead;
    ahead.ranges = {{next, next}};
    Forger(p).send({ahead});
    check_closed(*p.server, CloseCode::protocol_violation, "never sent");
}

TEST_CASE("hostile peer: a receiver acknowledging packets it never got is caught by a skipped packet number (RFC 9000 21.4)") {
    // The server sends 256 KB over a path that loses one datagram in five;
    // the client (the receiver) either acknowledges what arrived, or lies
    // that everything did, which would let it drive the server past what
    // the path carries.
    bool lie = false;
    SUBCASE("honest") {}
    SUBCASE("lying") { lie = true; }
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto id = p.server->open_stream();
    REQUIRE(id);
    const Bytes data(256 * 1024, 0x42);
    REQUIRE(p.server->write(*id, data, true) == data.size());
    int datagrams = 0;
    p.to_client = [&datagrams](Bytes&) { return ++datagrams % 5 != 0; };
    const auto& loss = Connection::Impl::of(*p.server).loss;
    if (lie) {
        // At least one number is skipped among the first 32 (pn_skip.hpp).
        REQUIRE(p.run_until([&] { return loss.next_packet_number(PacketSpace::application) > 40; }, std::chrono::seconds(10)));
        wire::AckFrame all;
        all.ranges = {{0, loss.next_packet_number(PacketSpace::application) - 1}};
        Forger(p).send({all});
        check_closed(*p.server, CloseCode::protocol_violation, "optimistic ACK");
        return;
    }
    Bytes got(data.size());
    std::size_t n = 0;
    REQUIRE(p.run_until([&] {
        n += p.client->read(*id, std::span(got).subspan(n));
        return p.client->stream_finished(*id);
    }));
    CHECK(n == data.size());
    CHECK(got == data);
    CHECK(p.server->is_established());
}

TEST_CASE("hostile peer: ACK ranges that underflow or run past the packet are FRAME_ENCODING_ERROR (RFC 9000 19.3.1)") {
    struct Case {
        Bytes payload;
        const char* reason;
    };
    const Case cases[] = {
        {wire_bytes({0x02, 5, 0, 0, 6}), "first range 6 exceeds largest acknowledged 5"},
        {wire_bytes({0x02, 5, 0, 1, 0, 4, 0}), "underflows below packet number 0"},   // gap: 5 - 4 - 2 < 0
        {wire_bytes({0x02, 10, 0, 1, 0, 0, 9}), "underflows below packet number 0"},  // length 9 below 8
        {cat({wire_bytes({0x02, 5, 0}), v8(kPnMax), wire_bytes({0})}), "range count"},
        {wire_bytes({0x02, 5, 0, 3, 0, 0, 0}), "truncated"},  // three ranges announced, one given
        {wire_bytes({0x03, 5, 0, 0, 0, 1, 1}), "ECN-CE count truncated"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.reason);
        expect_close(c.payload, CloseCode::frame_encoding_error, c.reason);
    }
}

TEST_CASE("hostile peer: an ACK delay of 2^62-1 neither overflows nor inflates the RTT (RFC 9002 5.3)") {
    // RFC 9000 names no error for it: the delay is capped at max_ack_delay
    // once the handshake is confirmed. The client's real ACK of the
    // server's data is dropped, the same ACK with the largest delay sent in
    // its place, under its packet number.
    ConnectionPair p;
    REQUIRE(p.handshake());
    const auto sid = p.server->open_stream();
    REQUIRE(sid);
    const Bytes data(3000, 0x42);
    REQUIRE(p.server->write(*sid, data, true) == data.size());
    std::optional<std::uint64_t> pn;
    std::optional<wire::AckFrame> real;
    p.to_server = [&](Bytes& d) {
        for (const auto& pkt : test::open_datagram(*p.server, d, p.now).packets)
            for (const auto& f : pkt.frames)
                if (const auto* a = std::get_if<wire::AckFrame>(&f); a && !pn && pkt.kind == wire::quic::PacketKind::one_rtt) {
                    pn = pkt.pn;
                    real = *a;
                }
        return !pn;
    };
    Bytes got(data.size() + 1), out(kMaxDatagramSize);
    std::size_t read = 0;
    REQUIRE(p.run_until([&] {
        while (p.client->poll_event()) {
        }
        read += p.client->read(*sid, std::span(got).subspan(read));
        return pn.has_value();
    }));
    p.to_server = nullptr;
    // The ACK arrives 50 ms late: an RTT sample of at least 50 ms, of which
    // at most max_ack_delay (25 ms) may be taken off as the peer's delay.
    p.now += std::chrono::milliseconds(50);
    const Duration srtt_before = p.server->stats(p.now).smoothed_rtt;
    const auto& r = real->ranges.front();
    Forger f(p);
    f.pn = *pn;
    f.send(cat({wire_bytes({0x02, r.largest}), v8(wire::kVarintMax), wire_bytes({0, r.largest - r.smallest})}));
    REQUIRE(p.server->is_established());
    const auto st = p.server->stats(p.now);
    MESSAGE("smoothed RTT ", srtt_before.count(), " ns before, ", st.smoothed_rtt.count(), " ns after");
    // RFC 9002 §5.3: adjusted_rtt = latest_rtt - min(ack_delay, max_ack_delay),
    // smoothed_rtt = 7/8 smoothed_rtt + 1/8 adjusted_rtt.
    const Duration latest = Connection::Impl::of(*p.server).loss.rtt().latest();
    REQUIRE(latest >= std::chrono::milliseconds(50));
    CHECK(st.smoothed_rtt == (7 * srtt_before + (latest - std::chrono::milliseconds(25))) / 8);
    // And the connection still works, both ways, byte-exact.
    p.run_until([&] {
        while (p.client->poll_event()) {
        }
        read += p.client->read(*sid, std::span(got).subspan(read));
        return p.client->stream_finished(*sid);
    });
    CHECK(read == data.size());
    CHECK(std::equal(data.begin(), data.end(), got.begin()));
    Bytes up(100'000);
    std::mt19937_64 rng(5);
    up = random_bytes(up.size(), rng);
    CHECK(transfer(p, *p.client, *p.server, up) == up);
}

TEST_CASE("hostile peer: packet-number jumps: the A.3 window edge, and nothing past 2^62-1 (RFC 9000 12.3)") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.to_client = [](Bytes&) { return false; };  // the server's ACKs name numbers the client never sent
    auto& server = Connection::Impl::of(*p.server);
    const auto& tracker = server.acks_of(PacketSpace::application);
    const std::uint64_t L = tracker.largest_received();
    Forger f(p);
    auto send_at = [&](std::uint64_t pn) {
        f.pn = pn;
        f.send({wire::PingFrame{}});
    };
    auto received = [&] { return p.server->stats(p.now).packets_received; };
    auto dropped = [&] { return p.server->stats(p.now).packets_dropped; };
    // The farthest jump a 4-byte number reaches: expected + 2^31.
    const std::uint64_t jump = L + 1 + (std::uint64_t{1} << 31);
    auto r0 = received();
    send_at(jump);
    CHECK(received() == r0 + 1);
    CHECK(tracker.largest_received() == jump);
    // Now expected - 2^31 is the window's lower edge: a number at it decodes
    // 2^32 higher (and fails authentication), one above it is a late packet.
    const auto d0 = dropped();
    r0 = received();
    send_at(L + 2);
    CHECK(dropped() == d0 + 1);
    CHECK(received() == r0);
    send_at(L + 3);
    CHECK(received() == r0 + 1);
    CHECK(tracker.largest_received() == jump);
    // 2^62-1 is the last packet number; reaching it takes 2^31 such jumps,
    // which the tracker is fast-forwarded past.
    Connection::Impl::of(*p.server).acks_of(PacketSpace::application).on_packet_received(kPnMax - 1, true, p.now);
    r0 = received();
    send_at(kPnMax);
    CHECK(received() == r0 + 1);
    std::vector<test::OpenedDatagram> keep;
    auto acked_largest = [&] {
        std::optional<std::uint64_t> largest;
        for (const auto& fr : server_output(p, keep))
            if (const auto* a = std::get_if<wire::AckFrame>(&fr)) largest = a->largest();
        return largest;
    };
    CHECK(acked_largest() == kPnMax);
    // A sender past the end (RFC 9000 §12.3 says it must have closed): its
    // packet decodes to 2^62, which is no packet number; dropped.
    const auto d1 = dropped();
    r0 = received();
    send_at(kPnMax + 1);
    CHECK(dropped() == d1 + 1);
    CHECK(received() == r0);
    CHECK(tracker.largest_received() == kPnMax);
    CHECK(p.server->is_established());
    send_at(kPnMax - 2);  // still acknowledged, in a frame that encodes
    CHECK(acked_largest() == kPnMax);
}

TEST_CASE("hostile peer: stream and CRYPTO offsets near 2^62, and final sizes (RFC 9000 4.5, 19.6, 19.8)") {
    SUBCASE("STREAM offset + length beyond 2^62-1") {
        expect_close(cat({wire_bytes({0x0e, 0}), v8(kPnMax), wire_bytes({1, 0x61})}), CloseCode::frame_encoding_error,
                     "exceeds 2^62-1");
        // Without a Length field the data runs to the packet's end.
        expect_close(cat({wire_bytes({0x0c, 0}), v8(kPnMax - 1), Bytes{0x61, 0x62}}), CloseCode::frame_encoding_error,
                     "exceeds 2^62-1");
    }
    SUBCASE("CRYPTO offset + length beyond 2^62-1, and far beyond the buffer") {
        expect_close(cat({wire_bytes({0x06}), v8(kPnMax), wire_bytes({1, 0x61})}), CloseCode::frame_encoding_error,
                     "exceeds 2^62-1");
        expect_close({wire::CryptoFrame{std::uint64_t{1} << 40, kData4}}, CloseCode::crypto_buffer_exceeded,
                     "exceeds the reassembly buffer");
    }
    SUBCASE("data beyond a known final size") {
        expect_close({wire::StreamFrame{0, 0, kData4, true}, wire::StreamFrame{0, 4, kData4, false}},
                     CloseCode::final_size_error, "final size");
    }
    SUBCASE("a FIN below data already received") {
        expect_close({wire::StreamFrame{0, 0, kData8, false}, wire::StreamFrame{0, 0, kData4, true}},
                     CloseCode::final_size_error, "final size");
    }
    SUBCASE("RESET_STREAM with a final size below the data received") {
        expect_close({wire::StreamFrame{0, 0, kData8, false}, wire::ResetStreamFrame{0, 1, 4}},
                     CloseCode::final_size_error, "final size");
    }
    SUBCASE("RESET_STREAM with a final size other than the FIN's") {
        expect_close({wire::StreamFrame{0, 0, kData4, true}, wire::ResetStreamFrame{0, 1, 8}},
                     CloseCode::final_size_error, "final size");
    }
    SUBCASE("RESET_STREAM with a final size beyond the stream's flow-control limit") {
        expect_close({wire::ResetStreamFrame{0, 1, wire::kVarintMax}}, CloseCode::flow_control_error, "limit");
    }
}

TEST_CASE("hostile peer: stream limits and flow control enforced (RFC 9000 4.1, 4.6, 19.11, 19.14)") {
    SUBCASE("MAX_STREAMS and STREAMS_BLOCKED above 2^60") {
        expect_close(cat({wire_bytes({0x12}), v8((std::uint64_t{1} << 60) + 1)}), CloseCode::frame_encoding_error,
                     "exceeds 2^60");
        expect_close(cat({wire_bytes({0x16}), v8(wire::kVarintMax)}), CloseCode::frame_encoding_error, "exceeds 2^60");
        expect_close(cat({wire_bytes({0x17}), v8((std::uint64_t{1} << 60) + 1)}), CloseCode::frame_encoding_error,
                     "exceeds 2^60");
    }
    SUBCASE("a unidirectional stream where the limit is 0") {
        expect_close({wire::StreamFrame{2, 0, kData4, false}}, CloseCode::stream_limit_error, "limit of 0");
    }
    SUBCASE("STREAM_DATA_BLOCKED naming a stream beyond the limit") {
        expect_close({wire::StreamDataBlockedFrame{4 * 1000, 0}}, CloseCode::stream_limit_error, "limit");
    }
    SUBCASE("data within each stream's limit, beyond the connection's MAX_DATA") {
        // 3 x 12 MiB against 16 MiB per stream and 32 MiB for the connection.
        constexpr std::uint64_t end = 12u << 20;
        expect_close({wire::StreamFrame{0, end - 4, kData4, false}, wire::StreamFrame{4, end - 4, kData4, false},
                      wire::StreamFrame{8, end - 4, kData4, false}},
                     CloseCode::flow_control_error, "connection data");
    }
}

TEST_CASE("hostile peer: MAX_* that decrease are ignored and *_BLOCKED lies change nothing (RFC 9000 4.1, 19.9-19.14)") {
    ConnectionPair p;
    p.client_cfg.initial_max_streams = 4;
    REQUIRE(p.handshake());
    const auto sid = p.server->open_stream();  // 1: one of the 4 the client allows
    const auto cid = p.client->open_stream();
    REQUIRE(sid);
    REQUIRE(cid);
    Forger f(p);
    f.pn = test::steal_client_pn(p, *cid);
    f.send({wire::MaxDataFrame{1}, wire::MaxStreamDataFrame{*sid, 1}, wire::MaxStreamsFrame{1, true},
            wire::DataBlockedFrame{wire::kVarintMax}, wire::StreamDataBlockedFrame{*cid, wire::kVarintMax},
            wire::StreamsBlockedFrame{std::uint64_t{1} << 60, true}});
    REQUIRE(p.server->is_established());
    // The server still has the credit it had: 300 kB on its stream arrive
    // byte-exact, and 3 more streams open (4 in all), not a fifth.
    std::mt19937_64 rng(3);
    const Bytes data = random_bytes(300'000, rng);
    CHECK(transfer(p, *p.server, *p.client, data, sid) == data);
    INFO(p.client->close_info().reason, " / ", p.server->close_info().reason);
    CHECK(p.client->is_established());
    for (int i = 0; i < 3; ++i) CHECK(p.server->open_stream());
    CHECK_FALSE(p.server->open_stream());
}

TEST_CASE("hostile peer: every frame cut short inside a packet is FRAME_ENCODING_ERROR (RFC 9000 12.4)") {
    wire::AckFrame ack;
    ack.ranges = {{0, 0}};
    wire::AckFrame ack_ecn = ack;
    ack_ecn.ecn = wire::EcnCounts{300, 0, 70000};
    wire::ConnectionCloseFrame close;
    close.error_code = 0x0a;
    close.reason = "why";
    std::vector<wire::Frame> frames{ack, ack_ecn, wire::CryptoFrame{0, kData4}, close};
    for (const auto& nf : frames_only_for_0rtt_and_1rtt()) frames.push_back(nf.frame);
    int cases = 0;
    for (const auto& frame : frames) {
        const Bytes whole = test::encode({frame});
        for (std::size_t cut = 1; cut < whole.size(); ++cut, ++cases) {
            CAPTURE(wire::frame_name(frame));
            CAPTURE(cut);
            expect_close(Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)),
                         CloseCode::frame_encoding_error, wire::frame_name(frame));
        }
    }
    MESSAGE(cases, " truncations");
}

TEST_CASE("hostile peer: huge varints in frame fields are FRAME_ENCODING_ERROR, never an allocation or a wrap") {
    const std::uint64_t big = wire::kVarintMax;
    struct Case {
        Bytes payload;
        CloseCode code;
        const char* reason;
    };
    const Case cases[] = {
        {v8(big), CloseCode::frame_encoding_error, "unknown frame type"},
        {cat({wire_bytes({0x0a, 0}), v8(big), Bytes{1, 2, 3}}), CloseCode::frame_encoding_error, "past end of packet"},
        {cat({wire_bytes({0x06, 0}), v8(big), Bytes{1}}), CloseCode::frame_encoding_error, "past end of packet"},
        {cat({wire_bytes({0x07}), v8(big), Bytes{1}}), CloseCode::frame_encoding_error, "past end of packet"},
        {cat({wire_bytes({0x1c, 0, 0}), v8(big), Bytes{'x'}}), CloseCode::frame_encoding_error, "reason length"},
        {cat({wire_bytes({0x18, 1}), v8(big)}), CloseCode::frame_encoding_error, "retire prior to"},
        {wire_bytes({0x18, 1, 0, 21}, Bytes(21 + 16, 1)), CloseCode::frame_encoding_error, "outside 1..20"},
        {wire_bytes({0x1a}, Bytes(7, 1)), CloseCode::frame_encoding_error, "past end of packet"},
        {Bytes{0x10, 0xc0, 0, 0}, CloseCode::frame_encoding_error, "truncated"},  // an 8-byte varint, 3 bytes left
        {cat({wire_bytes({0x11}), v8(big), wire_bytes({5})}), CloseCode::stream_state_error, "never opened"},
        {cat({Bytes{0xc0, 0, 0, 0, 0, 0, 0, 0x08}, wire_bytes({0, 1, 0x61})}), CloseCode::protocol_violation,
         "non-minimal"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.reason);
        expect_close(c.payload, c.code, c.reason);
    }
}

TEST_CASE("hostile peer: transport parameters RFC 9000 18.2 forbids end the handshake with TRANSPORT_PARAMETER_ERROR") {
    auto entry = [](std::uint64_t id, const Bytes& value) { return cat({wire_bytes({id, value.size()}), value}); };
    auto integer = [&](std::uint64_t id, std::uint64_t v) { return entry(id, wire_bytes({v})); };
    namespace id = wire::param_id;
    Bytes preferred(4 + 2 + 16 + 2 + 1 + 1 + 16, 0);
    preferred[24] = 1;  // connection ID length 1 (RFC 9000 Figure 22)
    struct Case {
        const char* name;
        Bytes extra;  // appended to what the encoder wrote
    };
    // Parameters ndm leaves at their defaults (not encoded), so that the
    // appended one is the only one of its id.
    auto defaults = [](wire::TransportParams& tp) {
        tp.max_udp_payload_size = wire::kDefaultUdpPayloadSize;
        tp.ack_delay_exponent = 3;
        tp.max_ack_delay_ms = 25;
        tp.active_connection_id_limit = 2;
        tp.initial_max_streams_bidi = 0;
    };
    const std::vector<Case> both = {
        {"max_udp_payload_size", integer(id::max_udp_payload_size, 1199)},
        {"ack_delay_exponent", integer(id::ack_delay_exponent, 21)},
        {"max_ack_delay", integer(id::max_ack_delay, 1u << 14)},
        // draft-ietf-quic-ack-frequency-14 §3: above max_ack_delay (25 ms by default).
        {"min_ack_delay", integer(id::min_ack_delay, 25001)},
        {"active_connection_id_limit", integer(id::active_connection_id_limit, 1)},
        {"initial_max_streams_bidi", integer(id::initial_max_streams_bidi, (std::uint64_t{1} << 60) + 1)},
        {"duplicate", integer(id::initial_max_data, 5)},  // ndm states initial_max_data already
    };
    const std::vector<Case> from_client = {
        {"sent by a client", entry(id::preferred_address, preferred)},
        {"sent by a client", entry(id::stateless_reset_token, Bytes(16, 7))},
        {"sent by a client", entry(id::original_destination_connection_id, Bytes(8, 7))},
        {"sent by a client", entry(id::retry_source_connection_id, Bytes(8, 7))},
    };
    auto append = [](const Bytes& extra) { return [extra](Bytes& b) { b.insert(b.end(), extra.begin(), extra.end()); }; };
    for (const auto* list : {&both, &from_client}) {
        for (const auto& c : *list) {
            CAPTURE(c.name);
            ConnectionPair p;
            p.client_params = defaults;
            p.client_params_bytes = append(c.extra);
            CHECK_FALSE(p.handshake());
            REQUIRE(p.server);
            CHECK(close_code_name(p.server->close_info().code) == code_name(CloseCode::transport_parameter_error));
            CHECK_MESSAGE(p.server->close_info().reason.find(c.name) != std::string::npos, p.server->close_info().reason);
            CHECK(p.client->close_info().by_peer);
            CHECK(close_code_name(p.client->close_info().code) == code_name(CloseCode::transport_parameter_error));
        }
    }
    for (const auto& c : both) {
        CAPTURE(c.name);
        ConnectionPair p;
        p.server_params = defaults;
        p.server_params_bytes = append(c.extra);
        CHECK_FALSE(p.handshake());
        CHECK(close_code_name(p.client->close_info().code) == code_name(CloseCode::transport_parameter_error));
        CHECK_FALSE(p.client->close_info().by_peer);
        CHECK_MESSAGE(p.client->close_info().reason.find(c.name) != std::string::npos, p.client->close_info().reason);
    }
}

TEST_CASE("hostile peer: 10^4 forged packets with another connection's keys or random connection IDs change nothing") {
    ConnectionPair p, other;
    other.server_cfg.seed = 99;
    REQUIRE(p.handshake());
    REQUIRE(other.handshake());
    p.run_until([] { return false; }, std::chrono::milliseconds(100));  // settle: nothing left to acknowledge
    const auto before = p.server->stats(p.now);
    const Instant deadline = p.server->next_timeout();
    const auto cid = p.server->local_cid();
    std::mt19937_64 rng(17);
    Bytes out(kMaxDatagramSize);
    for (int i = 0; i < 10'000; ++i) {
        Bytes d;
        if (i % 3 == 0) {
            // A packet another connection's client would send, readdressed
            // here: what an attacker who saw the connection ID sends.
            static const std::uint8_t chunk[64] = {};
            wire::ConnectionCloseFrame close;
            close.reason = "forged";
            d = test::seal(*other.client, PacketSpace::application, 10 + static_cast<std::uint64_t>(i),
                           test::encode({wire::StreamFrame{0, 64 * static_cast<std::uint64_t>(i), chunk, false}, close}));
            std::copy(cid.begin(), cid.end(), d.begin() + 1);
        } else if (i % 3 == 1) {
            d = random_bytes(20 + rng() % 1400, rng);  // a short header to a random connection ID
            d[0] = static_cast<std::uint8_t>(0x40 | (d[0] & 0x3f));
        } else {
            // A long header to this connection: Initial or Handshake, whose keys the server dropped.
            d = random_bytes(kMinDatagramSize, rng);
            const Bytes head{static_cast<std::uint8_t>(i % 2 ? 0xc0 : 0xe0), 0, 0, 0, 1,
                             static_cast<std::uint8_t>(cid.size())};
            std::copy(head.begin(), head.end(), d.begin());
            std::copy(cid.begin(), cid.end(), d.begin() + static_cast<std::ptrdiff_t>(head.size()));
        }
        p.server->on_datagram(d, p.now);
    }
    const auto after = p.server->stats(p.now);
    CHECK(p.server->is_established());
    CHECK(after.packets_dropped >= before.packets_dropped + 10'000);  // a datagram may hold several
    CHECK(after.packets_received == before.packets_received);
    CHECK(after.bytes_received == before.bytes_received);
    CHECK(after.stream_bytes_received == before.stream_bytes_received);
    CHECK(p.server->poll_datagram(out, p.now) == 0);  // no answer to any of them
    CHECK(p.server->next_timeout() == deadline);       // and no timer moved
    std::mt19937_64 data_rng(4);
    const Bytes data = random_bytes(500'000, data_rng);
    CHECK(transfer(p, *p.client, *p.server, data) == data);
}

TEST_CASE("hostile peer: 10^4 PINGs get at most one bounded ACK each, 10^4 PADDING-only packets none (RFC 9000 13.2)") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.run_until([] { return false; }, std::chrono::milliseconds(100));
    const auto& tracker = Connection::Impl::of(*p.server).acks_of(PacketSpace::application);
    Forger f(p);
    std::vector<test::OpenedDatagram> keep;
    std::size_t datagrams = 0, bytes = 0, max_ranges = 0;
    // Every other number: each PING leaves a gap, so each is acknowledged at once.
    for (int i = 0; i < 10'000; ++i, f.pn += 1) {
        f.send({wire::PingFrame{}});
        keep.clear();
        for (const auto& fr : server_output(p, keep))
            if (const auto* a = std::get_if<wire::AckFrame>(&fr)) max_ranges = std::max(max_ranges, a->ranges.size());
        datagrams += keep.size();
        for (const auto& d : keep) bytes += d.bytes.size();
    }
    MESSAGE(datagrams, " ACK datagrams, ", bytes, " bytes, at most ", max_ranges, " ranges; ",
            tracker.received().interval_count(), " intervals tracked");
    CHECK(datagrams >= 1);
    CHECK(datagrams <= 10'000);
    CHECK(max_ranges <= wire::kMaxAckRanges);
    CHECK(bytes <= 10'000 * 400);
    CHECK(tracker.received().interval_count() <= 256);  // the tracker's cap (ack_tracker.cpp)
    // RFC 9000 §13.2.1: no non-ack-eliciting packet answers a non-ack-eliciting one.
    keep.clear();
    for (int i = 0; i < 10'000; ++i) f.send(test::encode({wire::PaddingFrame{20}}));
    CHECK(server_output(p, keep).empty());
    CHECK(p.server->is_established());
}

TEST_CASE("ack ranges: ConnectionConfig::max_ack_ranges bounds every ACK frame (the newest kept, RFC 9000 13.2.4)") {
    for (const std::size_t cap : {std::size_t{1}, std::size_t{4}, std::size_t{32}}) {
        CAPTURE(cap);
        ConnectionPair p;
        p.server_cfg.max_ack_ranges = cap;
        REQUIRE(p.handshake());
        p.run_until([] { return false; }, std::chrono::milliseconds(100));
        Forger f(p);
        std::vector<test::OpenedDatagram> keep;
        std::size_t most = 0;
        std::uint64_t newest = 0;
        for (int i = 0; i < 200; ++i, f.pn += 1) {  // a gap after every packet
            f.send({wire::PingFrame{}});
            keep.clear();
            for (const auto& fr : server_output(p, keep)) {
                if (const auto* a = std::get_if<wire::AckFrame>(&fr)) {
                    most = std::max(most, a->ranges.size());
                    newest = std::max(newest, a->ranges.front().largest);
                }
            }
        }
        CHECK(most == cap);  // 200 gaps: every cap is reached, none exceeded
        CHECK(newest + 2 == f.pn);  // the newest packet is always among them
    }
    for (const std::size_t n : {std::size_t{0}, std::size_t{33}}) {
        ConnectionPair p;
        p.client_cfg.max_ack_ranges = n;
        CHECK_THROWS_WITH_AS(p.start(), doctest::Contains("max ACK ranges"), std::invalid_argument);
    }
}

TEST_CASE("hostile peer: a NEW_CONNECTION_ID flood retiring every ID closes once retirements pile up (RFC 9000 5.1.2)") {
    // Each frame is within the limit (it retires the one before), but
    // each retirement is a RETIRE_CONNECTION_ID the server must send and
    // see acknowledged; unacknowledged ones are capped at twice the limit.
    ConnectionPair p;
    REQUIRE(p.handshake());
    Forger f(p);
    int sent = 0;
    // After the IDs the real client issued itself (RFC 9000 §5.1.1).
    const std::uint64_t first = Connection::Impl::of(*p.client).local_cids.next_sequence();
    for (std::uint64_t seq = first; seq <= 10'000 && p.server->is_established(); ++seq, ++sent) {
        std::array<std::uint8_t, 8> cid{};
        for (std::size_t k = 0; k < 8; ++k) cid[k] = static_cast<std::uint8_t>(seq >> (8 * k));
        cid[7] = 0xee;
        f.send({wire::NewConnectionIdFrame{seq, seq, cid, kToken16}});
    }
    MESSAGE("closed after ", sent, " frames");
    check_closed(*p.server, CloseCode::connection_id_limit_error, "retirements unacknowledged");
    CHECK(sent <= 10);
}

TEST_CASE("hostile peer: a PATH_CHALLENGE flood is answered with one PATH_RESPONSE, the latest (RFC 9000 8.2.2)") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.run_until([] { return false; }, std::chrono::milliseconds(100));
    Forger f(p);
    std::array<std::uint8_t, 8> last{};
    for (std::uint32_t k = 0; k < 100; ++k) {  // 100 packets of 100 challenges
        std::vector<wire::Frame> frames;
        for (std::uint32_t j = 0; j < 100; ++j) {
            const std::uint32_t n = k * 100 + j;
            last = {static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8), 0xc4, 0, 0, 0, 0, 1};
            frames.emplace_back(wire::PathChallengeFrame{last});
        }
        f.send(frames);
    }
    std::vector<test::OpenedDatagram> keep;
    std::vector<wire::PathResponseFrame> responses;
    for (const auto& fr : server_output(p, keep))
        if (const auto* r = std::get_if<wire::PathResponseFrame>(&fr)) responses.push_back(*r);
    REQUIRE(responses.size() == 1);
    CHECK(test::frames_equal(responses.front(), wire::PathResponseFrame{last}));
    CHECK(keep.size() <= 2);  // the response (padded to 1200 bytes) and the ACK
    CHECK(p.server->is_established());
}

TEST_CASE("hostile peer: the tools' test request: cc_options and malformed JSON are refused with a reason") {
    using J = nlohmann::json;
    auto request = [](const std::function<void(J&)>& edit) {
        tools::TestParams t;
        t.cc = "cubic";
        const Bytes b = tools::encode(t);
        J j = J::parse(b.begin(), b.end());
        edit(j);
        const std::string s = j.dump();
        return Bytes(s.begin(), s.end());
    };
    auto refusal = [](const Bytes& blob) -> std::string {
        try {
            (void)tools::decode_test_params(blob);
            return {};
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
    };
    auto text = [](const std::string& s) { return Bytes(s.begin(), s.end()); };
    CHECK(refusal(request([](J&) {})).empty());
    struct Case {
        Bytes blob;
        const char* why;
    };
    const Case cases[] = {
        {request([](J& j) { j["cc_options"] = std::string(tools::kMaxCcOptions + 1, 'a'); }), "cc_options longer than 256"},
        {request([](J& j) { j["cc_options"] = 7; }), "cc_options is not a string"},
        {request([](J& j) { j["cc_options"] = J::array(); }), "cc_options is not a string"},
        {request([](J& j) { j["cc_options"] = "no_such_option=1"; }), "no_such_option"},
        {request([](J& j) {
             j["cc"] = "bbr";
             j["cc_options"] = "beta=1e999";
         }),
         "beta"},
        {request([](J& j) {
             j["cc"] = "bbr";
             j["cc_options"] = "beta=nan";
         }),
         "beta"},
        {request([](J& j) { j["cc_options"] = std::string("\x1b[2J=1"); }), "\x1b[2J"},
        {text(""), "malformed test parameters"},
        {text("[]"), "malformed test parameters"},
        {text("\"ndm-perf/1\""), "malformed test parameters"},
        {text("{\"magic\":"), "malformed test parameters"},
        {text(std::string(256, '[') + std::string(256, ']')), "malformed test parameters"},  // as deep as 512 bytes nest
        {text("{\"magic\":\"ndm-perf/1\",\"x\":NaN}"), "malformed test parameters"},
        {Bytes{0xff, 0xfe, 0x7b, 0x7d}, "malformed test parameters"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.why);
        const std::string why = refusal(c.blob);
        CHECK_MESSAGE(why.find(c.why) != std::string::npos, why);
    }
}
