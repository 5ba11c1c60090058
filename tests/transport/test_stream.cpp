// Stream send/receive buffers: reassembly is byte-exact whatever the order,
// duplication or overlap of frames; the send side retransmits exactly what
// was lost and not acknowledged.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "transport/stream.hpp"

using namespace ndm::transport;

namespace {
std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}
}  // namespace

TEST_CASE("RecvStream reassembles shuffled, overlapping, duplicated frames byte-exact") {
    auto data = pattern(200000, 7);
    std::mt19937_64 rng(42);
    struct Piece { std::size_t off, len; };
    std::vector<Piece> pieces;
    for (std::size_t off = 0; off < data.size();) {
        std::size_t len = std::min<std::size_t>(1 + rng() % 3000, data.size() - off);
        pieces.push_back({off, len});
        // Overlapping re-sends starting inside this piece.
        if (rng() % 4 == 0) pieces.push_back({off + len / 2, std::min(len, data.size() - off - len / 2)});
        off += len;
    }
    auto dups = pieces;
    pieces.insert(pieces.end(), dups.begin(), dups.begin() + static_cast<std::ptrdiff_t>(dups.size() / 3));
    std::shuffle(pieces.begin(), pieces.end(), rng);

    RecvStream rs;
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> buf(4096);
    for (const auto& p : pieces) {
        bool fin = p.off + p.len == data.size();
        auto r = rs.on_frame(p.off, {data.data() + p.off, p.len}, fin);
        CHECK(r != RecvStream::Result::final_size_error);
        // Read a little at a time, interleaved with arrivals.
        std::size_t n = rs.read(std::span(buf).first(1 + rng() % buf.size()));
        out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    }
    while (std::size_t n = rs.read(buf)) out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK(rs.finished());
    CHECK(out == data);
}

namespace {
// Reads everything readable from rs into out.
void drain(RecvStream& rs, std::vector<std::uint8_t>& out) {
    std::vector<std::uint8_t> buf(8192);
    while (std::size_t n = rs.read(buf)) out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
}

// What a RecvStream may hold (RecvStream's class comment): a ring of at most
// twice kSparseFactor times the most bytes it has held (it doubles, and
// keeps its memory for reuse when it empties), or its first 64 KiB, plus
// far chunks of at most twice their bytes and a node each.
class MemoryBound {
public:
    bool holds(const RecvStream& rs, std::size_t far_chunks_bound) {
        peak_ = std::max<std::size_t>(peak_, rs.held());
        const std::size_t ring = std::max<std::size_t>(OffsetBuffer::kDefaultMinRing, 2 * RecvStream::kSparseFactor * peak_);
        return rs.memory() <= ring + 2 * rs.held() + 64 * far_chunks_bound;
    }

private:
    std::size_t peak_ = 0;
};
}  // namespace

TEST_CASE("RecvStream: sparse bytes far apart cost memory in proportion to the bytes, not their span") {
    // A peer's 1-byte STREAM frames 2 MiB apart once mapped a huge page each.
    const auto data = pattern(15u << 20, 9);
    RecvStream rs;
    for (std::uint64_t k = 1; k <= 7; ++k) {
        const std::uint64_t off = k * (2u << 20);
        CHECK(rs.on_frame(off, {data.data() + off, 1}, false) == RecvStream::Result::ok);
    }
    CHECK(rs.held() == 7);
    CHECK(rs.memory() < 2048);
    CHECK(rs.readable() == 0);
    // The rest arrives in order, 1452 bytes a frame: every byte reads back.
    std::vector<std::uint8_t> out;
    MemoryBound bound;
    for (std::size_t off = 0; off < data.size(); off += 1452) {
        const std::size_t n = std::min<std::size_t>(1452, data.size() - off);
        rs.on_frame(off, {data.data() + off, n}, off + n == data.size());
        REQUIRE(bound.holds(rs, 7));
        if (off % (1u << 20) < 1452) drain(rs, out);  // a reader that keeps up, once a MiB
    }
    drain(rs, out);
    CHECK(rs.finished());
    CHECK(out == data);
}

TEST_CASE("RecvStream: a far range filled a byte at a time, backwards, stays in few chunks") {
    const std::size_t far = 1u << 20, n = 100'000;
    const auto data = pattern(far + n, 10);
    RecvStream rs;
    for (std::size_t i = far + n; i-- > far;) rs.on_frame(i, {data.data() + i, 1}, false);
    CHECK(rs.held() == n);
    CHECK(rs.readable() == 0);
    CHECK(MemoryBound().holds(rs, 2 * 17));  // O(log n) chunks: 2 log2(100000)
    CHECK(rs.memory() < 4 * n);
    CHECK(rs.on_frame(0, {data.data(), far}, false) == RecvStream::Result::ok);
    std::vector<std::uint8_t> out;
    drain(rs, out);
    CHECK(rs.held() == 0);
    CHECK(out == data);
}

TEST_CASE("RecvStream: random sparse and dense arrivals: memory follows the bytes held, delivery byte-exact") {
    const auto data = pattern(4u << 20, 11);
    std::mt19937_64 rng(12);
    RecvStream rs;
    std::vector<std::uint8_t> out;
    MemoryBound bound;
    for (int i = 0; i < 4000; ++i) {
        const std::size_t off = rng() % data.size();
        const std::size_t len = std::min<std::size_t>(rng() % 2 ? 1 : 1 + rng() % 1452, data.size() - off);
        rs.on_frame(off, {data.data() + off, len}, false);
        if (i % 64 == 0) drain(rs, out);
        REQUIRE(bound.holds(rs, 4000));
    }
    for (std::size_t off = 0; off < data.size(); off += 1452) {
        const std::size_t n = std::min<std::size_t>(1452, data.size() - off);
        rs.on_frame(off, {data.data() + off, n}, off + n == data.size());
    }
    drain(rs, out);
    CHECK(rs.finished());
    CHECK(out == data);
}

TEST_CASE("RecvStream peek shows only the in-order prefix, consume takes it") {
    auto data = pattern(5000, 9);
    RecvStream r;
    auto frame = [&](std::size_t off, std::size_t len, bool fin = false) {
        return r.on_frame(off, std::span(data).subspan(off, len), fin);
    };
    REQUIRE(frame(3000, 2000, true) == RecvStream::Result::ok);  // a gap first
    CHECK(r.peek().empty());
    REQUIRE(frame(0, 1000) == RecvStream::Result::ok);
    auto view = r.peek();
    REQUIRE(view.size() == 1000);
    CHECK(std::equal(view.begin(), view.end(), data.begin()));
    r.consume(400);
    CHECK(r.readable() == 600);
    CHECK_THROWS_AS(r.consume(601), std::logic_error);
    REQUIRE(frame(1000, 2000) == RecvStream::Result::ok);  // fills the gap
    view = r.peek();
    REQUIRE(view.size() == 4600);
    CHECK(std::equal(view.begin(), view.end(), data.begin() + 400));
    CHECK_FALSE(r.finished());
    r.consume(view.size());
    CHECK(r.finished());
    CHECK(r.peek().empty());
}

TEST_CASE("RecvStream keeps the first copy of a byte and enforces the final size") {
    RecvStream rs;
    std::vector<std::uint8_t> a(10, 'a'), b(10, 'b');
    CHECK(rs.on_frame(0, a, false) == RecvStream::Result::ok);
    CHECK(rs.on_frame(0, b, false) == RecvStream::Result::duplicate);
    CHECK(rs.on_frame(5, b, true) == RecvStream::Result::ok);  // final size 15
    CHECK(rs.on_frame(10, b, false) == RecvStream::Result::final_size_error);  // beyond final size
    CHECK(rs.on_frame(0, a, true) == RecvStream::Result::final_size_error);    // final size changed
    std::vector<std::uint8_t> out(32);
    REQUIRE(rs.read(out) == 15);
    CHECK(std::string(out.begin(), out.begin() + 15) == "aaaaaaaaaabbbbb");
    CHECK(rs.finished());
}

TEST_CASE("RecvStream rejects a FIN below data already received") {
    RecvStream rs;
    std::vector<std::uint8_t> a(10, 'a');
    CHECK(rs.on_frame(100, a, false) == RecvStream::Result::ok);
    CHECK(rs.on_frame(0, a, true) == RecvStream::Result::final_size_error);
}

TEST_CASE("SendStream sends new data, retransmits lost ranges minus acked ones, then FIN") {
    SendStream ss(1 << 20);
    auto data = pattern(10000, 3);
    REQUIRE(ss.write(data) == data.size());
    ss.finish();
    std::vector<SendStream::Chunk> sent;
    while (auto c = ss.next_chunk(1000, UINT64_MAX)) {
        ss.on_sent(*c);
        sent.push_back(*c);
    }
    REQUIRE(sent.size() == 10);
    CHECK(sent.back().fin);
    CHECK(ss.sent_end() == 10000);
    CHECK_FALSE(ss.has_pending(UINT64_MAX));

    // Lose chunks 2..4, but chunk 3 turns out to be acknowledged after all.
    for (int i = 0; i < 10; ++i) {
        if (i >= 2 && i <= 4) continue;
        ss.on_acked(sent[i].offset, sent[i].data.size(), sent[i].fin);
    }
    for (int i = 2; i <= 4; ++i) ss.on_lost(sent[i].offset, sent[i].data.size(), false);
    ss.on_acked(sent[3].offset, sent[3].data.size(), false);

    auto r1 = ss.next_chunk(5000, UINT64_MAX);
    REQUIRE(r1);
    CHECK(r1->retransmission);
    CHECK(r1->offset == 2000);
    CHECK(r1->data.size() == 1000);
    CHECK(std::equal(r1->data.begin(), r1->data.end(), data.begin() + 2000));
    ss.on_sent(*r1);
    auto r2 = ss.next_chunk(5000, UINT64_MAX);
    REQUIRE(r2);
    CHECK(r2->offset == 4000);
    CHECK(r2->data.size() == 1000);
    ss.on_sent(*r2);
    CHECK_FALSE(ss.next_chunk(5000, UINT64_MAX));
    ss.on_acked(2000, 1000, false);
    ss.on_acked(4000, 1000, false);
    CHECK(ss.all_acked());
}

TEST_CASE("SendStream respects flow control and its buffer limit") {
    SendStream ss(4096);
    auto data = pattern(10000, 5);
    CHECK(ss.write(data) == 4096);
    CHECK(ss.capacity() == 0);
    auto c = ss.next_chunk(10000, 1000);
    REQUIRE(c);
    CHECK(c->data.size() == 1000);
    ss.on_sent(*c);
    CHECK_FALSE(ss.next_chunk(10000, 1000));
    CHECK(ss.blocked_at(1000));
    CHECK(ss.has_pending(2000));
    ss.on_acked(0, 1000, false);
    CHECK(ss.capacity() == 1000);  // acknowledged bytes free the buffer
}

TEST_CASE("SendStream::has_pending says exactly whether next_chunk has a chunk, through random sends, ACKs and losses") {
    // has_pending answers the loss-free case without next_chunk(); the two
    // must never disagree (a driver told of work it cannot find would spin).
    std::mt19937_64 rng(17);
    for (int run = 0; run < 50; ++run) {
        SendStream ss(1 << 16);
        std::vector<SendStream::Chunk> in_flight;
        std::uint64_t limit = 0;
        for (int step = 0; step < 400; ++step) {
            switch (rng() % 6) {
            case 0:
                if (!ss.finished()) ss.write(pattern(1 + rng() % 3000, static_cast<std::uint32_t>(step)));
                break;
            case 1: limit += rng() % 4000; break;
            case 2:
            case 3:
                if (auto c = ss.next_chunk(1 + rng() % 1500, limit)) {
                    ss.on_sent(*c);
                    in_flight.push_back(*c);
                }
                break;
            default:
                if (in_flight.empty()) break;
                const std::size_t i = rng() % in_flight.size();
                const auto c = in_flight[i];
                in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
                if (rng() % 4 == 0) ss.on_lost(c.offset, c.data.size(), c.fin);
                else ss.on_acked(c.offset, c.data.size(), c.fin);
            }
            if (rng() % 100 == 0) ss.finish();  // often with everything sent: a FIN alone
            for (const std::uint64_t l : {limit, ss.sent_end(), std::uint64_t{UINT64_MAX}})
                REQUIRE(ss.has_pending(l) == ss.next_chunk(1, l).has_value());
        }
    }
}

TEST_CASE("SendStream: a lost FIN alone is resent as an empty frame") {
    SendStream ss(100);
    std::vector<std::uint8_t> d(10, 1);
    ss.write(d);
    auto c = ss.next_chunk(100, UINT64_MAX);
    ss.on_sent(*c);
    ss.finish();
    auto f = ss.next_chunk(100, UINT64_MAX);
    REQUIRE(f);
    CHECK(f->fin);
    CHECK(f->data.empty());
    ss.on_sent(*f);
    ss.on_acked(0, 10, false);
    ss.on_lost(10, 0, true);
    auto again = ss.next_chunk(100, UINT64_MAX);
    REQUIRE(again);
    CHECK(again->fin);
    CHECK(again->retransmission);
    ss.on_sent(*again);
    ss.on_acked(10, 0, true);
    CHECK(ss.all_acked());
}

TEST_CASE("OffsetBuffer wraps around its ring and grows without losing bytes") {
    OffsetBuffer b;
    auto data = pattern(300000, 11);
    std::mt19937_64 rng(5);
    std::size_t written = 0, dropped = 0;
    // Keep ~40 KB live so the 64 KiB ring wraps many times, then grow it.
    while (written < data.size()) {
        std::size_t n = std::min<std::size_t>(1 + rng() % 9000, data.size() - written);
        if (written > 200000) n = std::min<std::size_t>(n * 4, data.size() - written);
        b.append(std::span(data).subspan(written, n));
        written += n;
        std::uint64_t keep = written > 200000 ? 150000 : 40000;
        if (b.size() > keep) {
            // Everything still held must read back exactly, also across the wrap.
            std::vector<std::uint8_t> out(b.size());
            b.read_at(b.begin(), out);
            CHECK(std::equal(out.begin(), out.end(), data.begin() + static_cast<std::ptrdiff_t>(b.begin())));
            auto c = b.contiguous(b.begin(), b.size());
            CHECK(c.size() <= b.size());
            CHECK(std::equal(c.begin(), c.end(), data.begin() + static_cast<std::ptrdiff_t>(b.begin())));
            dropped = static_cast<std::size_t>(b.end() - keep / 2);
            b.drop_front_to(dropped);
        }
    }
    CHECK(b.end() == data.size());
    CHECK(b.begin() == dropped);
}
