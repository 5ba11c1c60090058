// QUIC v1 headers (src/wire/quic_header, RFC 9000 §17, §12.2): the
// RFC 9001 Appendix A headers parsed and written back byte for byte, the A.4
// Retry, coalesced datagrams, every malformed case and truncation, Version
// Negotiation, and packets protected and opened through src/crypto.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "crypto/packet_protection.hpp"
#include "crypto_test_util.hpp"
#include "wire/quic_header.hpp"

using ndm::crypto::QuicVersion;

using ndm::test::hex;
using ndm::test::unhex;
using ndm::wire::ConnectionId;
using ndm::wire::Writer;
using namespace ndm::wire::quic;

namespace {

using Bytes = std::vector<std::uint8_t>;

const Bytes& kClientDcid = ndm::test::rfc9001_dcid();
// RFC 9001 A.2 and A.3: the unprotected headers; A.4: the Retry packet.
const Bytes kClientInitialHeader = unhex(ndm::test::kRfc9001ClientInitialHeader);
const Bytes kServerInitialHeader = unhex(ndm::test::kRfc9001ServerInitialHeader);
const Bytes kServerScid = unhex("f067a5502a4262b5");
const Bytes kRetry = unhex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba");
const Bytes kShortDcid = unhex("0102030405060708");

ConnectionId cid(const Bytes& b) { return ConnectionId::from(b); }

// A long-header packet with `payload` zero bytes of plaintext and 16 bytes of
// tag room, its Length patched: what the splitter sees (unprotected).
Bytes long_packet(LongType type, const Bytes& dcid, std::size_t payload, std::uint64_t pn = 0) {
    Bytes out(64 + dcid.size() + payload);
    Writer w(out);
    LongHeader h;
    h.type = type;
    h.dcid = cid(dcid);
    h.scid = cid(kServerScid);
    h.packet_number = pn;
    h.pn_length = 2;
    HeaderLayout layout;
    REQUIRE(write_long_header(w, h, layout));
    out.resize(layout.payload_offset + payload + ndm::crypto::kAeadTagSize);
    REQUIRE(finish_long_header(out, layout));
    return out;
}

ShortHeader short_header(std::uint64_t pn, std::size_t pn_length, bool key_phase) {
    ShortHeader h;
    h.dcid = cid(kShortDcid);
    h.packet_number = pn;
    h.pn_length = pn_length;
    h.key_phase = key_phase;
    return h;
}

Bytes short_packet(const Bytes& dcid, std::size_t payload) {
    Bytes out(1 + dcid.size() + 4 + payload + ndm::crypto::kAeadTagSize);
    Writer w(out);
    ShortHeader h = short_header(0, 1, false);
    h.dcid = cid(dcid);
    HeaderLayout layout;
    REQUIRE(write_short_header(w, h, layout));
    out.resize(layout.payload_offset + payload + ndm::crypto::kAeadTagSize);
    return out;
}

Bytes concat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// The header bytes followed by `length - pn_length` bytes, so that the Length
// field is consistent with the datagram.
Bytes with_body(const Bytes& header, std::size_t body) {
    Bytes out = header;
    out.resize(header.size() + body, 0);
    return out;
}

LongHeader initial_header(const Bytes& dcid, const Bytes& scid, std::uint64_t pn, std::size_t pn_length) {
    LongHeader h;
    h.dcid = cid(dcid);
    h.scid = cid(scid);
    h.packet_number = pn;
    h.pn_length = pn_length;
    return h;
}

// A packet of `size` bytes with header h written and its Length patched.
Bytes written(const LongHeader& h, std::size_t size, HeaderLayout& layout) {
    Bytes out(size);
    Writer w(out);
    REQUIRE(write_long_header(w, h, layout));
    REQUIRE(finish_long_header(out, layout));
    return out;
}

HeaderError parse(const Bytes& data, PacketView& out) { return parse_packet_header(data, kShortDcid.size(), out); }

}  // namespace

TEST_CASE("quic header: the client Initial of RFC 9001 A.2 parses and is written back byte for byte") {
    const Bytes datagram = with_body(kClientInitialHeader, 0x049e - 4);
    PacketView v;
    REQUIRE(parse(datagram, v) == HeaderError::none);
    CHECK(v.kind == PacketKind::initial);
    CHECK(v.version == kVersion1);
    CHECK(hex(v.dcid) == "8394c8f03e515708");
    CHECK(v.scid.empty());
    CHECK(v.token.empty());
    CHECK(v.pn_offset == 18);
    CHECK(v.packet.size() == 18 + 0x049e);
    CHECK((v.first_byte & 0x03) + 1 == 4);  // unprotected here: the pn length bits are readable

    HeaderLayout layout;
    const Bytes out = written(initial_header(kClientDcid, {}, 2, 4), datagram.size(), layout);
    CHECK(layout.pn_offset == 18);
    CHECK(layout.payload_offset == 22);
    CHECK(hex(std::span(out).first(kClientInitialHeader.size())) == hex(kClientInitialHeader));
}

TEST_CASE("quic header: the server Initial of RFC 9001 A.3 parses and is written back byte for byte") {
    const Bytes datagram = with_body(kServerInitialHeader, 0x75 - 2);
    PacketView v;
    REQUIRE(parse(datagram, v) == HeaderError::none);
    CHECK(v.kind == PacketKind::initial);
    CHECK(v.dcid.empty());
    CHECK(hex(v.scid) == hex(kServerScid));
    CHECK(v.pn_offset == 18);
    CHECK(v.packet.size() == datagram.size());

    HeaderLayout layout;
    const Bytes out = written(initial_header({}, kServerScid, 1, 2), datagram.size(), layout);
    CHECK(layout.pn_offset == 18);
    CHECK(hex(std::span(out).first(kServerInitialHeader.size())) == hex(kServerInitialHeader));
}

TEST_CASE("quic header: the A.4 Retry parses, verifies and is rebuilt byte for byte (RFC 9001 A.4)") {
    PacketView v;
    REQUIRE(parse(kRetry, v) == HeaderError::none);
    CHECK(v.kind == PacketKind::retry);
    CHECK(v.dcid.empty());
    CHECK(hex(v.scid) == hex(kServerScid));
    CHECK(std::string(v.token.begin(), v.token.end()) == "token");
    CHECK(v.packet.size() == kRetry.size());
    CHECK_FALSE(v.has_packet_number());
    CHECK(verify_retry(v, kClientDcid) == HeaderError::none);

    for (std::size_t i = 0; i < kRetry.size(); ++i) {
        Bytes bad = kRetry;
        bad[i] ^= 0x01;
        PacketView b;
        // A flip either breaks the header (form, fixed bit, version, a CID
        // length) or fails the integrity tag: never accepted.
        const HeaderError e = parse(bad, b);
        CHECK((e != HeaderError::none || verify_retry(b, kClientDcid) != HeaderError::none));
    }
    Bytes other_odcid = kClientDcid;
    other_odcid[7] ^= 1;
    CHECK(verify_retry(v, other_odcid) == HeaderError::retry_integrity);

    Bytes built(kRetry.size() + 8);
    const std::size_t n = write_retry(built, QuicVersion::v1, ConnectionId{}, cid(kServerScid), unhex("746f6b656e"), kClientDcid, 0x0f);
    REQUIRE(n == kRetry.size());
    built.resize(n);
    CHECK(hex(built) == hex(kRetry));
    CHECK(write_retry(built, QuicVersion::v1, ConnectionId{}, cid(kServerScid), {}, kClientDcid, 0) == 0);  // §17.2.5.2: token required
    CHECK(write_retry(std::span(built).first(n - 1), QuicVersion::v1, ConnectionId{}, cid(kServerScid), unhex("746f6b656e"),
                      kClientDcid, 0x0f) == 0);

    // A Retry with an empty token is parsed but not accepted.
    Bytes empty_token(64);
    Writer w(empty_token);
    REQUIRE(w.bytes(std::span(kRetry).first(15)));
    REQUIRE(w.bytes(std::span(kRetry).last(16)));
    empty_token.resize(w.position());
    PacketView e;
    REQUIRE(parse(empty_token, e) == HeaderError::none);
    CHECK(verify_retry(e, kClientDcid) == HeaderError::bad_retry);
}

TEST_CASE("quic header: a coalesced Initial, Handshake and 1-RTT datagram splits at each Length (RFC 9000 §12.2)") {
    const Bytes initial = long_packet(LongType::initial, kShortDcid, 100, 7);
    const Bytes handshake = long_packet(LongType::handshake, kShortDcid, 3);
    const Bytes one_rtt = short_packet(kShortDcid, 40);
    const Bytes datagram = concat({initial, handshake, one_rtt});
    DatagramPackets packets(datagram, kShortDcid.size());
    PacketView v;
    REQUIRE(packets.next(v));
    CHECK(v.kind == PacketKind::initial);
    CHECK(v.offset == 0);
    CHECK(v.packet.size() == initial.size());
    CHECK(v.packet.data() == datagram.data());
    REQUIRE(packets.next(v));
    CHECK(v.kind == PacketKind::handshake);
    CHECK(v.offset == initial.size());
    CHECK(v.packet.size() == handshake.size());
    CHECK(v.token.empty());
    REQUIRE(packets.next(v));
    CHECK(v.kind == PacketKind::one_rtt);
    CHECK(v.offset == initial.size() + handshake.size());
    CHECK(v.packet.size() == one_rtt.size());
    CHECK(hex(v.dcid) == hex(kShortDcid));
    CHECK(v.pn_offset == 1 + kShortDcid.size());
    CHECK_FALSE(packets.next(v));
    CHECK(packets.error() == HeaderError::none);
    CHECK(packets.dropped_other_dcid() == 0);
}

TEST_CASE("quic header: a coalesced packet with another DCID is dropped, the rest kept (RFC 9000 §12.2)") {
    const Bytes other = unhex("ffeeddccbbaa9988");
    const Bytes datagram = concat({long_packet(LongType::initial, kShortDcid, 30),
                                   long_packet(LongType::handshake, other, 30),
                                   long_packet(LongType::handshake, kShortDcid, 30), short_packet(other, 10)});
    DatagramPackets packets(datagram, kShortDcid.size());
    PacketView v;
    REQUIRE(packets.next(v));
    CHECK(v.kind == PacketKind::initial);
    REQUIRE(packets.next(v));
    CHECK(v.kind == PacketKind::handshake);
    CHECK(hex(v.dcid) == hex(kShortDcid));
    CHECK_FALSE(packets.next(v));
    CHECK(packets.dropped_other_dcid() == 2);
    CHECK(packets.error() == HeaderError::none);
}

TEST_CASE("quic header: garbage after valid packets ends the split and leaves them intact") {
    const Bytes first = long_packet(LongType::initial, kShortDcid, 30);
    for (const Bytes& garbage : {Bytes{0x00}, Bytes{0x00, 0x00, 0x00}, Bytes{0xc0, 0x00}, unhex("e00000000108")}) {
        const Bytes datagram = concat({first, garbage});
        DatagramPackets packets(datagram, kShortDcid.size());
        PacketView v;
        REQUIRE(packets.next(v));
        CHECK(v.packet.size() == first.size());
        CHECK_FALSE(packets.next(v));
        CHECK(packets.error() != HeaderError::none);
        CHECK_FALSE(packets.next(v));
    }
}

TEST_CASE("quic header: every malformed case has its own error") {
    PacketView v;
    CHECK(parse({}, v) == HeaderError::truncated);
    // §17.2/§17.3: the fixed bit 0 in a v1 long header and in a short header.
    Bytes no_fixed = with_body(kClientInitialHeader, 0x049e - 4);
    no_fixed[0] &= 0xbf;
    CHECK(parse(no_fixed, v) == HeaderError::fixed_bit_zero);
    Bytes short_no_fixed = short_packet(kShortDcid, 10);
    short_no_fixed[0] &= 0xbf;
    CHECK(parse(short_no_fixed, v) == HeaderError::fixed_bit_zero);
    // A 21-byte DCID in v1.
    Bytes long_cid = unhex("c30000000115");
    long_cid.resize(long_cid.size() + 21 + 1 + 1 + 2 + 30, 0);
    CHECK(parse(long_cid, v) == HeaderError::cid_too_long);
    // Length one byte past the datagram, and Length just below pn + sample.
    CHECK(parse(with_body(kClientInitialHeader, 0x049e - 5), v) == HeaderError::length_past_datagram);
    const Bytes short_length = unhex("c300000001088394c8f03e515708000040130000000200");
    CHECK(parse(with_body(short_length, 0x13 - 5), v) == HeaderError::length_too_short);
    CHECK(parse(with_body(unhex("c300000001088394c8f03e515708000040140000000200"), 0x14 - 5), v) == HeaderError::none);
    // A token length past the end.
    CHECK(parse(unhex("c300000001088394c8f03e5157080005aabb"), v) == HeaderError::truncated);
    // A short header too short for the sample.
    // pn (1) + payload + tag (16) must reach 20 bytes.
    CHECK(parse(short_packet(kShortDcid, 3), v) == HeaderError::none);
    CHECK(parse(short_packet(kShortDcid, 2), v) == HeaderError::length_too_short);
}

TEST_CASE("quic header: every truncation of a valid header is rejected without reading past it") {
    const std::vector<Bytes> valid = {with_body(kClientInitialHeader, 0x049e - 4),
                                      with_body(kServerInitialHeader, 0x75 - 2),
                                      long_packet(LongType::handshake, kShortDcid, 5), kRetry,
                                      short_packet(kShortDcid, 3)};
    for (const Bytes& packet : valid) {
        PacketView whole;
        REQUIRE(parse(packet, whole) == HeaderError::none);
        // A Retry's end is only known from its integrity tag: cuts past its
        // CIDs parse, and verification refuses them.
        const bool retry = whole.kind == PacketKind::retry;
        const std::size_t header_end = retry ? packet.size() : whole.pn_offset + 4;
        for (std::size_t n = 0; n < header_end; ++n) {
            // An exact-size heap copy: a read past it is an ASan error.
            const Bytes cut(packet.begin(), packet.begin() + static_cast<std::ptrdiff_t>(n));
            PacketView v;
            const HeaderError e = parse(cut, v);
            CAPTURE(hex(packet));
            CAPTURE(n);
            if (retry && e == HeaderError::none) {
                CHECK(verify_retry(v, kClientDcid) != HeaderError::none);
                continue;
            }
            CHECK(e != HeaderError::none);
            DatagramPackets split(cut, kShortDcid.size());
            CHECK_FALSE(split.next(v));
        }
    }
}

TEST_CASE("quic header: version negotiation built, parsed and checked (RFC 9000 §6, RFC 8999 §6)") {
    // A client Initial of an unknown version with 255-byte CIDs (RFC 8999 §5.1).
    const Bytes big_dcid(255, 0xaa);
    const Bytes big_scid(255, 0xbb);
    Bytes client = unhex("c01a2a3a4a");
    client.push_back(255);
    client.insert(client.end(), big_dcid.begin(), big_dcid.end());
    client.push_back(255);
    client.insert(client.end(), big_scid.begin(), big_scid.end());
    client.resize(1200, 0);
    PacketView c;
    REQUIRE(parse(client, c) == HeaderError::none);
    CHECK(c.kind == PacketKind::unknown_version);
    CHECK(c.version == 0x1a2a3a4au);
    CHECK(c.packet.size() == client.size());

    const std::uint32_t supported[] = {kVersion1, 0x6b3343cfu};
    Bytes vn(600);
    const std::size_t n = write_version_negotiation(vn, c.dcid, c.scid, supported, 0xfc);
    REQUIRE(n == 1 + 4 + 1 + 255 + 1 + 255 + 8);
    vn.resize(n);
    CHECK(vn[0] == (0xc0 | 0x3c));
    PacketView v;
    REQUIRE(parse(vn, v) == HeaderError::none);
    CHECK(v.kind == PacketKind::version_negotiation);
    CHECK(v.version == 0);
    CHECK(std::ranges::equal(v.dcid, big_scid));
    CHECK(std::ranges::equal(v.scid, big_dcid));
    REQUIRE(v.versions.size() == 8);
    CHECK(listed_version(v, 0) == kVersion1);
    CHECK(listed_version(v, 1) == 0x6b3343cfu);
    CHECK(check_version_negotiation(v, 0x1a2a3a4au) == HeaderError::none);
    // §6.2: a list that contains the chosen version is discarded.
    CHECK(check_version_negotiation(v, kVersion1) == HeaderError::chose_listed_version);
    // Not whole versions, or none.
    Bytes ragged = vn;
    ragged.pop_back();
    CHECK(parse(ragged, v) == HeaderError::bad_version_list);
    ragged.resize(vn.size() - 8);
    CHECK(parse(ragged, v) == HeaderError::bad_version_list);
    CHECK(write_version_negotiation(vn, c.dcid, c.scid, {}, 0) == 0);
    CHECK(write_version_negotiation(std::span(vn).first(n - 1), c.dcid, c.scid, supported, 0) == 0);
}

TEST_CASE("quic header: writers refuse out-of-range fields and the minimum payload covers the sample") {
    CHECK(min_payload_length(1) == 3);
    CHECK(min_payload_length(2) == 2);
    CHECK(min_payload_length(4) == 0);
    Bytes out(100);
    HeaderLayout layout;
    LongHeader h;
    h.pn_length = 0;
    Writer w0(out);
    CHECK_FALSE(write_long_header(w0, h, layout));
    h.pn_length = 5;
    Writer w1(out);
    CHECK_FALSE(write_long_header(w1, h, layout));
    h.pn_length = 1;
    h.length_bytes = 1;
    Writer w2(out);
    CHECK_FALSE(write_long_header(w2, h, layout));
    h.length_bytes = 2;
    h.type = LongType::handshake;
    const Bytes token = {1, 2, 3};
    h.token = token;
    Writer w3(out);
    CHECK_FALSE(write_long_header(w3, h, layout));  // only Initials carry a token
    h.token = {};
    Writer w4{std::span(out).first(9)};
    CHECK_FALSE(write_long_header(w4, h, layout));  // does not fit
    Writer w5(out);
    REQUIRE(write_long_header(w5, h, layout));
    // pn 1 byte: 3 bytes of payload needed before the tag.
    CHECK_FALSE(finish_long_header(std::span(out).first(layout.payload_offset + 2 + 16), layout));
    CHECK(finish_long_header(std::span(out).first(layout.payload_offset + 3 + 16), layout));
    // 2-byte Length holds at most 16383.
    Bytes big(20000);
    Writer w6(big);
    REQUIRE(write_long_header(w6, h, layout));
    CHECK_FALSE(finish_long_header(big, layout));
    h.length_bytes = 4;
    Writer w7(big);
    REQUIRE(write_long_header(w7, h, layout));
    CHECK(finish_long_header(big, layout));
    PacketView v;
    REQUIRE(parse(big, v) == HeaderError::none);
    CHECK(v.packet.size() == big.size());
    ShortHeader s;
    s.pn_length = 0;
    Writer w8(out);
    CHECK_FALSE(write_short_header(w8, s, layout));
}

TEST_CASE("quic header: spin and key phase bits and the truncated packet number in the short header") {
    Bytes out(64);
    Writer w(out);
    ShortHeader s = short_header(0x1234567, 2, true);
    s.spin = true;
    HeaderLayout layout;
    REQUIRE(write_short_header(w, s, layout));
    CHECK(out[0] == (0x40 | 0x20 | 0x04 | 0x01));
    CHECK(layout.pn_offset == 9);
    CHECK(layout.payload_offset == 11);
    CHECK(hex(std::span(out).subspan(9, 2)) == "4567");
    s.spin = false;
    s.key_phase = false;
    Writer w2(out);
    REQUIRE(write_short_header(w2, s, layout));
    CHECK(out[0] == 0x41);
}

namespace {

// Protects a written packet with the client's Initial write keys, then parses
// it, removes header protection and opens it with the server's read keys.
void round_trip(Bytes packet, const HeaderLayout& layout, std::uint64_t pn, const Bytes& plaintext,
                PacketKind kind) {
    auto client = ndm::crypto::initial_keys(kClientDcid, false, QuicVersion::v1);
    auto server = ndm::crypto::initial_keys(kClientDcid, true, QuicVersion::v1);
    REQUIRE(ndm::crypto::protect(packet, layout.pn_offset, layout.pn_length, pn, client.write.aead, client.write.hp));
    PacketView v;
    REQUIRE(parse_packet_header(packet, kShortDcid.size(), v) == HeaderError::none);
    CHECK(v.kind == kind);
    CHECK(v.pn_offset == layout.pn_offset);
    REQUIRE(v.packet.size() == packet.size());
    const auto unprotected = ndm::crypto::remove_header_protection(packet, v.pn_offset, server.read.hp);
    REQUIRE(unprotected.has_value());
    CHECK(unprotected->pn_length == layout.pn_length);
    const std::uint64_t full = ndm::wire::decode_packet_number(pn - 1, true, unprotected->truncated_pn,
                                                               unprotected->pn_length);
    CHECK(full == pn);
    const auto opened =
        ndm::crypto::open_payload(packet, unprotected->header_length(v.pn_offset), full, server.read.aead);
    REQUIRE(opened.has_value());
    CHECK(hex(*opened) == hex(plaintext));
}

}  // namespace

TEST_CASE("quic header: protect, parse, remove header protection and open a long and a short header packet") {
    const Bytes plaintext = {0x06, 0x00, 0x01, 0xaa};  // CRYPTO frame, offset 0, 1 byte
    {
        Bytes packet(200);
        Writer w(packet);
        LongHeader h;
        h.dcid = cid(kClientDcid);
        h.packet_number = 0x1f5;
        h.pn_length = ndm::wire::packet_number_length(h.packet_number, 0x1f0, true);
        const Bytes token = {9, 8, 7};
        h.token = token;
        HeaderLayout layout;
        REQUIRE(write_long_header(w, h, layout));
        REQUIRE(w.bytes(plaintext));
        packet.resize(w.position() + ndm::crypto::kAeadTagSize);
        REQUIRE(finish_long_header(packet, layout));
        round_trip(packet, layout, h.packet_number, plaintext, PacketKind::initial);
    }
    {
        Bytes packet(200);
        Writer w(packet);
        const ShortHeader h = short_header(77, 1, true);
        HeaderLayout layout;
        REQUIRE(write_short_header(w, h, layout));
        REQUIRE(w.bytes(plaintext));
        packet.resize(w.position() + ndm::crypto::kAeadTagSize);
        round_trip(packet, layout, h.packet_number, plaintext, PacketKind::one_rtt);
    }
}
