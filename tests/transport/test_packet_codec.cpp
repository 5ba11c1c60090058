// Protected QUIC v1 packets (src/wire/packet_codec): RFC 9001 A.2 and
// A.3 built byte for byte through PacketBuilder, build and open round trips
// at every level and suite, coalescing, padding, tampering, wrong keys,
// packet number expansion, reserved bits, key update and short packets.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crypto/hkdf.hpp"
#include "crypto/key_phase.hpp"
#include "crypto/packet_protection.hpp"
#include "crypto_test_util.hpp"
#include "wire/packet_codec.hpp"

using ndm::crypto::QuicVersion;

using namespace std::chrono_literals;
using ndm::Instant;
using ndm::crypto::CipherSuite;
using ndm::crypto::DirectionKeys;
using ndm::crypto::OneRttKeys;
using ndm::crypto::Secret;
using ndm::test::hex;
using ndm::test::unhex;
using ndm::wire::ConnectionId;
using namespace ndm::wire::quic;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr auto kPto = 100ms;
const Bytes kCid = unhex("0102030405060708");  // both directions' DCID here
const Bytes kFrames = {0x06, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef};  // CRYPTO, offset 0, 4 bytes

Secret secret(CipherSuite suite, std::uint8_t fill) {
    Secret s;
    s.size = static_cast<std::uint8_t>(ndm::crypto::hash_size(suite));
    std::fill_n(s.bytes.begin(), s.size, fill);
    return s;
}

DirectionKeys direction_keys(CipherSuite suite, std::uint8_t fill) {
    return DirectionKeys(ndm::crypto::derive_packet_keys(suite, secret(suite, fill), QuicVersion::v1));
}

struct OneRttPair {
    explicit OneRttPair(CipherSuite suite)
        : client(suite, QuicVersion::v1, secret(suite, 2), secret(suite, 1)),
          server(suite, QuicVersion::v1, secret(suite, 1), secret(suite, 2)) {}
    OneRttKeys client;  // reads the server's secret, writes its own
    OneRttKeys server;
};

LongHeader long_header(LongType type, std::uint64_t pn, std::size_t pn_length = 2) {
    LongHeader h;
    h.type = type;
    h.dcid = ConnectionId::from(kCid);
    h.scid = ConnectionId::from(kCid);
    h.packet_number = pn;
    h.pn_length = pn_length;
    return h;
}

ShortHeader short_header(std::uint64_t pn, std::size_t pn_length = 2) {
    ShortHeader h;
    h.dcid = ConnectionId::from(kCid);
    h.packet_number = pn;
    h.pn_length = pn_length;
    return h;
}

// Writes `frames` into the builder's payload space; false if they do not fit.
bool put(PacketBuilder& b, const Bytes& frames) {
    const auto space = b.payload_space();
    if (frames.size() > space.size()) return false;
    std::copy(frames.begin(), frames.end(), space.begin());
    return true;
}

// One packet alone in a datagram, frames kFrames.
template <class Header, class Keys>
Bytes build(const Header& h, Keys& keys, std::size_t pad_to = 0) {
    Bytes d(1500);
    PacketBuilder b(d, 0, h);
    REQUIRE(b.ok());
    REQUIRE(put(b, kFrames));
    const std::size_t n = b.finish(kFrames.size(), keys, pad_to);
    REQUIRE(n != 0);
    d.resize(n);
    return d;
}

// Appends a packet with frames kFrames at d[pos], padded so that the
// datagram reaches pad_to; pos moves past it.
template <class Header, class Keys>
void append(Bytes& d, std::size_t& pos, const Header& h, Keys& keys, std::size_t pad_to = 0) {
    PacketBuilder b(d, pos, h);
    REQUIRE(put(b, kFrames));
    const std::size_t n = b.finish(kFrames.size(), keys, pad_to);
    REQUIRE(n != 0);
    pos += n;
}

// The first packet of the datagram, split as the connection does it.
std::optional<PacketView> first_packet(const Bytes& datagram) {
    DatagramPackets split(datagram, kCid.size());
    PacketView v;
    if (!split.next(v)) return std::nullopt;
    return v;
}

OpenError open_first(Bytes& datagram, DirectionKeys& keys, std::optional<std::uint64_t> largest, OpenedPacket& out) {
    const auto v = first_packet(datagram);
    if (!v) return OpenError::header;
    return open_packet(datagram, *v, &keys, largest, out);
}

OpenError open_first(Bytes& datagram, OneRttKeys& keys, std::optional<std::uint64_t> largest, OpenedPacket& out) {
    const auto v = first_packet(datagram);
    if (!v) return OpenError::header;
    return open_packet(datagram, *v, &keys, largest, Instant{}, kPto, out);
}

// The payload starts with kFrames; the rest is PADDING.
void check_frames(const OpenedPacket& p) {
    REQUIRE(p.payload.size() >= kFrames.size());
    CHECK(hex(p.payload.first(kFrames.size())) == hex(kFrames));
    CHECK(std::all_of(p.payload.begin() + static_cast<std::ptrdiff_t>(kFrames.size()), p.payload.end(),
                      [](std::uint8_t b) { return b == 0; }));
}

// Flips each bit of `packet` in turn: no copy opens, and nothing throws.
template <class Open>
void every_flip_fails(const Bytes& packet, Open open) {
    for (std::size_t i = 0; i < packet.size() * 8; ++i) {
        CAPTURE(i);
        Bytes d = packet;
        d[i / 8] ^= static_cast<std::uint8_t>(1u << (i % 8));
        OpenError e = OpenError::none;
        CHECK_NOTHROW(e = open(d));
        CHECK(e != OpenError::none);
    }
}

}  // namespace

TEST_CASE("packet codec: the client Initial of RFC 9001 A.2 is built byte for byte, padded to 1200 bytes") {
    auto client = ndm::crypto::initial_keys(ndm::test::rfc9001_dcid(), false, QuicVersion::v1);
    Bytes payload = ndm::test::rfc9001_client_initial_payload();
    // The CRYPTO frame alone; finish() adds the PADDING A.2 shows.
    while (payload.back() == 0) payload.pop_back();
    LongHeader h;
    h.dcid = ConnectionId::from(ndm::test::rfc9001_dcid());
    h.packet_number = 2;
    h.pn_length = 4;
    CHECK(packet_overhead(h) == 22 + ndm::crypto::kAeadTagSize);
    Bytes d(1500);
    PacketBuilder b(d, 0, h);
    REQUIRE(put(b, payload));
    const std::size_t n = b.finish(payload.size(), client.write, kMinInitialDatagramSize);
    REQUIRE(n == 1200);
    d.resize(n);
    CHECK(hex(d) == hex(unhex(ndm::test::kRfc9001ClientInitialProtected)));

    auto server = ndm::crypto::initial_keys(ndm::test::rfc9001_dcid(), true, QuicVersion::v1);
    OpenedPacket p;
    REQUIRE(open_first(d, server.read, std::nullopt, p) == OpenError::none);
    CHECK(p.kind == PacketKind::initial);
    CHECK(p.packet_number == 2);
    CHECK(hex(p.payload) == hex(ndm::test::rfc9001_client_initial_payload()));
}

TEST_CASE("packet codec: the server Initial of RFC 9001 A.3 is built byte for byte and opened by the client") {
    auto server = ndm::crypto::initial_keys(ndm::test::rfc9001_dcid(), true, QuicVersion::v1);
    const Bytes payload = ndm::test::rfc9001_server_initial_payload();
    LongHeader h;
    h.scid = ConnectionId::from(unhex("f067a5502a4262b5"));
    h.packet_number = 1;
    h.pn_length = 2;
    Bytes d(1500);
    PacketBuilder b(d, 0, h);
    REQUIRE(put(b, payload));
    const std::size_t n = b.finish(payload.size(), server.write);
    REQUIRE(n != 0);
    d.resize(n);
    CHECK(hex(d) == hex(unhex(ndm::test::kRfc9001ServerInitialProtected)));

    auto client = ndm::crypto::initial_keys(ndm::test::rfc9001_dcid(), false, QuicVersion::v1);
    OpenedPacket p;
    REQUIRE(open_first(d, client.read, std::nullopt, p) == OpenError::none);
    CHECK(p.packet_number == 1);
    CHECK(hex(p.scid) == "f067a5502a4262b5");
    CHECK(p.dcid.empty());
    CHECK(hex(p.payload) == hex(payload));
}

TEST_CASE("packet codec: Initial and Handshake packets round trip, fields and a token reported") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    LongHeader initial = long_header(LongType::initial, 7);
    const Bytes token = {1, 2, 3};
    initial.token = token;
    Bytes d = build(initial, client.write);
    CHECK(d.size() == packet_overhead(initial) + kFrames.size());
    OpenedPacket p;
    REQUIRE(open_first(d, server.read, std::nullopt, p) == OpenError::none);
    CHECK(p.kind == PacketKind::initial);
    CHECK(p.version == kVersion1);
    CHECK(p.packet_number == 7);
    CHECK(hex(p.token) == "010203");
    CHECK(hex(p.dcid) == hex(kCid));
    check_frames(p);

    for (const CipherSuite suite :
         {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384, CipherSuite::chacha20_poly1305_sha256}) {
        CAPTURE(ndm::crypto::to_string(suite));
        auto tx = direction_keys(suite, 9);
        auto rx = direction_keys(suite, 9);
        Bytes hs = build(long_header(LongType::handshake, 300), tx);
        REQUIRE(open_first(hs, rx, 299, p) == OpenError::none);
        CHECK(p.kind == PacketKind::handshake);
        CHECK(p.packet_number == 300);
        CHECK(p.token.empty());
        check_frames(p);
    }
}

TEST_CASE("packet codec: 1-RTT packets round trip with each suite, spin and key phase reported") {
    for (const CipherSuite suite :
         {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384, CipherSuite::chacha20_poly1305_sha256}) {
        CAPTURE(ndm::crypto::to_string(suite));
        OneRttPair keys(suite);
        ShortHeader h = short_header(42);
        h.spin = true;
        h.key_phase = true;  // replaced by the keys' phase, 0 before any update
        Bytes d = build(h, keys.client);
        CHECK(d.size() == packet_overhead(h) + kFrames.size());
        OpenedPacket p;
        REQUIRE(open_first(d, keys.server, 41, p) == OpenError::none);
        CHECK(p.kind == PacketKind::one_rtt);
        CHECK(p.packet_number == 42);
        CHECK(p.spin);
        CHECK_FALSE(p.key_phase);
        CHECK(hex(p.dcid) == hex(kCid));
        check_frames(p);
    }
}

TEST_CASE("packet codec: Initial, Handshake and 1-RTT coalesced in one padded datagram, split and each opened") {
    auto init_tx = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto init_rx = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    auto hs_tx = direction_keys(CipherSuite::aes256_gcm_sha384, 3);
    auto hs_rx = direction_keys(CipherSuite::aes256_gcm_sha384, 3);
    OneRttPair one_rtt(CipherSuite::chacha20_poly1305_sha256);

    Bytes d(1500);
    std::size_t pos = 0;
    append(d, pos, long_header(LongType::initial, 0), init_tx.write);
    append(d, pos, long_header(LongType::handshake, 1), hs_tx);
    append(d, pos, short_header(2), one_rtt.client, kMinInitialDatagramSize);
    REQUIRE(pos == kMinInitialDatagramSize);
    d.resize(pos);

    DatagramPackets split(std::span<const std::uint8_t>(d), kCid.size());
    PacketView v;
    OpenedPacket p;
    REQUIRE(split.next(v));
    REQUIRE(open_packet(d, v, &init_rx.read, std::nullopt, p) == OpenError::none);
    CHECK(p.kind == PacketKind::initial);
    check_frames(p);
    REQUIRE(split.next(v));
    REQUIRE(open_packet(d, v, &hs_rx, std::nullopt, p) == OpenError::none);
    CHECK(p.kind == PacketKind::handshake);
    CHECK(p.packet_number == 1);
    check_frames(p);
    REQUIRE(split.next(v));
    REQUIRE(open_packet(d, v, &one_rtt.server, std::nullopt, Instant{}, kPto, p) == OpenError::none);
    CHECK(p.kind == PacketKind::one_rtt);
    CHECK(p.packet_number == 2);
    check_frames(p);  // the datagram's padding is this packet's PADDING
    CHECK(v.offset + v.packet.size() == kMinInitialDatagramSize);
    CHECK_FALSE(split.next(v));
    CHECK(split.error() == HeaderError::none);
}

TEST_CASE("packet codec: coalesced packets open from the datagram as received into another buffer, which is left unchanged") {
    auto init_tx = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto init_rx = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    OneRttPair one_rtt(CipherSuite::aes128_gcm_sha256);
    Bytes d(1500);
    std::size_t pos = 0;
    append(d, pos, long_header(LongType::initial, 0), init_tx.write);
    append(d, pos, short_header(1), one_rtt.client, kMinInitialDatagramSize);
    d.resize(pos);
    const Bytes received = d;
    Bytes opened(d.size() + 7, 0xee);  // larger than the datagram is fine

    DatagramPackets split(std::span<const std::uint8_t>(d), kCid.size());
    PacketView v;
    OpenedPacket p;
    REQUIRE(split.next(v));
    REQUIRE(open_packet(std::span<const std::uint8_t>(d), opened, v, &init_rx.read, std::nullopt, p) ==
            OpenError::none);
    CHECK(p.kind == PacketKind::initial);
    // The plaintext lies in `opened`, at the packet's place, behind its
    // unprotected header (long, Initial, 2-byte packet number: 0xc1).
    CHECK(p.payload.data() > opened.data() + v.offset);
    CHECK(p.payload.data() + p.payload.size() + 16 == opened.data() + v.offset + v.packet.size());
    CHECK(opened[v.offset] == 0xc1);
    check_frames(p);
    REQUIRE(split.next(v));
    REQUIRE(open_packet(std::span<const std::uint8_t>(d), opened, v, &one_rtt.server, std::nullopt, Instant{}, kPto,
                        p) == OpenError::none);
    CHECK(p.packet_number == 1);
    CHECK(p.payload.data() > opened.data() + v.offset);
    CHECK(opened[v.offset] == 0x41);  // short header, key phase 0, 2-byte packet number
    check_frames(p);
    CHECK(d == received);  // nothing opened in place
    CHECK(std::all_of(opened.begin() + static_cast<std::ptrdiff_t>(d.size()), opened.end(),
                      [](std::uint8_t b) { return b == 0xee; }));

    // A buffer smaller than the datagram opens nothing.
    Bytes small(d.size() - 1);
    DatagramPackets again(std::span<const std::uint8_t>(d), kCid.size());
    REQUIRE(again.next(v));
    CHECK(open_packet(std::span<const std::uint8_t>(d), small, v, &init_rx.read, std::nullopt, p) == OpenError::header);
}

TEST_CASE("packet codec: an Initial alone is padded with PADDING to a 1200-byte datagram (RFC 9000 §14.1)") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    Bytes d = build(long_header(LongType::initial, 0), client.write, kMinInitialDatagramSize);
    CHECK(d.size() == 1200);
    OpenedPacket p;
    REQUIRE(open_first(d, server.read, std::nullopt, p) == OpenError::none);
    CHECK(p.payload.size() == 1200 - packet_overhead(long_header(LongType::initial, 0)));
    check_frames(p);
}

TEST_CASE("packet codec: a flipped bit anywhere in a packet fails to open and never throws") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    OpenedPacket p;
    every_flip_fails(build(long_header(LongType::initial, 5), client.write),
                     [&](Bytes& d) { return open_first(d, server.read, std::nullopt, p); });
    OneRttPair keys(CipherSuite::aes128_gcm_sha256);
    every_flip_fails(build(short_header(5, 1), keys.client),
                     [&](Bytes& d) { return open_first(d, keys.server, std::nullopt, p); });
    CHECK(keys.server.updates() == 0);  // no forged key phase bit started an update
}

TEST_CASE("packet codec: wrong keys give decrypt, missing or other-level keys give no_keys") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto other = ndm::crypto::initial_keys(unhex("0807060504030201"), true, QuicVersion::v1);
    Bytes d = build(long_header(LongType::initial, 1), client.write);
    OpenedPacket p;
    Bytes copy = d;
    CHECK(open_first(copy, other.read, std::nullopt, p) == OpenError::decrypt);
    copy = d;
    CHECK(open_first(copy, client.read, std::nullopt, p) == OpenError::decrypt);  // the other direction
    const auto v = first_packet(d);
    REQUIRE(v);
    CHECK(open_packet(d, *v, static_cast<DirectionKeys*>(nullptr), std::nullopt, p) == OpenError::no_keys);
    OneRttPair one_rtt(CipherSuite::aes128_gcm_sha256);
    CHECK(open_packet(d, *v, &one_rtt.server, std::nullopt, Instant{}, kPto, p) == OpenError::no_keys);

    Bytes s = build(short_header(1), one_rtt.client);
    const auto sv = first_packet(s);
    REQUIRE(sv);
    CHECK(open_packet(s, *sv, &client.read, std::nullopt, p) == OpenError::no_keys);
    OneRttPair stranger(CipherSuite::aes128_gcm_sha256);
    CHECK(open_first(s, stranger.client, std::nullopt, p) == OpenError::decrypt);
}

TEST_CASE("packet codec: a 2-byte packet number expands across its wrap (RFC 9000 §A.3)") {
    OneRttPair keys(CipherSuite::aes128_gcm_sha256);
    // 0x10001 sent as 0x0001 after 0xfffe: the nonce needs the full number.
    Bytes d = build(short_header(0x10001, 2), keys.client);
    OpenedPacket p;
    REQUIRE(open_first(d, keys.server, 0xfffe, p) == OpenError::none);
    CHECK(p.packet_number == 0x10001);

    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    Bytes l = build(long_header(LongType::initial, 0x1fffe, 2), client.write);
    REQUIRE(open_first(l, server.read, 0x20001, p) == OpenError::none);
    CHECK(p.packet_number == 0x1fffe);
}

TEST_CASE("packet codec: reserved bits set under protection are reported after decryption (RFC 9000 §17.2, §17.3.1)") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kCid, true, QuicVersion::v1);
    OneRttPair keys(CipherSuite::chacha20_poly1305_sha256);
    for (const std::uint8_t bits : {std::uint8_t{0x04}, std::uint8_t{0x08}}) {
        Bytes d(200);
        PacketBuilder b(d, 0, long_header(LongType::initial, 3));
        REQUIRE(put(b, kFrames));
        d[0] |= bits;  // the header is already written; protection covers these bits
        d.resize(b.finish(kFrames.size(), client.write));
        OpenedPacket p;
        CHECK(open_first(d, server.read, std::nullopt, p) == OpenError::reserved_bits);
    }
    for (const std::uint8_t bits : {std::uint8_t{0x08}, std::uint8_t{0x10}}) {
        Bytes d(200);
        PacketBuilder b(d, 0, short_header(3));
        REQUIRE(put(b, kFrames));
        d[0] |= bits;
        d.resize(b.finish(kFrames.size(), keys.client));
        OpenedPacket p;
        CHECK(open_first(d, keys.server, std::nullopt, p) == OpenError::reserved_bits);
    }
}

TEST_CASE("packet codec: a key update is followed and a new phase below the current one is KEY_UPDATE_ERROR") {
    OneRttPair keys(CipherSuite::aes128_gcm_sha256);
    OpenedPacket p;
    Bytes d = build(short_header(5), keys.client);
    REQUIRE(open_first(d, keys.server, std::nullopt, p) == OpenError::none);
    keys.client.on_packet_acked(5);
    REQUIRE(keys.client.initiate_update());
    Bytes updated = build(short_header(6), keys.client);
    Bytes below = build(short_header(3), keys.client);
    REQUIRE(open_first(below, keys.server, 5, p) == OpenError::key_update_error);
    REQUIRE(open_first(updated, keys.server, 5, p) == OpenError::none);
    CHECK(p.key_phase);
    CHECK(keys.server.key_phase());  // answered (RFC 9001 §6.2)
}

TEST_CASE("packet codec: short payloads are padded for the sample, a truncated sample is a header error") {
    OneRttPair keys(CipherSuite::aes128_gcm_sha256);
    Bytes d(100);
    PacketBuilder b(d, 0, short_header(9, 1));
    b.payload_space()[0] = 0x01;  // one PING
    const std::size_t n = b.finish(1, keys.client);
    REQUIRE(n == 1 + kCid.size() + ndm::crypto::kMinBytesAfterPnOffset);  // pn + 3 bytes + tag
    d.resize(n);
    OpenedPacket p;
    Bytes opened = d;  // opening decrypts in place
    REQUIRE(open_first(opened, keys.server, std::nullopt, p) == OpenError::none);
    CHECK(p.payload.size() == 3);  // the PING and 2 bytes of PADDING

    // One byte short of the sample: the splitter refuses it, and open_packet
    // on a view cut that short refuses it without reading past.
    Bytes cut(d.begin(), d.end() - 1);
    PacketView v;
    CHECK(parse_packet_header(cut, kCid.size(), v) == HeaderError::length_too_short);
    REQUIRE(parse_packet_header(d, kCid.size(), v) == HeaderError::none);
    v.packet = v.packet.first(v.packet.size() - 1);
    CHECK(open_packet(d, v, &keys.server, std::nullopt, Instant{}, kPto, p) == OpenError::header);
    // A view of another buffer is refused too.
    Bytes copy = d;
    REQUIRE(parse_packet_header(copy, kCid.size(), v) == HeaderError::none);
    CHECK(open_packet(d, v, &keys.server, std::nullopt, Instant{}, kPto, p) == OpenError::header);
}

TEST_CASE("packet codec: finish refuses what does not fit, a second finish and 1-RTT keys on a long header") {
    auto client = ndm::crypto::initial_keys(kCid, false, QuicVersion::v1);
    OneRttPair keys(CipherSuite::aes128_gcm_sha256);
    Bytes d(100);
    {
        PacketBuilder b(d, 0, long_header(LongType::initial, 0));
        CHECK(b.payload_space().size() == 100 - packet_overhead(long_header(LongType::initial, 0)));
        CHECK(b.finish(b.payload_space().size() + 1, client.write) == 0);
        CHECK(b.payload_space().empty());
        CHECK(b.finish(1, client.write) == 0);
    }
    {
        PacketBuilder b(d, 0, long_header(LongType::initial, 0));
        CHECK(b.finish(1, client.write, 101) == 0);  // padding past the buffer
    }
    {
        PacketBuilder b(d, 0, long_header(LongType::handshake, 0));
        CHECK(b.finish(1, keys.client) == 0);
    }
    {
        PacketBuilder b(d, 90, long_header(LongType::initial, 0));  // the header does not fit
        CHECK_FALSE(b.ok());
        CHECK(b.finish(0, client.write) == 0);
        PacketBuilder past(d, 101, short_header(0));
        CHECK_FALSE(past.ok());
    }
    {
        LongHeader h = long_header(LongType::initial, 0);
        h.pn_length = 5;
        PacketBuilder b(d, 0, h);
        CHECK_FALSE(b.ok());
    }
}
