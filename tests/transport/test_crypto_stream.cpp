// CryptoStream on its own (no connection, no TLS): receive-side reassembly
// and its buffer cap (RFC 9000 §7.5), send-side CRYPTO frames written through
// a real FrameSink and decoded back, retransmission of what was lost and not
// acknowledged, and key discard (RFC 9001 §4.9).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <variant>
#include <vector>

#include "transport/crypto_stream.hpp"

using namespace ndm;
using namespace ndm::transport;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes pattern(std::size_t n, std::uint32_t seed) {
    Bytes v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

// Everything readable, consumed in the runs readable() offers.
Bytes drain(CryptoStream& cs) {
    Bytes out;
    for (auto run = cs.readable(); !run.empty(); run = cs.readable()) {
        out.insert(out.end(), run.begin(), run.end());
        cs.consume(run.size());
    }
    return out;
}

// One frame written into a packet of `room` bytes, decoded back from the wire.
struct Sent {
    std::uint64_t offset = 0;
    Bytes data;
    sent::Crypto record{};
    std::size_t encoded = 0;  // bytes the frame took
};

// Writes one frame into `room` bytes; checks that the wire, the loss
// recovery record and the trace all say the same.
std::optional<Sent> send_one(CryptoStream& cs, std::size_t room) {
    Bytes buf(room);
    wire::Writer w(buf);
    SentFrames records;
    std::vector<trace::Frame> traced;
    FrameSink sink(w, records, &traced);
    if (!cs.write_frame(sink)) {
        CHECK(w.position() == 0);
        CHECK(records.empty());
        return std::nullopt;
    }
    CHECK(sink.eliciting());
    wire::Reader r{std::span(buf).first(w.position())};
    wire::Frame f;
    wire::Error err;
    REQUIRE(wire::decode_frame(r, f, err));
    REQUIRE(r.empty());  // exactly one frame
    const auto* c = std::get_if<wire::CryptoFrame>(&f);
    REQUIRE(c != nullptr);
    CHECK_FALSE(c->data.empty());
    REQUIRE(records.size() == 1);
    const auto* rec = std::get_if<sent::Crypto>(&records[0]);
    REQUIRE(rec != nullptr);
    CHECK(rec->offset == c->offset);
    CHECK(rec->length == c->data.size());
    REQUIRE(traced.size() == 1);
    CHECK(traced[0].type == trace::Frame::Type::crypto);
    CHECK(traced[0].offset == c->offset);
    CHECK(traced[0].length == c->data.size());
    return Sent{c->offset, Bytes(c->data.begin(), c->data.end()), *rec, w.position()};
}

// Frames until nothing is pending, each into `room` bytes.
std::vector<Sent> send_all(CryptoStream& cs, std::size_t room) {
    std::vector<Sent> out;
    while (cs.has_pending()) {
        auto s = send_one(cs, room);
        REQUIRE(s.has_value());
        out.push_back(*s);
    }
    CHECK_FALSE(send_one(cs, room).has_value());
    return out;
}

// The [offset, offset + length) ranges the frames carried, checked against data.
std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges(const std::vector<Sent>& frames, const Bytes& data) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const auto& s : frames) {
        REQUIRE(s.offset + s.data.size() <= data.size());
        CHECK(std::equal(s.data.begin(), s.data.end(), data.begin() + static_cast<std::ptrdiff_t>(s.offset)));
        out.emplace_back(s.offset, s.offset + s.data.size());
    }
    return out;
}

using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

}  // namespace

// ---- receive side

TEST_CASE("CryptoStream hands in-order frames to readable() and consume() takes them") {
    const Bytes data = pattern(3000, 1);
    CryptoStream cs;
    CHECK(cs.readable().empty());
    CHECK(cs.on_frame(0, std::span(data).first(1000)) == CryptoStream::Result::ok);
    REQUIRE(cs.readable().size() == 1000);
    cs.consume(400);
    CHECK(cs.readable().size() == 600);
    CHECK(cs.on_frame(1000, std::span(data).subspan(1000)) == CryptoStream::Result::ok);
    Bytes got(data.begin(), data.begin() + 400);
    const Bytes rest = drain(cs);
    got.insert(got.end(), rest.begin(), rest.end());
    CHECK(got == data);
    CHECK_THROWS_AS(cs.consume(1), std::logic_error);
}

TEST_CASE("CryptoStream reassembles shuffled, overlapping frames byte-exact") {
    const Bytes data = pattern(20000, 2);
    std::mt19937_64 rng(3);
    struct Piece { std::size_t off, len; };
    std::vector<Piece> pieces;
    for (std::size_t off = 0; off < data.size();) {
        const std::size_t len = std::min<std::size_t>(1 + rng() % 1500, data.size() - off);
        pieces.push_back({off, len});
        // A retransmission that straddles this frame and the next.
        if (rng() % 3 == 0) pieces.push_back({off + len / 2, std::min(len, data.size() - off - len / 2)});
        off += len;
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);

    CryptoStream cs;
    Bytes out;
    for (const auto& p : pieces) {
        REQUIRE(cs.on_frame(p.off, std::span(data).subspan(p.off, p.len)) == CryptoStream::Result::ok);
        const Bytes got = drain(cs);  // TLS reads as soon as bytes are in order
        out.insert(out.end(), got.begin(), got.end());
    }
    CHECK(out == data);
}

TEST_CASE("CryptoStream keeps the bytes first received when duplicates differ, and ignores consumed ones") {
    const Bytes data = pattern(100, 4);
    const Bytes other = pattern(100, 5);
    CryptoStream cs;
    CHECK(cs.on_frame(50, std::span(data).subspan(50)) == CryptoStream::Result::ok);
    // The same offsets again, other bytes (a peer violating §2.2): ignored where they overlap.
    CHECK(cs.on_frame(0, other) == CryptoStream::Result::ok);
    Bytes want(other.begin(), other.begin() + 50);
    want.insert(want.end(), data.begin() + 50, data.end());
    CHECK(drain(cs) == want);
    // Entirely below the consumed point: nothing to read.
    CHECK(cs.on_frame(0, data) == CryptoStream::Result::ok);
    CHECK(cs.on_frame(10, {}) == CryptoStream::Result::ok);
    CHECK(cs.readable().empty());
}

TEST_CASE("CryptoStream refuses a frame ending more than max_buffered past the consumed point, buffering nothing") {
    constexpr std::size_t kCap = 8192;
    const Bytes data = pattern(kCap + 1, 6);
    CryptoStream cs({.max_buffered = kCap});
    // A hole at 0 (the frame with the first bytes is lost): everything else waits.
    CHECK(cs.on_frame(100, std::span(data).subspan(100, kCap - 100)) == CryptoStream::Result::ok);
    CHECK(cs.on_frame(kCap - 1, std::span(data).subspan(kCap - 1, 2)) == CryptoStream::Result::buffer_exceeded);
    CHECK(cs.on_frame(kCap + 10, std::span(data).first(1)) == CryptoStream::Result::buffer_exceeded);
    CHECK(cs.readable().empty());
    CHECK(cs.on_frame(0, std::span(data).first(100)) == CryptoStream::Result::ok);
    // Nothing of the refused frame was kept: the bytes end at the cap.
    CHECK(drain(cs) == Bytes(data.begin(), data.begin() + kCap));
    // Consuming moves the window: the frame refused before now fits.
    CHECK(cs.on_frame(kCap - 1, std::span(data).subspan(kCap - 1, 2)) == CryptoStream::Result::ok);
    CHECK(drain(cs) == Bytes{data[kCap]});
}

TEST_CASE("CryptoStream refuses frames ending past 2^62-1 whatever its cap, and caps below 4096 bytes") {
    const Bytes two{1, 2};
    // (Frames that fit are not tried here: they would buffer up to 2^62 bytes.)
    CryptoStream cs({.max_buffered = SIZE_MAX});
    CHECK(cs.on_frame(wire::kVarintMax - 1, two) == CryptoStream::Result::buffer_exceeded);
    CHECK(cs.on_frame(UINT64_MAX - 1, two) == CryptoStream::Result::buffer_exceeded);  // offset + length wraps
    CryptoStream capped;
    CHECK(capped.on_frame(wire::kVarintMax - 1, two) == CryptoStream::Result::buffer_exceeded);
    CHECK_THROWS_AS(CryptoStream({.max_buffered = kMinCryptoBuffer - 1}), std::invalid_argument);
}

// ---- send side

TEST_CASE("CryptoStream splits its data into CRYPTO frames that fill each packet") {
    const Bytes data = pattern(5000, 7);
    CryptoStream cs;
    CHECK_FALSE(cs.has_pending());
    cs.write(std::span(data).first(2000));
    cs.write(std::span(data).subspan(2000));
    CHECK(cs.has_pending());
    for (std::size_t room : {1200u, 67u, 66u, 65u, 64u, 7u}) {
        INFO("room " << room);
        CryptoStream s;
        s.write(data);
        const auto frames = send_all(s, room);
        std::uint64_t next = 0;
        for (const auto& f : frames) {
            CHECK(f.offset == next);  // new data in order, no gaps
            next += f.data.size();
            CHECK(f.encoded <= room);
            // As large as fits: one more data byte would not.
            if (next < data.size())
                CHECK(wire::encoded_size(wire::CryptoFrame{f.offset, std::span(data).subspan(f.offset, f.data.size() + 1)}) > room);
        }
        CHECK(next == data.size());
        ranges(frames, data);
    }
    // A packet without room for one data byte gets nothing.
    CHECK_FALSE(send_one(cs, 3).has_value());  // type, offset 0, length
    CHECK(cs.has_pending());
}

TEST_CASE("CryptoStream resends a lost range first, at its original offsets") {
    Bytes data = pattern(3000, 8);
    CryptoStream cs;
    cs.write(std::span(data).first(1000));
    const auto first = send_all(cs, 400);
    REQUIRE(first.size() >= 3);
    cs.write(std::span(data).subspan(1000));  // more TLS output meanwhile
    cs.on_lost(first[1].record);
    CHECK(cs.has_pending());
    // Room for the whole lost range: exactly it, not merged with new data.
    const auto re = send_one(cs, 1200);
    REQUIRE(re.has_value());
    CHECK(re->offset == first[1].offset);
    CHECK(re->data == first[1].data);
    const auto fresh = send_one(cs, 1200);
    REQUIRE(fresh.has_value());
    CHECK(fresh->offset == 1000);
}

TEST_CASE("CryptoStream splits a lost range over smaller packets at the same offsets") {
    const Bytes data = pattern(1000, 9);
    CryptoStream cs;
    cs.write(data);
    const auto whole = send_all(cs, 1200);
    REQUIRE(whole.size() == 1);
    cs.on_lost(whole[0].record);
    const auto parts = send_all(cs, 300);
    const Ranges got = ranges(parts, data);
    REQUIRE(got.size() >= 4);
    CHECK(got.front().first == 0);
    CHECK(got.back().second == 1000);
    for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i].first == got[i - 1].second);
}

TEST_CASE("CryptoStream does not resend bytes acknowledged in a retransmission when the original is lost again") {
    const Bytes data = pattern(900, 10);
    CryptoStream cs;
    cs.write(data);
    const auto original = send_all(cs, 1200);  // one frame [0, 900)
    REQUIRE(original.size() == 1);
    // Declared lost, resent in three packets; the middle one is acknowledged.
    cs.on_lost(original[0].record);
    const auto re = send_all(cs, 320);
    REQUIRE(re.size() == 3);
    cs.on_acked(re[1].record);
    cs.on_lost(re[0].record);
    cs.on_lost(re[2].record);
    // The original's loss reported again (a late, duplicate detection) changes nothing.
    cs.on_lost(original[0].record);
    const Ranges again = ranges(send_all(cs, 1200), data);
    CHECK(again == Ranges{{re[0].offset, re[1].offset}, {re[2].offset, 900}});
    // Lost first, then acknowledged through the retransmission: not resent.
    cs.on_lost(re[2].record);
    cs.on_acked(re[2].record);
    CHECK_FALSE(cs.has_pending());
    CHECK_FALSE(cs.all_acked());
}

TEST_CASE("CryptoStream mark_all_lost resends only the sent, unacknowledged bytes") {
    const Bytes data = pattern(1500, 11);
    CryptoStream cs;
    cs.write(std::span(data).first(1200));
    const auto frames = send_all(cs, 420);
    REQUIRE(frames.size() == 3);
    cs.on_acked(frames[1].record);
    cs.write(std::span(data).subspan(1200));  // not yet sent: new data, after the resends
    cs.mark_all_lost();
    const Ranges probe = ranges(send_all(cs, 2000), data);
    CHECK(probe == Ranges{{0, frames[1].offset}, {frames[2].offset, 1200}, {1200, 1500}});
    // A second probe resends what is still unacknowledged, as one frame.
    cs.on_acked(frames[0].record);
    cs.mark_all_lost();
    CHECK(ranges(send_all(cs, 2000), data) == Ranges{{frames[2].offset, 1500}});
}

TEST_CASE("CryptoStream is all_acked once every written byte is acknowledged, in any order") {
    const Bytes data = pattern(1000, 12);
    CryptoStream cs;
    CHECK(cs.all_acked());  // nothing written
    cs.write(data);
    CHECK_FALSE(cs.all_acked());
    const auto frames = send_all(cs, 300);
    REQUIRE(frames.size() >= 3);
    for (std::size_t i = frames.size(); i-- > 1;) {
        cs.on_acked(frames[i].record);
        CHECK_FALSE(cs.all_acked());
    }
    cs.on_acked(frames[0].record);
    CHECK(cs.all_acked());
    CHECK_FALSE(cs.has_pending());
    cs.mark_all_lost();
    CHECK_FALSE(cs.has_pending());
    cs.write(std::span(data).first(1));
    CHECK_FALSE(cs.all_acked());
}

TEST_CASE("CryptoStream discard drops both directions: later frames, acks and losses are ignored, writes throw") {
    const Bytes data = pattern(500, 13);
    CryptoStream cs;
    cs.write(data);
    const auto frames = send_all(cs, 200);
    cs.on_lost(frames[0].record);
    REQUIRE(cs.on_frame(0, std::span(data).first(10)) == CryptoStream::Result::ok);
    REQUIRE_FALSE(cs.readable().empty());

    cs.discard();
    CHECK(cs.discarded());
    CHECK_FALSE(cs.has_pending());
    CHECK_FALSE(send_one(cs, 1200).has_value());
    CHECK(cs.all_acked());
    CHECK(cs.readable().empty());
    CHECK(cs.on_frame(10, data) == CryptoStream::Result::ok);
    CHECK(cs.on_frame(UINT64_MAX, data) == CryptoStream::Result::ok);
    CHECK(cs.readable().empty());
    cs.on_acked(frames[1].record);
    cs.on_lost(frames[1].record);
    cs.mark_all_lost();
    CHECK_FALSE(cs.has_pending());
    cs.consume(0);
    CHECK_THROWS_AS(cs.consume(1), std::logic_error);
    CHECK_THROWS_AS(cs.write(data), std::logic_error);
}
