// Packet headers, packet numbers (RFC 9000 §17.1, Appendix A.2/A.3), the
// CRC32C integrity tag and version negotiation.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ndm/connection.hpp"
#include "transport/crc32c.hpp"
#include "transport/frame.hpp"
#include "transport/packet.hpp"

using namespace ndm::wire;
using Bytes = std::vector<std::uint8_t>;

namespace {

ConnectionId cid(std::initializer_list<std::uint8_t> b) {
    return ConnectionId::from(std::span<const std::uint8_t>(b.begin(), b.size()));
}

const ConnectionId kShort = cid({1, 2, 3, 4, 5, 6, 7, 8});
const ConnectionId kClient = cid({0xc1, 0xc2, 0xc3, 0xc4, 0xc5});
const ConnectionId kServer = cid({0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9});

// header + frames + tag, sealed.
Bytes build(const PacketHeader& h, const std::vector<Frame>& frames) {
    Bytes buf(2048);
    Writer w(buf);
    REQUIRE(write_header(w, h));
    for (const Frame& f : frames) REQUIRE(encode_frame(w, f));
    REQUIRE(w.u32(0));
    buf.resize(w.position());
    seal(buf, h);
    return buf;
}

ParsedPacket parse_ok(const Bytes& b, std::uint64_t largest = 0, bool has = false) {
    ParsedPacket p;
    Error err;
    const bool ok = parse_packet(b, largest, has, p, err);
    INFO(err.what);
    REQUIRE(ok);
    return p;
}

Error parse_error_at(const Bytes& b, std::uint64_t largest, bool has = true) {
    ParsedPacket p;
    Error err{};
    REQUIRE_FALSE(parse_packet(b, largest, has, p, err));
    CHECK_FALSE(err.what.empty());
    return err;
}

Error parse_error(const Bytes& b) { return parse_error_at(b, 0, false); }

// Changes a header byte and recomputes the tag, so the header check is what fails.
Bytes patched(Bytes b, std::size_t i, std::uint8_t v) {
    b[i] = v;
    seal(b);
    return b;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

PacketHeader long_header(PacketType t, std::uint64_t pn, std::size_t pn_len) {
    PacketHeader h;
    h.type = t;
    h.version = ndm::kProtocolVersion;
    h.dcid = kServer;
    h.scid = kClient;
    h.packet_number = pn;
    h.pn_length = pn_len;
    return h;
}

PacketHeader short_header(std::uint64_t pn, std::size_t pn_len) {
    PacketHeader h;
    h.type = PacketType::one_rtt;
    h.dcid = kShort;
    h.packet_number = pn;
    h.pn_length = pn_len;
    return h;
}

}  // namespace

TEST_CASE("packet: connection ids") {
    const ConnectionId a = cid({1, 2, 3});
    CHECK(a.length == 3);
    CHECK(a.span().size() == 3);
    CHECK(a == cid({1, 2, 3}));
    CHECK_FALSE(a == cid({1, 2}));
    CHECK_FALSE(a == cid({1, 2, 4}));
    CHECK(ConnectionId{} == cid({}));
    const Bytes big(25, 7);
    CHECK(ConnectionId::from(big).length == kMaxCidLength);  // clamped, never overflows
}

TEST_CASE("packet: packet number length, RFC 9000 Appendix A.2") {
    // RFC 9000 §17.1 examples.
    CHECK(packet_number_length(0xac5c02, 0xabe8b3, true) == 2);
    CHECK(packet_number_length(0xace8fe, 0xabe8b3, true) == 3);
    CHECK(packet_number_length(0, 0, false) == 1);
    CHECK(packet_number_length(126, 0, false) == 1);
    CHECK(packet_number_length(127, 0, false) == 2);  // 128 unacked: twice that needs 9 bits
    CHECK(packet_number_length(128, 0, false) == 2);
    CHECK(packet_number_length(200, 100, true) == 1);
    CHECK(packet_number_length(228, 100, true) == 2);
    CHECK(packet_number_length(100 + (1u << 15) - 1, 100, true) == 2);
    CHECK(packet_number_length(100 + (1u << 15), 100, true) == 3);
    CHECK(packet_number_length(1ull << 40, 0, true) == 4);  // capped
}

TEST_CASE("packet: packet number decoding, RFC 9000 Appendix A.3") {
    CHECK(decode_packet_number(0xa82f30ea, true, 0x9b32, 2) == 0xa82f9b32);
    CHECK(decode_packet_number(0, false, 0, 1) == 0);
    CHECK(decode_packet_number(0, false, 5, 4) == 5);
    CHECK(decode_packet_number(0xff, true, 0x01, 1) == 0x101);   // wraps forward
    CHECK(decode_packet_number(0x101, true, 0xff, 1) == 0xff);   // late packet, wraps back
    CHECK(decode_packet_number(10, true, 0xf0, 1) == 0xf0);      // no negative candidates
    // Near 2^62 the candidate is never pushed past the packet-number space.
    const std::uint64_t top = (1ull << 62) - 1;
    CHECK(decode_packet_number(top - 1, true, top & 0xff, 1) == top);
}

TEST_CASE("packet: sender's length always lets the receiver recover the number (property)") {
    std::mt19937_64 rng(0x9ac4e7'0001);
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t acked = rng() >> (2 + rng() % 40);
        const std::uint64_t pn = acked + 1 + (rng() >> (36 + rng() % 28));
        const std::size_t len = packet_number_length(pn, acked, true);
        if (pn - acked >= (1ull << 31)) continue;  // beyond what 4 bytes can carry
        // The receiver has seen anything from acked up to pn-1.
        const std::uint64_t received = acked + rng() % (pn - acked);
        const std::uint64_t mask = (len == 4) ? 0xffffffffull : ((1ull << (8 * len)) - 1);
        REQUIRE(decode_packet_number(received, true, pn & mask, len) == pn);
    }
}

TEST_CASE("packet: long and short headers round-trip for every pn length") {
    const MaxDataFrame md{12345};
    for (std::size_t len = 1; len <= 4; ++len) {
        CAPTURE(len);
        for (PacketType t : {PacketType::initial, PacketType::handshake}) {
            const PacketHeader h = long_header(t, 0x1234567 & ((1ull << (8 * len)) - 1), len);
            const Bytes b = build(h, {PingFrame{}, PaddingFrame{20}});
            CHECK((b[0] & 0xc0) == 0xc0);
            CHECK(((b[0] >> 4) & 3) == static_cast<int>(t));
            CHECK((b[0] & 3) == len - 1);
            const ParsedPacket p = parse_ok(b);
            CHECK(p.header.type == t);
            CHECK(p.header.version == ndm::kProtocolVersion);
            CHECK(p.header.dcid == kServer);
            CHECK(p.header.scid == kClient);
            CHECK(p.header.packet_number == h.packet_number);
            CHECK(p.header.pn_length == len);
            CHECK(p.payload.size() == 21);
            CHECK(p.supported_versions.empty());
            CHECK(b.size() == 1 + 4 + 1 + 9 + 1 + 5 + len + 21 + 4);
        }
        const PacketHeader h = short_header(0x89abcdef & ((1ull << (8 * len)) - 1), len);
        const Bytes b = build(h, {md});
        CHECK(b[0] == (0x40 | (len - 1)));
        CHECK(b.size() == 1 + kShortCidLength + len + 3 + 4);
        const ParsedPacket p = parse_ok(b);
        CHECK(p.header.type == PacketType::one_rtt);
        CHECK(p.header.dcid == kShort);
        CHECK(p.header.packet_number == h.packet_number);
        CHECK(p.header.pn_length == len);
        Reader r(p.payload);
        Frame f;
        Error err;
        REQUIRE(decode_frame(r, f, err));
        CHECK(std::get<MaxDataFrame>(f).maximum == 12345);
        CHECK(r.empty());
    }
}

TEST_CASE("packet: truncated packet numbers expand against the largest received") {
    const Bytes b = build(short_header(0xa82f9b32, 2), {PingFrame{}});
    const ParsedPacket p = parse_ok(b, 0xa82f30ea, true);
    CHECK(p.header.packet_number == 0xa82f9b32);
    CHECK(p.header.pn_length == 2);
    // Against the wrong expectation the number decodes to 0x9b32, whose high
    // bits the tag does not match: dropped, not taken for another packet.
    CHECK(parse_error(b).kind == ErrorKind::integrity);
    // A number that fits its encoded length needs no expectation.
    CHECK(parse_ok(build(short_header(0x9b32, 2), {PingFrame{}})).header.packet_number == 0x9b32);
}

TEST_CASE("packet: a packet reordered past the decoding window fails its tag") {
    // RFC 9000 §A.3: with 1 byte on the wire the receiver expects numbers
    // within 128 of its largest received. Packet 300 sent with 1 byte and
    // arriving after 430 was received decodes to 556.
    const Bytes late = build(short_header(300, 1), {PingFrame{}});
    CHECK(decode_packet_number(430, true, 300 & 0xff, 1) == 556);
    CHECK(parse_error_at(late, 430).kind == ErrorKind::integrity);
    CHECK(parse_ok(late, 299, true).header.packet_number == 300);
    // The mix is zero exactly when the untransmitted bits are.
    PacketHeader h = short_header(300, 2);
    CHECK(untransmitted_pn_mix(h) == 0);
    h.pn_length = 1;
    CHECK(untransmitted_pn_mix(h) != 0);
    h.packet_number = 556;
    CHECK(untransmitted_pn_mix(h) != untransmitted_pn_mix(short_header(300, 1)));
}

TEST_CASE("packet: a 1-RTT packet carries frames of every kind") {
    static const Bytes data(100, 'd');
    AckFrame ack;
    ack.ranges = {{40, 50}, {10, 20}};
    ack.ack_delay = std::chrono::microseconds(248);  // a multiple of 8 us: the default ack_delay_exponent 3
    const std::vector<Frame> frames = {ack, StreamFrame{4, 1000, data, true}, MaxStreamDataFrame{4, 1 << 20},
                                       ConnectionCloseFrame{0, 0, "done", true}, PaddingFrame{10}};
    const Bytes b = build(short_header(77, 1), frames);
    const ParsedPacket p = parse_ok(b, 70, true);
    CHECK(p.header.packet_number == 77);
    Reader r(p.payload);
    std::vector<Frame> got;
    while (!r.empty()) {
        Frame f;
        Error err;
        REQUIRE(decode_frame(r, f, err));
        got.push_back(f);
    }
    REQUIRE(got.size() == frames.size());
    CHECK(std::get<AckFrame>(got[0]).ranges == ack.ranges);
    CHECK(std::get<AckFrame>(got[0]).ack_delay == ack.ack_delay);
    CHECK(std::get<StreamFrame>(got[1]).data.size() == 100);
    CHECK(std::get<StreamFrame>(got[1]).offset == 1000);
    CHECK(std::get<ConnectionCloseFrame>(got[3]).reason == "done");
    CHECK(std::get<PaddingFrame>(got[4]).length == 10);
}

TEST_CASE("packet: write_header refuses what it cannot write") {
    std::array<std::uint8_t, 64> buf{};
    auto fails = [&](const PacketHeader& h, std::size_t room = 64) {
        Writer w(std::span<std::uint8_t>(buf).first(room));
        return !write_header(w, h) && w.position() == 0;
    };
    CHECK(fails(short_header(1, 0)));
    CHECK(fails(short_header(1, 5)));
    PacketHeader wrong_cid = short_header(1, 1);
    wrong_cid.dcid = kClient;  // 5 bytes, short headers carry exactly 8
    CHECK(fails(wrong_cid));
    PacketHeader vn = long_header(PacketType::version_negotiation, 1, 1);
    CHECK(fails(vn));
    CHECK(fails(short_header(1, 4), 1 + kShortCidLength + 3));
    CHECK_FALSE(fails(short_header(1, 4), 1 + kShortCidLength + 4));
    CHECK(fails(long_header(PacketType::initial, 1, 2), 1 + 4 + 1 + 9 + 1 + 5 + 1));
    CHECK_FALSE(fails(long_header(PacketType::initial, 1, 2), 1 + 4 + 1 + 9 + 1 + 5 + 2));
}

TEST_CASE("packet: integrity tag is checked first") {
    const Bytes good = build(long_header(PacketType::initial, 0, 4), {PingFrame{}});
    const std::uint32_t tag = crc32c(std::span(good).first(good.size() - 4));
    CHECK(good[good.size() - 4] == (tag >> 24));
    CHECK(good.back() == (tag & 0xff));

    Bytes bad = good;
    bad.back() ^= 1;
    const Error e = parse_error(bad);
    CHECK(e.kind == ErrorKind::integrity);
    CHECK(contains(e.what, "CRC32C"));
    // A malformed header behind a bad tag is reported as corruption, not as a header error.
    Bytes junk = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    CHECK(parse_error(junk).kind == ErrorKind::integrity);
    for (std::size_t n = 0; n < 5; ++n) CHECK(parse_error(Bytes(n, 0)).kind == ErrorKind::truncated);
}

TEST_CASE("packet: every single-bit flip is rejected by the integrity check") {
    static const Bytes data(40, 's');
    const Bytes packets[] = {
        build(long_header(PacketType::initial, 3, 2), {CryptoFrame{0, data}, PaddingFrame{30}}),
        build(short_header(0x1234, 2), {StreamFrame{0, 0, data, false}}),
    };
    for (const Bytes& good : packets) {
        Bytes b = good;
        for (std::size_t i = 0; i < b.size(); ++i)
            for (int bit = 0; bit < 8; ++bit) {
                b[i] ^= static_cast<std::uint8_t>(1u << bit);
                ParsedPacket p;
                Error err{};
                REQUIRE_FALSE(parse_packet(b, 0, false, p, err));
                REQUIRE(err.kind == ErrorKind::integrity);
                b[i] = good[i];
            }
    }
}

TEST_CASE("packet: every truncation is rejected") {
    const Bytes good = build(long_header(PacketType::handshake, 9, 1), {PingFrame{}, MaxDataFrame{7}});
    for (std::size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
        const Error e = parse_error(cut);
        CHECK((e.kind == ErrorKind::truncated || e.kind == ErrorKind::integrity));
    }
    // Truncated headers that carry a valid tag: the header parser catches them.
    const Bytes full_long = build(long_header(PacketType::initial, 9, 4), {PingFrame{}});
    for (std::size_t n = 1; n < 1 + 4 + 1 + 9 + 1 + 5 + 4; ++n) {
        Bytes b(full_long.begin(), full_long.begin() + static_cast<std::ptrdiff_t>(n));
        b.resize(n + 4);
        seal(b);
        CHECK(parse_error(b).kind == ErrorKind::truncated);
    }
    const Bytes full_short = build(short_header(9, 4), {PingFrame{}});
    for (std::size_t n = 1; n < 1 + kShortCidLength + 4; ++n) {
        Bytes b(full_short.begin(), full_short.begin() + static_cast<std::ptrdiff_t>(n));
        b.resize(n + 4);
        seal(b);
        CHECK(parse_error(b).kind == ErrorKind::truncated);
    }
}

TEST_CASE("packet: header bits are validated") {
    const Bytes lng = build(long_header(PacketType::initial, 1, 1), {PingFrame{}});
    const Bytes shrt = build(short_header(1, 1), {PingFrame{}});
    {
        const Error e = parse_error(patched(lng, 0, lng[0] & ~0x40));
        CHECK(e.kind == ErrorKind::bad_header);
        CHECK(contains(e.what, "fixed bit"));
    }
    {
        const Error e = parse_error(patched(shrt, 0, shrt[0] & ~0x40));
        CHECK(e.kind == ErrorKind::bad_header);
        CHECK(contains(e.what, "short header: fixed bit"));
    }
    CHECK(contains(parse_error(patched(lng, 0, lng[0] | 0x10)).what, "0-RTT"));
    CHECK(contains(parse_error(patched(lng, 0, lng[0] | 0x30)).what, "Retry"));
    CHECK(contains(parse_error(patched(lng, 0, lng[0] | 0x04)).what, "long header: reserved bits"));
    CHECK(contains(parse_error(patched(shrt, 0, shrt[0] | 0x20)).what, "short header: reserved bits"));
    {  // destination CID length 21 > 20
        const Error e = parse_error(patched(lng, 5, 21));
        CHECK(e.kind == ErrorKind::bad_header);
        CHECK(contains(e.what, "destination connection id length 21"));
    }
    {  // a header with no frames behind it (RFC 9000 §12.4)
        Bytes b(1 + kShortCidLength + 1 + 4);
        Writer w(b);
        REQUIRE(write_header(w, short_header(1, 1)));
        seal(b);
        CHECK(contains(parse_error(b).what, "empty payload"));
    }
}

TEST_CASE("packet: unknown versions parse their invariant fields only") {
    PacketHeader h = long_header(PacketType::initial, 1, 1);
    h.version = 0x1a2a3a4a;
    const Bytes b = build(h, {PingFrame{}});
    const ParsedPacket p = parse_ok(b);
    CHECK(p.header.version == 0x1a2a3a4a);
    CHECK(p.header.dcid == kServer);
    CHECK(p.header.scid == kClient);
    // Everything after the CIDs is left to the caller: pn byte and the PING.
    CHECK(p.payload.size() == 2);
    CHECK(p.payload[1] == 0x01);
}

TEST_CASE("packet: version negotiation round-trip") {
    const std::uint32_t versions[] = {ndm::kProtocolVersion, 0x0a0a0a0a};
    std::array<std::uint8_t, 128> buf{};
    const std::size_t n = write_version_negotiation(buf, kClient, kServer, versions);
    REQUIRE(n == 1 + 4 + 1 + 5 + 1 + 9 + 8 + 4);
    const Bytes b(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    const ParsedPacket p = parse_ok(b);
    CHECK(p.header.type == PacketType::version_negotiation);
    CHECK(p.header.version == 0);
    CHECK(p.header.dcid == kClient);
    CHECK(p.header.scid == kServer);
    CHECK(p.supported_versions == std::vector<std::uint32_t>{ndm::kProtocolVersion, 0x0a0a0a0a});
    CHECK(p.payload.empty());
    // The first byte's low bits are ignored (RFC 9000 §17.2.1), fixed bit included.
    CHECK(parse_ok(patched(b, 0, 0x80)).header.type == PacketType::version_negotiation);
    // The version list must be whole u32s and non-empty.
    {
        Bytes odd(b.begin(), b.end() - 4);
        odd.push_back(0);                      // 9 bytes of versions
        odd.insert(odd.end(), {0, 0, 0, 0});  // tag
        seal(odd);
        CHECK(parse_error(odd).kind == ErrorKind::bad_header);
        Bytes none(b.begin(), b.begin() + 1 + 4 + 1 + 5 + 1 + 9);
        none.insert(none.end(), {0, 0, 0, 0});
        seal(none);
        CHECK(contains(parse_error(none).what, "version negotiation"));
    }
    // Out of room, or nothing to offer: nothing written.
    CHECK(write_version_negotiation(std::span(buf).first(n - 1), kClient, kServer, versions) == 0);
    CHECK(write_version_negotiation(buf, kClient, kServer, {}) == 0);
}

TEST_CASE("packet: random datagrams never crash (property)") {
    std::mt19937_64 rng(0x9ac4e7'0002);
    int parsed = 0;
    for (int i = 0; i < 20000; ++i) {
        Bytes b(rng() % 80);
        for (auto& x : b) x = static_cast<std::uint8_t>(rng() % 2 ? rng() : rng() % 24);
        if (b.size() > 6 && rng() % 2) {
            // Plausible first bytes and versions.
            static constexpr std::uint8_t kFirst[] = {0x40, 0x41, 0x43, 0xc0, 0xc1, 0xe3, 0x80, 0x50};
            b[0] = kFirst[rng() % std::size(kFirst)];
            if (b[0] & 0x80) {
                const std::uint32_t v = rng() % 3 == 0 ? 0 : ndm::kProtocolVersion;
                for (int k = 0; k < 4; ++k) b[1 + k] = static_cast<std::uint8_t>(v >> (24 - 8 * k));
            }
        }
        // Half are sealed so that the header parser, not just the tag check, is exercised.
        if (rng() % 2) seal(b);
        ParsedPacket p;
        Error err{};
        // Small expectations, so that 1-byte numbers keep zero high bits and
        // the sealed half mostly reaches the frame decoders.
        if (!parse_packet(b, rng() % 100, rng() % 2 == 0, p, err)) {
            REQUIRE_FALSE(err.what.empty());
            continue;
        }
        ++parsed;
        REQUIRE(p.payload.size() + kIntegrityTagSize <= b.size());
        Reader r(p.payload);
        while (!r.empty()) {
            Frame f;
            if (!decode_frame(r, f, err)) break;
            Bytes again(encoded_size(f));
            Writer w(again);
            REQUIRE(encode_frame(w, f));
            REQUIRE(w.position() == again.size());
        }
    }
    CHECK(parsed > 1000);
}
