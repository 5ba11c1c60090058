// Frame codec (RFC 9000 §19): golden bytes, round trips, malformed input with
// the RFC's error codes, the ACK delay exponent, the frame-per-packet-type
// table (§12.4) and randomized properties (fixed seeds).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "frame_equal.hpp"
#include "wire/frame.hpp"

using namespace ndm::wire;
using namespace std::chrono_literals;
using ndm::CloseCode;
using ndm::Duration;
using Bytes = std::vector<std::uint8_t>;

namespace {

using ndm::test::frames_equal;
using ndm::test::same_bytes;

Bytes encode(const Frame& f) {
    Bytes buf(encoded_size(f) + 16);
    Writer w(buf);
    REQUIRE(encode_frame(w, f));
    REQUIRE(w.position() == encoded_size(f));
    buf.resize(w.position());
    return buf;
}

// Decodes exactly one frame spanning all of bytes.
Frame decode_one(std::span<const std::uint8_t> bytes) {
    Reader r(bytes);
    Frame f;
    Error err;
    const bool ok = decode_frame(r, f, err);
    INFO(err.what);
    REQUIRE(ok);
    REQUIRE(r.empty());
    return f;
}

// Decoding fails with the error code the RFC names (FRAME_ENCODING_ERROR
// unless stated).
Error decode_error(const Bytes& bytes, CloseCode code = CloseCode::frame_encoding_error) {
    Reader r(bytes);
    Frame f;
    Error err{};
    REQUIRE_FALSE(decode_frame(r, f, err));
    CHECK_FALSE(err.what.empty());
    CHECK(err.code == code);
    return err;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

std::span<const std::uint8_t> sv_bytes(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

Bytes with(Bytes b, std::string_view tail) {
    b.insert(b.end(), tail.begin(), tail.end());
    return b;
}

std::uint64_t random_varint(std::mt19937_64& rng) {
    const int bits = static_cast<int>(rng() % 63);
    return bits == 0 ? 0 : rng() >> (64 - bits);
}

// A random frame within every protocol limit (so it must round-trip exactly).
Frame random_frame(std::mt19937_64& rng, std::span<const std::uint8_t> pool) {
    auto data = [&]() {
        const std::size_t len = rng() % 64 == 0 ? rng() % pool.size() : rng() % 40;
        return pool.subspan(rng() % (pool.size() - len + 1), len);
    };
    static const std::uint8_t kToken[kStatelessResetTokenSize] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    auto path_data = [&]() {
        std::array<std::uint8_t, kPathDataSize> d;
        for (auto& b : d) b = static_cast<std::uint8_t>(rng());
        return d;
    };
    switch (rng() % 20) {
        case 0: return PaddingFrame{1 + rng() % 50};
        case 1: return PingFrame{};
        case 2: {
            AckFrame a;
            // A multiple of 8 us: the default exponent's resolution.
            a.ack_delay = std::chrono::microseconds((random_varint(rng) % 10'000'000'000ull) & ~std::uint64_t{7});
            if (rng() % 3 == 0) a.ecn = EcnCounts{random_varint(rng), random_varint(rng), random_varint(rng)};
            std::uint64_t hi = random_varint(rng);
            const std::size_t n = 1 + rng() % kMaxAckRanges;
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint64_t len = std::min<std::uint64_t>(hi, rng() % 4 == 0 ? random_varint(rng) : rng() % 8);
                a.ranges.push_back({hi - len, hi});
                const std::uint64_t lo = hi - len;
                const std::uint64_t gap = rng() % 4 == 0 ? random_varint(rng) : rng() % 5;
                if (lo < 2 || gap > lo - 2) break;
                hi = lo - 2 - gap;
            }
            return a;
        }
        case 3: {
            CryptoFrame c{random_varint(rng), data()};
            c.offset = std::min(c.offset, kVarintMax - c.data.size());
            return c;
        }
        case 4: {
            StreamFrame s{random_varint(rng), random_varint(rng), data(), rng() % 2 == 0};
            s.offset = std::min(s.offset, kVarintMax - s.data.size());
            return s;
        }
        case 5: return MaxDataFrame{random_varint(rng)};
        case 6: return MaxStreamDataFrame{random_varint(rng), random_varint(rng)};
        case 7: return MaxStreamsFrame{random_varint(rng) >> 2, rng() % 2 == 0};
        case 8: return DataBlockedFrame{random_varint(rng)};
        case 9: return StreamDataBlockedFrame{random_varint(rng), random_varint(rng)};
        case 10: {
            ConnectionCloseFrame c;
            c.application = rng() % 2 == 0;
            c.error_code = random_varint(rng);
            c.frame_type = c.application ? 0 : random_varint(rng);
            auto d = data();
            c.reason = std::string_view(reinterpret_cast<const char*>(d.data()),
                                        std::min(d.size(), kMaxReasonLength));
            return c;
        }
        case 12: return ResetStreamFrame{random_varint(rng), random_varint(rng), random_varint(rng)};
        case 13: return StopSendingFrame{random_varint(rng), random_varint(rng)};
        case 14: {
            auto d = data();
            return NewTokenFrame{d.empty() ? pool.first(1) : d};
        }
        case 15: return StreamsBlockedFrame{random_varint(rng) >> 2, rng() % 2 == 0};
        case 16: {
            NewConnectionIdFrame n;
            n.sequence = random_varint(rng);
            n.retire_prior_to = n.sequence == 0 ? 0 : rng() % (n.sequence + 1);
            n.cid = pool.subspan(rng() % 100, 1 + rng() % kMaxConnectionIdLength);
            n.reset_token = kToken;
            return n;
        }
        case 17: return RetireConnectionIdFrame{random_varint(rng)};
        case 18: return rng() % 2 ? Frame{PathChallengeFrame{path_data()}} : Frame{PathResponseFrame{path_data()}};
        default: return HandshakeDoneFrame{};
    }
}

// One of every frame type (and both CONNECTION_CLOSE variants).
std::vector<Frame> sample_frames() {
    static const Bytes data{'h', 'e', 'l', 'l', 'o'};
    AckFrame ack;
    ack.ranges = {{95, 100}, {80, 90}, {3, 3}};
    ack.ack_delay = 1504us;  // a multiple of 2^3 us
    AckFrame ack_ecn = ack;
    ack_ecn.ecn = EcnCounts{10, 0, 2};
    static const std::uint8_t cid[] = {0xc1, 0xc2, 0xc3, 0xc4};
    static const std::uint8_t token[kStatelessResetTokenSize] = {0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf};
    return {
        PaddingFrame{7},
        PingFrame{},
        ack,
        CryptoFrame{12, data},
        StreamFrame{4, 70000, data, true},
        StreamFrame{0, 0, {}, false},
        MaxDataFrame{1u << 20},
        MaxStreamDataFrame{8, 99999},
        MaxStreamsFrame{100},
        DataBlockedFrame{5000},
        StreamDataBlockedFrame{12, 64},
        ConnectionCloseFrame{0x0a, 0x08, "bad frame", false},
        ConnectionCloseFrame{42, 0, "bye", true},
        HandshakeDoneFrame{},
        ack_ecn,
        ResetStreamFrame{4, 0x101, 12345},
        StopSendingFrame{8, 7},
        NewTokenFrame{data},
        MaxStreamsFrame{7, false},
        StreamsBlockedFrame{100, true},
        StreamsBlockedFrame{1ull << 60, false},
        NewConnectionIdFrame{3, 1, cid, token},
        RetireConnectionIdFrame{2},
        PathChallengeFrame{{1, 2, 3, 4, 5, 6, 7, 8}},
        PathResponseFrame{{8, 7, 6, 5, 4, 3, 2, 1}},
        AckFrequencyFrame{7, 31, 25000, 3},
        ImmediateAckFrame{},
        DatagramFrame{data, true},
        DatagramFrame{{}, true},
    };
}

}  // namespace

TEST_CASE("frame: golden encodings") {
    static const Bytes hi{'h', 'i'};
    CHECK(encode(PingFrame{}) == Bytes{0x01});
    CHECK(encode(HandshakeDoneFrame{}) == Bytes{0x1e});
    CHECK(encode(PaddingFrame{3}) == Bytes{0, 0, 0});
    CHECK(encode(MaxDataFrame{1000}) == Bytes{0x10, 0x43, 0xe8});
    CHECK(encode(MaxStreamDataFrame{4, 1}) == Bytes{0x11, 0x04, 0x01});
    CHECK(encode(MaxStreamsFrame{100}) == Bytes{0x12, 0x40, 0x64});
    CHECK(encode(DataBlockedFrame{7}) == Bytes{0x14, 0x07});
    CHECK(encode(StreamDataBlockedFrame{8, 9}) == Bytes{0x15, 0x08, 0x09});
    CHECK(encode(CryptoFrame{0, hi}) == Bytes{0x06, 0x00, 0x02, 'h', 'i'});
    // STREAM always carries OFF and LEN (type 0x0e, 0x0f with FIN).
    CHECK(encode(StreamFrame{4, 0, hi, true}) == Bytes{0x0f, 0x04, 0x00, 0x02, 'h', 'i'});
    CHECK(encode(StreamFrame{4, 64, hi, false}) == Bytes{0x0e, 0x04, 0x40, 0x40, 0x02, 'h', 'i'});
    CHECK(encode(ConnectionCloseFrame{0x0a, 0x08, "bad", false}) ==
          Bytes{0x1c, 0x0a, 0x08, 0x03, 'b', 'a', 'd'});
    CHECK(encode(ConnectionCloseFrame{0, 0x08, "ok", true}) == Bytes{0x1d, 0x00, 0x02, 'o', 'k'});
    AckFrame ack;
    ack.ranges = {{90, 100}, {80, 83}, {78, 78}};
    ack.ack_delay = 2ms;
    // largest 100, delay 2000us = 250 units of 8us (default exponent 3), 2 more
    // ranges, first range 10, (gap 5, len 3), (gap 0, len 0).
    CHECK(encode(ack) == Bytes{0x02, 0x40, 0x64, 0x40, 0xfa, 0x02, 0x0a, 0x05, 0x03, 0x00, 0x00});
    // ECN counts follow the ranges (type 0x03, RFC 9000 §19.3.2).
    ack.ecn = EcnCounts{1, 2, 3};
    CHECK(encode(ack) == Bytes{0x03, 0x40, 0x64, 0x40, 0xfa, 0x02, 0x0a, 0x05, 0x03, 0x00, 0x00, 0x01, 0x02, 0x03});
    // RFC 9000 §19.4-§19.18 layouts.
    CHECK(encode(ResetStreamFrame{4, 1, 1000}) == Bytes{0x04, 0x04, 0x01, 0x43, 0xe8});
    CHECK(encode(StopSendingFrame{4, 9}) == Bytes{0x05, 0x04, 0x09});
    CHECK(encode(NewTokenFrame{hi}) == Bytes{0x07, 0x02, 'h', 'i'});
    CHECK(encode(MaxStreamsFrame{100, false}) == Bytes{0x13, 0x40, 0x64});
    CHECK(encode(StreamsBlockedFrame{5, true}) == Bytes{0x16, 0x05});
    CHECK(encode(StreamsBlockedFrame{5, false}) == Bytes{0x17, 0x05});
    static const Bytes cid{0xaa, 0xbb};
    static const Bytes token(16, 0x77);
    Bytes ncid{0x18, 0x05, 0x02, 0x02, 0xaa, 0xbb};
    ncid.insert(ncid.end(), token.begin(), token.end());
    CHECK(encode(NewConnectionIdFrame{5, 2, cid, token}) == ncid);
    CHECK(encode(RetireConnectionIdFrame{5}) == Bytes{0x19, 0x05});
    CHECK(encode(PathChallengeFrame{{1, 2, 3, 4, 5, 6, 7, 8}}) == Bytes{0x1a, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(encode(PathResponseFrame{{1, 2, 3, 4, 5, 6, 7, 8}}) == Bytes{0x1b, 1, 2, 3, 4, 5, 6, 7, 8});
    // draft-ietf-quic-ack-frequency-14 §4, §5: type 0xaf is a 2-byte varint.
    CHECK(encode(AckFrequencyFrame{1, 9, 25000, 3}) == Bytes{0x40, 0xaf, 0x01, 0x09, 0x80, 0x00, 0x61, 0xa8, 0x03});
    CHECK(encode(ImmediateAckFrame{}) == Bytes{0x1f});
}

TEST_CASE("frame: DATAGRAM of both types (RFC 9221 §4)") {
    static const Bytes hi{'h', 'i'};
    // The encoder writes 0x31, with a length.
    CHECK(encode(DatagramFrame{hi, true}) == Bytes{0x31, 0x02, 'h', 'i'});
    CHECK(datagram_frame_size(2) == 4);
    CHECK(datagram_frame_size(64) == 67);  // a 2-byte length from 64 bytes on
    // 0x31 ends at its length, and the next frame follows.
    {
        const Bytes two{0x31, 0x01, 'x', 0x01};
        Reader r(two);
        Frame f;
        Error err;
        REQUIRE(decode_frame(r, f, err));
        const auto* d = std::get_if<DatagramFrame>(&f);
        REQUIRE(d);
        CHECK(d->has_length);
        CHECK(same_bytes(d->data, Bytes{'x'}));
        CHECK(datagram_frame_size(*d) == 3);
        REQUIRE(decode_frame(r, f, err));
        CHECK(std::holds_alternative<PingFrame>(f));
    }
    // 0x30 runs to the end of the packet.
    {
        const Bytes rest{0x30, 'a', 'b', 'c'};
        const Frame f = decode_one(rest);
        const auto* d = std::get_if<DatagramFrame>(&f);
        REQUIRE(d);
        CHECK_FALSE(d->has_length);
        CHECK(same_bytes(d->data, Bytes{'a', 'b', 'c'}));
        CHECK(datagram_frame_size(*d) == 4);
    }
    // A length past the packet's end is a FRAME_ENCODING_ERROR.
    CHECK(decode_error(Bytes{0x31, 0x05, 'a'}, CloseCode::frame_encoding_error).kind == ErrorKind::truncated);
    // 0-RTT and 1-RTT packets only.
    for (const std::uint64_t t : {frame_type::datagram, frame_type::datagram_len}) {
        CHECK(frame_name(t) == "DATAGRAM");
        CHECK(frame_allowed(t, PacketKind::one_rtt));
        CHECK(frame_allowed(t, PacketKind::zero_rtt));
        CHECK_FALSE(frame_allowed(t, PacketKind::initial));
        CHECK_FALSE(frame_allowed(t, PacketKind::handshake));
    }
    CHECK(is_ack_eliciting(DatagramFrame{hi, true}));  // RFC 9221 §5.2
}

TEST_CASE("frame: ACK_FREQUENCY's requested max ack delay must be below 2^14 ms") {
    // 2^14 ms = 16 384 000 us: the first invalid value (RFC 9000 §18.2).
    const Bytes too_long{0x40, 0xaf, 0x01, 0x09, 0x80, 0xfa, 0x00, 0x00, 0x03};
    CHECK(decode_error(too_long, CloseCode::protocol_violation).kind == ErrorKind::bad_value);
    CHECK(contains(decode_error(too_long, CloseCode::protocol_violation).what, "not below 2^14 ms"));
    const Bytes longest{0x40, 0xaf, 0x01, 0x09, 0x80, 0xf9, 0xff, 0xff, 0x03};
    const Frame g = decode_one(longest);
    const auto* f = std::get_if<AckFrequencyFrame>(&g);
    REQUIRE(f);
    CHECK(f->requested_max_ack_delay_us == kAckDelayLimitUs - 1);
    // The encoder refuses what a peer would reject, writing nothing.
    Bytes out(32);
    Writer w(out);
    CHECK_FALSE(encode_frame(w, AckFrequencyFrame{1, 1, kAckDelayLimitUs, 1}));
    CHECK(w.position() == 0);
}

TEST_CASE("frame: every type round-trips and encoded_size is exact") {
    for (const Frame& f : sample_frames()) {
        CAPTURE(f.index());
        const Bytes bytes = encode(f);
        CHECK(bytes.size() == encoded_size(f));
        CHECK(frames_equal(decode_one(bytes), f));
        // Exactly enough room works; one byte less fails and writes nothing.
        Bytes exact(bytes.size());
        Writer w1(exact);
        CHECK(encode_frame(w1, f));
        CHECK(exact == bytes);
        if (!bytes.empty()) {
            Bytes small(bytes.size() - 1, 0xee);
            Writer w2(small);
            CHECK_FALSE(encode_frame(w2, f));
            CHECK(w2.position() == 0);
            CHECK(std::all_of(small.begin(), small.end(), [](std::uint8_t b) { return b == 0xee; }));
        }
    }
}

TEST_CASE("frame: is_ack_eliciting follows RFC 9002 2") {
    for (const Frame& f : sample_frames()) {
        const bool expect = !std::holds_alternative<AckFrame>(f) && !std::holds_alternative<PaddingFrame>(f) &&
                            !std::holds_alternative<ConnectionCloseFrame>(f);
        CHECK(is_ack_eliciting(f) == expect);
    }
    CHECK(is_ack_eliciting(PingFrame{}));
    CHECK(is_ack_eliciting(HandshakeDoneFrame{}));
    CHECK_FALSE(is_ack_eliciting(AckFrame{}));
    CHECK_FALSE(is_ack_eliciting(PaddingFrame{}));
    CHECK_FALSE(is_ack_eliciting(ConnectionCloseFrame{}));
}

TEST_CASE("frame: stream_frame_overhead matches the encoding") {
    static const Bytes data(300, 'x');
    for (std::uint64_t id : {0ull, 63ull, 64ull, 1ull << 40})
        for (std::uint64_t off : {0ull, 100ull, 20000ull, 1ull << 35})
            for (std::size_t len : {0u, 1u, 63u, 64u, 300u}) {
                const StreamFrame s{id, off, std::span(data).first(len), false};
                CHECK(stream_frame_overhead(id, off, len) + len == encoded_size(s));
            }
}

TEST_CASE("frame: PADDING folds a run of zeros") {
    const Bytes bytes{0, 0, 0, 0, 0x01, 0, 0};
    Reader r(bytes);
    Frame f;
    Error err;
    REQUIRE(decode_frame(r, f, err));
    CHECK(std::get<PaddingFrame>(f).length == 4);
    REQUIRE(decode_frame(r, f, err));
    CHECK(std::holds_alternative<PingFrame>(f));
    REQUIRE(decode_frame(r, f, err));
    CHECK(std::get<PaddingFrame>(f).length == 2);
    CHECK(r.empty());
    CHECK(encode(PaddingFrame{0}).empty());
    CHECK(encode(PaddingFrame{1000}) == Bytes(1000, 0));
}

TEST_CASE("frame: ACK ranges decode per RFC 9000 19.3.1") {
    // largest 100, delay 3 units (24us at the default exponent 3), 2 more
    // ranges, first range 10, (gap 5, len 3), (gap 0, len 0).
    const Bytes bytes{0x02, 0x40, 0x64, 0x03, 0x02, 0x0a, 0x05, 0x03, 0x00, 0x00};
    const auto a = std::get<AckFrame>(decode_one(bytes));
    CHECK(a.largest() == 100);
    CHECK(a.ack_delay == 24us);
    CHECK_FALSE(a.ecn);
    CHECK(a.ranges == std::vector<AckRange>{{90, 100}, {80, 83}, {78, 78}});

    // Ranges reaching exactly packet number 0 are fine.
    const auto z = std::get<AckFrame>(decode_one(Bytes{0x02, 0x0a, 0x00, 0x01, 0x02, 0x06, 0x00}));
    CHECK(z.ranges == std::vector<AckRange>{{8, 10}, {0, 0}});
    const auto single = std::get<AckFrame>(decode_one(Bytes{0x02, 0x00, 0x00, 0x00, 0x00}));
    CHECK(single.ranges == std::vector<AckRange>{{0, 0}});
}

TEST_CASE("frame: ACK underflow and limits are rejected") {
    {
        const Error e = decode_error(Bytes{0x02, 0x03, 0x00, 0x00, 0x04});
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "ACK frame: first range 4 exceeds largest acknowledged 3"));
    }
    {  // smallest 8, gap 7: next largest would be 8 - 7 - 2 = -1
        const Error e = decode_error(Bytes{0x02, 0x0a, 0x00, 0x01, 0x02, 0x07, 0x00});
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "ACK frame: gap 7"));
        CHECK(contains(e.what, "underflow"));
    }
    {  // smallest 8, gap 6: largest 0, length 1 would reach -1
        const Error e = decode_error(Bytes{0x02, 0x0a, 0x00, 0x01, 0x02, 0x06, 0x01});
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "ACK frame: range length 1"));
    }
    {  // smallest 0 or 1 leaves no room for another range
        CHECK(decode_error(Bytes{0x02, 0x05, 0x00, 0x01, 0x04, 0x00, 0x00}).kind == ErrorKind::bad_value);
        CHECK(decode_error(Bytes{0x02, 0x05, 0x00, 0x01, 0x05, 0x00, 0x00}).kind == ErrorKind::bad_value);
    }
    {  // range count 40: rejected before anything is allocated or read
        const Error e = decode_error(Bytes{0x02, 0x80, 0x10, 0x00, 0x00, 0x00, 0x28, 0x00});
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "ACK frame: range count 40 exceeds 31"));
    }
    {  // a huge range count with no data behind it
        const Error e = decode_error(Bytes{0x02, 0x05, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00});
        CHECK(e.kind == ErrorKind::bad_value);
    }
    {  // ECN counts truncated
        const Error e = decode_error(Bytes{0x03, 0x05, 0x00, 0x00, 0x00, 0x01, 0x02});
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "ACK_ECN frame: ECN-CE count truncated"));
    }
    {  // largest - first range must not wrap: first range 2^62-1 over largest 5
        const Error e = decode_error(Bytes{0x02, 0x05, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
        CHECK(contains(e.what, "first range 4611686018427387903 exceeds largest acknowledged 5"));
        // Both at the top of the varint range: the range [0, 2^62-1].
        const auto a = std::get<AckFrame>(decode_one(Bytes{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
                                                           0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
        CHECK(a.ranges == std::vector<AckRange>{{0, kVarintMax}});
    }
    {  // ranges truncated
        const Error e = decode_error(Bytes{0x02, 0x40, 0x64, 0x00, 0x02, 0x0a, 0x05, 0x03, 0x00});
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "ACK frame: range length truncated"));
    }
}

TEST_CASE("frame: ACK with exactly kMaxAckRanges ranges, encoder keeps the first 32") {
    AckFrame a;
    for (std::uint64_t i = 0; i < 40; ++i) {
        const std::uint64_t hi = 1000 - 10 * i;
        a.ranges.push_back({hi - 3, hi});
    }
    const Bytes bytes = encode(a);
    const auto d = std::get<AckFrame>(decode_one(bytes));
    REQUIRE(d.ranges.size() == kMaxAckRanges);
    CHECK(std::equal(d.ranges.begin(), d.ranges.end(), a.ranges.begin()));
    CHECK(bytes.size() == encoded_size(a));

    // Range count 31 (32 ranges) decodes; 32 does not.
    Bytes ok{0x02, 0x44, 0x00, 0x00, 31, 0x00};
    for (int i = 0; i < 31; ++i) ok.insert(ok.end(), {0x00, 0x00});
    CHECK(std::get<AckFrame>(decode_one(ok)).ranges.size() == 32);
    Bytes bad{0x02, 0x44, 0x00, 0x00, 32, 0x00};
    for (int i = 0; i < 32; ++i) bad.insert(bad.end(), {0x00, 0x00});
    CHECK(contains(decode_error(bad).what, "range count 32 exceeds 31"));
}

TEST_CASE("frame: encoder refuses frames a peer would reject, writing nothing") {
    std::array<std::uint8_t, 64> buf{};
    auto refuses = [&](const Frame& f) {
        Writer w(buf);
        const bool ok = encode_frame(w, f);
        return !ok && w.position() == 0;
    };
    CHECK(refuses(AckFrame{}));
    AckFrame adjacent;
    adjacent.ranges = {{10, 12}, {8, 9}};  // no gap between 9 and 10
    CHECK(refuses(adjacent));
    AckFrame ascending;
    ascending.ranges = {{1, 2}, {5, 6}};
    CHECK(refuses(ascending));
    AckFrame inverted;
    inverted.ranges = {{5, 2}};
    CHECK(refuses(inverted));
    CHECK(refuses(MaxDataFrame{kVarintMax + 1}));
    CHECK(refuses(MaxStreamsFrame{(1ull << 60) + 1}));
    CHECK(refuses(MaxStreamsFrame{(1ull << 60) + 1, false}));
    CHECK(refuses(StreamsBlockedFrame{(1ull << 60) + 1, true}));
    CHECK(refuses(NewTokenFrame{}));
    static const Bytes token(16, 1), short_token(15, 1), cid21(21, 1), cid1{1};
    CHECK(refuses(NewConnectionIdFrame{1, 0, {}, token}));
    CHECK(refuses(NewConnectionIdFrame{1, 0, cid21, token}));
    CHECK(refuses(NewConnectionIdFrame{1, 2, cid1, token}));
    CHECK(refuses(NewConnectionIdFrame{1, 0, cid1, short_token}));
    CHECK_FALSE(refuses(NewConnectionIdFrame{1, 1, cid1, token}));
    AckFrame ecn_over;
    ecn_over.ranges = {{1, 2}};
    ecn_over.ecn = EcnCounts{kVarintMax + 1, 0, 0};
    CHECK(refuses(ecn_over));
    static const Bytes two{1, 2};
    CHECK(refuses(StreamFrame{0, kVarintMax - 1, two, false}));
    CHECK(refuses(CryptoFrame{kVarintMax, two}));
    CHECK_FALSE(refuses(StreamFrame{0, kVarintMax - 2, two, false}));
}

TEST_CASE("frame: STREAM decodes all eight type variants") {
    for (std::uint8_t type = 0x08; type <= 0x0f; ++type) {
        CAPTURE(int(type));
        Bytes b{type, 0x04};
        if (type & 0x04) b.push_back(0x10);
        if (type & 0x02) b.push_back(0x03);
        b = with(b, "abc");
        const auto s = std::get<StreamFrame>(decode_one(b));
        CHECK(s.stream_id == 4);
        CHECK(s.offset == ((type & 0x04) ? 0x10u : 0u));
        CHECK(s.fin == bool(type & 0x01));
        CHECK(same_bytes(s.data, sv_bytes("abc")));
    }
    {  // no LEN bit: data runs to the end of the packet, swallowing what follows
        const Bytes b = with(Bytes{0x08, 0x00}, "xy\x01\x01");
        const auto s = std::get<StreamFrame>(decode_one(b));
        CHECK(s.data.size() == 4);
    }
    {  // end offset exactly 2^62-1 is allowed
        const Bytes b = with(Bytes{0x0e, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x01}, "z");
        CHECK(std::get<StreamFrame>(decode_one(b)).offset == kVarintMax - 1);
    }
}

TEST_CASE("frame: STREAM and CRYPTO length and offset errors") {
    {
        const Error e = decode_error(with(Bytes{0x0a, 0x04, 0x05}, "ab"));
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "STREAM frame: length 5 past end of packet"));
    }
    {
        const Error e = decode_error(with(Bytes{0x0e, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "z"));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "STREAM frame: offset"));
    }
    {
        const Error e = decode_error(Bytes{0x0e, 0x00, 0xc0});
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "STREAM frame: offset truncated"));
    }
    CHECK(contains(decode_error(Bytes{0x08}).what, "STREAM frame: stream id truncated"));
    {
        const Error e = decode_error(with(Bytes{0x06, 0x00, 0x09}, "abc"));
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "CRYPTO frame: length 9 past end of packet"));
    }
    {
        const Error e = decode_error(with(Bytes{0x06, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "z"));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "CRYPTO frame: offset"));
    }
}

TEST_CASE("frame: CONNECTION_CLOSE variants and reason limits") {
    {
        const Bytes b = with(Bytes{0x1c, 0x0a, 0x08, 0x03}, "bad");
        const auto c = std::get<ConnectionCloseFrame>(decode_one(b));
        CHECK(c.error_code == 0x0a);
        CHECK(c.frame_type == 0x08);
        CHECK(c.reason == "bad");
        CHECK_FALSE(c.application);
    }
    {
        const Bytes b = with(Bytes{0x1d, 0x07, 0x02}, "ok");
        const auto c = std::get<ConnectionCloseFrame>(decode_one(b));
        CHECK(c.error_code == 7);
        CHECK(c.frame_type == 0);
        CHECK(c.reason == "ok");
        CHECK(c.application);
    }
    const std::string long_reason(kMaxReasonLength + 1, 'r');
    {  // 1024 bytes accepted, 1025 rejected before reading them
        Bytes ok{0x1d, 0x00, 0x44, 0x00};
        ok = with(ok, std::string_view(long_reason).substr(0, kMaxReasonLength));
        CHECK(std::get<ConnectionCloseFrame>(decode_one(ok)).reason.size() == kMaxReasonLength);
        const Error e = decode_error(Bytes{0x1d, 0x00, 0x44, 0x01});
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "CONNECTION_CLOSE frame: reason length 1025 exceeds 1024"));
    }
    {  // the encoder cuts an overlong reason
        const ConnectionCloseFrame c{1, 0, long_reason, true};
        const Bytes b = encode(c);
        CHECK(b.size() == encoded_size(c));
        CHECK(std::get<ConnectionCloseFrame>(decode_one(b)).reason.size() == kMaxReasonLength);
    }
    {
        const Error e = decode_error(with(Bytes{0x1c, 0x00, 0x00, 0x05}, "abc"));
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "CONNECTION_CLOSE frame: reason length 5 past end of packet"));
    }
    CHECK(contains(decode_error(Bytes{0x1c, 0x00}).what, "CONNECTION_CLOSE frame: frame type truncated"));
}

TEST_CASE("frame: unknown types, bad varints and truncation") {
    // RFC 9000 §12.4: unknown types are FRAME_ENCODING_ERROR.
    for (const Bytes& b : {Bytes{0x20}, Bytes{0x21}, Bytes{0x3f}, Bytes{0x40, 0x40}, Bytes{0x80, 0x00, 0x40, 0x00}}) {
        const Error e = decode_error(b);
        CHECK(e.kind == ErrorKind::unknown_frame);
        CHECK(contains(e.what, "unknown frame type 0x"));
    }
    CHECK(contains(decode_error(Bytes{0x20}).what, "unknown frame type 0x20"));
    // Non-minimal type encodings (RFC 9000 §12.4: MAY be a PROTOCOL_VIOLATION).
    CHECK(decode_error(Bytes{0x40, 0x01}, CloseCode::protocol_violation).kind == ErrorKind::bad_varint);
    CHECK(decode_error(Bytes{0x40, 0x00}, CloseCode::protocol_violation).kind == ErrorKind::bad_varint);
    CHECK(decode_error(Bytes{0x40, 0x1a, 1, 2, 3, 4, 5, 6, 7, 8}, CloseCode::protocol_violation).kind ==
          ErrorKind::bad_varint);
    CHECK(decode_error(Bytes{}).kind == ErrorKind::truncated);
    CHECK(decode_error(Bytes{0x40}).kind == ErrorKind::truncated);
    CHECK(decode_error(Bytes{0x10, 0x80, 0x01}).kind == ErrorKind::truncated);
    CHECK(contains(decode_error(Bytes{0x10}).what, "MAX_DATA frame: maximum data truncated"));
    CHECK(contains(decode_error(Bytes{0x11, 0x01}).what, "MAX_STREAM_DATA frame"));
    CHECK(contains(decode_error(Bytes{0x12, 0xd0, 0, 0, 0, 0, 0, 0, 1}).what,
                   "MAX_STREAMS frame: maximum streams"));
    CHECK(std::get<MaxStreamsFrame>(decode_one(Bytes{0x12, 0xd0, 0, 0, 0, 0, 0, 0, 0})).maximum == 1ull << 60);

    // Every proper prefix of every (non-padding) frame fails cleanly.
    for (const Frame& f : sample_frames()) {
        if (std::holds_alternative<PaddingFrame>(f)) continue;
        const Bytes bytes = encode(f);
        for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
            Reader r(std::span<const std::uint8_t>(bytes).first(cut));
            Frame out;
            Error err;
            CHECK_FALSE(decode_frame(r, out, err));
            CHECK(err.kind == ErrorKind::truncated);
        }
    }
}

TEST_CASE("frame: random frames round-trip (property)") {
    std::mt19937_64 rng(0xf4a3e'0001);
    Bytes pool(4096);
    for (auto& b : pool) b = static_cast<std::uint8_t>(rng());
    for (int i = 0; i < 20000; ++i) {
        const Frame f = random_frame(rng, pool);
        const Bytes bytes = encode(f);
        REQUIRE(bytes.size() == encoded_size(f));
        REQUIRE(frames_equal(decode_one(bytes), f));
    }
    // Sequences of frames decode back in order (no two PADDINGs in a row: they fold).
    for (int i = 0; i < 300; ++i) {
        std::vector<Frame> frames;
        Bytes buf;
        for (int k = 0, n = 1 + int(rng() % 12); k < n; ++k) {
            Frame f = random_frame(rng, pool);
            if (!frames.empty() && std::holds_alternative<PaddingFrame>(f) &&
                std::holds_alternative<PaddingFrame>(frames.back()))
                continue;
            const Bytes b = encode(f);
            buf.insert(buf.end(), b.begin(), b.end());
            frames.push_back(f);
        }
        Reader r(buf);
        for (const Frame& expect : frames) {
            Frame got;
            Error err;
            REQUIRE(decode_frame(r, got, err));
            REQUIRE(frames_equal(got, expect));
        }
        CHECK(r.empty());
    }
}

TEST_CASE("frame: random bytes never crash, decoded frames re-encode (property)") {
    std::mt19937_64 rng(0xf4a3e'0002);
    static constexpr std::uint8_t kTypes[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                              0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
                                              0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e};
    int decoded = 0, failed = 0;
    for (int i = 0; i < 30000; ++i) {
        Bytes b(rng() % 48);
        for (auto& x : b) {
            // Small values make plausible varints and lengths.
            x = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() : rng() % 8);
        }
        if (!b.empty() && rng() % 4 != 0) b[0] = kTypes[rng() % std::size(kTypes)];
        Reader r(b);
        while (!r.empty()) {
            Frame f;
            Error err{};
            const std::size_t before = r.position();
            if (!decode_frame(r, f, err)) {
                REQUIRE_FALSE(err.what.empty());
                ++failed;
                break;
            }
            REQUIRE(r.position() > before);
            ++decoded;
            if (const auto* a = std::get_if<AckFrame>(&f)) REQUIRE(a->ranges.size() <= kMaxAckRanges);
            const Bytes again = encode(f);
            REQUIRE(frames_equal(decode_one(again), f));
        }
    }
    CHECK(decoded > 10000);
    CHECK(failed > 1000);
}

TEST_CASE("frame: range checks of the v1 frames, each a FRAME_ENCODING_ERROR (RFC 9000 19)") {
    // MAX_STREAMS and STREAMS_BLOCKED, both directions: at most 2^60 (§19.11, §19.14).
    for (std::uint8_t type : {0x12, 0x13, 0x16, 0x17}) {
        CAPTURE(int(type));
        const Bytes over{type, 0xd0, 0, 0, 0, 0, 0, 0, 1};
        CHECK(contains(decode_error(over).what, "maximum streams 1152921504606846977 exceeds 2^60"));
        Bytes limit = over;
        limit.back() = 0;
        const Frame f = decode_one(limit);
        CHECK(type_of(f) == type);
    }
    CHECK(std::get<MaxStreamsFrame>(decode_one(Bytes{0x13, 0x05})).bidi == false);
    CHECK(std::get<StreamsBlockedFrame>(decode_one(Bytes{0x16, 0x05})).bidi == true);
    // NEW_TOKEN: empty token (§19.7), token past the end.
    CHECK(contains(decode_error(Bytes{0x07, 0x00}).what, "NEW_TOKEN frame: empty token"));
    CHECK(decode_error(Bytes{0x07, 0x03, 'a'}).kind == ErrorKind::truncated);
    // NEW_CONNECTION_ID (§19.15): length 1..20, retire_prior_to <= sequence, 16-byte token.
    auto ncid = [](std::uint8_t seq, std::uint8_t rpt, std::uint8_t len, std::size_t token) {
        Bytes b{0x18, seq, rpt, len};
        b.insert(b.end(), len, 0xc1);
        b.insert(b.end(), token, 0x70);
        return b;
    };
    CHECK(std::get<NewConnectionIdFrame>(decode_one(ncid(5, 5, 20, 16))).cid.size() == 20);
    CHECK(std::get<NewConnectionIdFrame>(decode_one(ncid(5, 0, 1, 16))).reset_token.size() == 16);
    CHECK(contains(decode_error(ncid(5, 0, 0, 16)).what, "connection id length 0 outside 1..20"));
    CHECK(contains(decode_error(ncid(5, 0, 21, 16)).what, "connection id length 21 outside 1..20"));
    CHECK(contains(decode_error(ncid(5, 6, 8, 16)).what, "retire prior to 6 exceeds sequence number 5"));
    {
        const Error e = decode_error(ncid(5, 0, 8, 15));
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "stateless reset token"));
    }
    // PATH_CHALLENGE / PATH_RESPONSE: exactly 8 bytes of data.
    CHECK(decode_error(Bytes{0x1a, 1, 2, 3, 4, 5, 6, 7}).kind == ErrorKind::truncated);
    CHECK(contains(decode_error(Bytes{0x1b, 1}).what, "PATH_RESPONSE frame: data"));
    // Decoded frames point into the datagram.
    const Bytes tok{0x07, 0x02, 'x', 'y'};
    CHECK(std::get<NewTokenFrame>(decode_one(tok)).token.data() == tok.data() + 2);
    const Bytes nc = ncid(1, 0, 4, 16);
    const auto n = std::get<NewConnectionIdFrame>(decode_one(nc));
    CHECK(n.cid.data() == nc.data() + 4);
    CHECK(n.reset_token.data() == nc.data() + 8);
}

TEST_CASE("frame: ACK delay with ack_delay_exponent 0, 3 and 20 round-trips") {
    AckFrame a;
    a.ranges = {{5, 9}};
    for (unsigned e : {0u, 3u, 20u}) {
        CAPTURE(e);
        a.ack_delay = std::chrono::microseconds(std::uint64_t{12345} << e);
        Bytes buf(encoded_size(a, e));
        Writer w(buf);
        REQUIRE(encode_frame(w, a, e));
        REQUIRE(w.position() == buf.size());
        // The field holds the delay in units of 2^e microseconds.
        Reader fr(std::span<const std::uint8_t>(buf).subspan(2));
        CHECK(fr.varint() == 12345u);
        Reader r(buf);
        Frame f;
        Error err;
        REQUIRE(decode_frame(r, f, err, e));
        CHECK(std::get<AckFrame>(f).ack_delay == a.ack_delay);
        // Decoded with another exponent, the same bytes mean another delay.
        Reader r3(buf);
        REQUIRE(decode_frame(r3, f, err, e == 3 ? 0 : 3));
        CHECK(std::get<AckFrame>(f).ack_delay != a.ack_delay);
    }
    // Encoding truncates to the resolution: 1001 us is 125 units of 8 us.
    CHECK(encode_ack_delay(1001us, 3) == 125);
    CHECK(decode_ack_delay(125, 3) == 1000us);
    CHECK(encode_ack_delay(1001us, 0) == 1001);
    CHECK(encode_ack_delay(-5us, 3) == 0);
    CHECK(encode_ack_delay(999ns, 0) == 0);
}

TEST_CASE("frame: a hostile ACK delay or exponent saturates without overflow") {
    // The largest microsecond count a Duration (int64 ns) holds.
    constexpr std::int64_t max_us = std::numeric_limits<std::int64_t>::max() / 1000;
    for (unsigned e : {0u, 3u, 20u, 21u, 63u, 64u, 200u, ~0u}) {
        CAPTURE(e);
        const unsigned eff = std::min(e, kMaxAckDelayExponent);  // larger exponents count as 20
        const Duration d = decode_ack_delay(kVarintMax, e);
        CHECK(d > Duration::zero());
        CHECK(std::chrono::duration_cast<std::chrono::microseconds>(d).count() <= max_us);
        CHECK(std::chrono::duration_cast<std::chrono::microseconds>(d).count() > max_us - (std::int64_t{1} << eff));
        // Saturated values re-encode to a field that decodes to themselves.
        CHECK(decode_ack_delay(encode_ack_delay(d, e), e) == d);
        CHECK(decode_ack_delay(1, e) == std::chrono::microseconds(std::int64_t{1} << eff));
        CHECK(encode_ack_delay(Duration::max(), e) == static_cast<std::uint64_t>(max_us) >> eff);
    }
    // Through the frame decoder: largest 5, delay 2^62-1, no more ranges.
    const Bytes b{0x02, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00};
    for (unsigned e : {0u, 3u, 20u, 64u}) {
        Reader r(b);
        Frame f;
        Error err;
        REQUIRE(decode_frame(r, f, err, e));
        const AckFrame& a = std::get<AckFrame>(f);
        CHECK(a.ack_delay == decode_ack_delay(kVarintMax, e));
        const Bytes again = [&] {
            Bytes out(encoded_size(a, e));
            Writer w(out);
            REQUIRE(encode_frame(w, a, e));
            return out;
        }();
        Reader r2(again);
        Frame g;
        REQUIRE(decode_frame(r2, g, err, e));
        CHECK(frames_equal(f, g));
    }
}

TEST_CASE("frame: frames allowed per packet type follow RFC 9000 12.4 Table 3") {
    using K = PacketKind;
    struct Row {
        std::uint64_t type;
        const char* pkts;  // Table 3's "Pkts" column: I, 0, H, 1
    };
    const Row table[] = {
        {0x00, "IH01"}, {0x01, "IH01"}, {0x02, "IH1"}, {0x03, "IH1"}, {0x04, "01"},  {0x05, "01"},
        {0x06, "IH1"},  {0x07, "1"},    {0x08, "01"},  {0x0f, "01"},  {0x10, "01"},  {0x11, "01"},
        {0x12, "01"},   {0x13, "01"},   {0x14, "01"},  {0x15, "01"},  {0x16, "01"},  {0x17, "01"},
        {0x18, "01"},   {0x19, "01"},   {0x1a, "01"},  {0x1b, "1"},   {0x1c, "IH01"}, {0x1d, "01"},
        {0x1e, "1"},
        // draft-ietf-quic-ack-frequency-14 §3: not in 0-RTT; only 1-RTT carries them.
        {0x1f, "1"},    {0xaf, "1"},
    };
    for (const auto& row : table) {
        CAPTURE(row.type);
        const std::string_view p = row.pkts;
        CHECK(frame_allowed(row.type, K::initial) == (p.find('I') != p.npos));
        CHECK(frame_allowed(row.type, K::zero_rtt) == (p.find('0') != p.npos));
        CHECK(frame_allowed(row.type, K::handshake) == (p.find('H') != p.npos));
        CHECK(frame_allowed(row.type, K::one_rtt) == (p.find('1') != p.npos));
    }
    for (std::uint64_t unknown : {0x20ull, 0x21ull, 0xaeull, 0x4000ull})
        for (K k : {K::initial, K::zero_rtt, K::handshake, K::one_rtt}) CHECK_FALSE(frame_allowed(unknown, k));
    // By frame: the type it is encoded with decides.
    CHECK_FALSE(frame_allowed(ConnectionCloseFrame{1, 0, "x", true}, K::handshake));
    CHECK(frame_allowed(ConnectionCloseFrame{1, 0, "x", false}, K::handshake));
    CHECK_FALSE(frame_allowed(StreamFrame{}, K::initial));
    CHECK(frame_allowed(StreamFrame{}, K::zero_rtt));
    CHECK_FALSE(frame_allowed(PathResponseFrame{}, K::zero_rtt));
}

TEST_CASE("frame: type_of and frame_name agree with the encoding") {
    for (const Frame& f : sample_frames()) {
        if (std::holds_alternative<PaddingFrame>(f)) continue;
        const Bytes b = encode(f);
        Reader r(b);
        CHECK(type_of(f) == r.varint());
        CHECK(frame_name(f) != "unknown");
    }
    CHECK(frame_name(0x02) == "ACK");
    CHECK(frame_name(0x03) == "ACK_ECN");
    CHECK(frame_name(0x13) == "MAX_STREAMS");
    CHECK(frame_name(0x0b) == "STREAM");
    CHECK(frame_name(0x1b) == "PATH_RESPONSE");
    CHECK(frame_name(0x1f) == "IMMEDIATE_ACK");
    CHECK(frame_name(0xaf) == "ACK_FREQUENCY");
    CHECK(frame_name(0x20) == "unknown");
    CHECK(frame_name(kVarintMax) == "unknown");
}
