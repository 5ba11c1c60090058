// OffsetBuffer, the ring under the stream buffers: byte-exact through
// wrapping, growth into the huge-page-mapped sizes and shrinking, and a
// geometry (where the ring wraps, hence where STREAM frames split) that
// follows from the buffer's history.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "transport/stream.hpp"

using namespace ndm::transport;

namespace {
std::uint8_t byte_at(std::uint64_t off) { return static_cast<std::uint8_t>(off * 2654435761u >> 13); }

std::vector<std::uint8_t> bytes_from(std::uint64_t off, std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = byte_at(off + i);
    return v;
}

bool holds_pattern(const OffsetBuffer& b) {
    std::vector<std::uint8_t> out(b.size());
    b.read_at(b.begin(), out);
    return out == bytes_from(b.begin(), out.size());
}
}  // namespace

TEST_CASE("OffsetBuffer wraps at its capacity and re-bases the ring when it doubles") {
    OffsetBuffer b;
    b.append(bytes_from(0, 64 << 10));  // the smallest ring, full
    b.drop_front_to(1000);
    b.append(bytes_from(64 << 10, 1000));  // wraps to the ring's start
    CHECK(b.size() == (64u << 10));
    // A run stops where the ring wraps...
    CHECK(b.contiguous(1000, 1 << 20).size() == (64u << 10) - 1000);
    CHECK(b.contiguous(64 << 10, 1 << 20).size() == 1000);
    CHECK(holds_pattern(b));
    // ...and growing puts the first byte at the start of the doubled ring.
    b.append(bytes_from((64 << 10) + 1000, 1));
    CHECK(b.contiguous(1000, 1 << 20).size() == (64u << 10) + 1);
    CHECK(holds_pattern(b));
}

TEST_CASE("OffsetBuffer stays byte-exact while sliding and growing past the mapped sizes") {
    OffsetBuffer b;
    std::uint64_t end = 0;
    std::size_t step = 40000;
    // Grow to 8 MiB (mapped rings start at 2 MiB) with the window sliding, so
    // every growth happens with the data wrapped around the ring.
    while (b.size() < (6u << 20)) {
        b.append(bytes_from(end, step));
        end += step;
        b.drop_front_to(b.begin() + step / 3);
        step += 7919;
        REQUIRE(b.end() == end);
    }
    CHECK(holds_pattern(b));
    // Slide through the whole ring a few times without growing.
    for (int i = 0; i < 200; ++i) {
        b.drop_front_to(b.begin() + 100003);
        b.append(bytes_from(end, 100003));
        end += 100003;
    }
    CHECK(holds_pattern(b));
    // Random-access writes (the receive side's reassembly) across the wrap.
    const std::uint64_t mid = b.begin() + b.size() / 2;
    b.write_at(mid, bytes_from(mid, 300000));
    CHECK(holds_pattern(b));
    auto run = b.contiguous(b.begin(), 1 << 30);
    REQUIRE(!run.empty());
    CHECK(run[0] == byte_at(b.begin()));
    // Cache hints anywhere, in range or not, change nothing.
    b.prefetch(0, 1 << 20);
    b.prefetch(b.begin(), b.size());
    b.prefetch(b.end() - 10, 1 << 20);
    b.prefetch(b.end(), 100);
    CHECK(holds_pattern(b));
    // extend_to leaves new bytes unspecified until written.
    b.extend_to(end + 5000);
    b.write_at(end, bytes_from(end, 5000));
    CHECK(holds_pattern(b));
}

TEST_CASE("OffsetBuffer prepare/commit fills in place, stops at the wrap and grows like append") {
    OffsetBuffer b;
    b.append(bytes_from(0, 60000));
    b.drop_front_to(50000);  // 10 000 bytes stored near the end of the 64 KiB ring
    // Room up to the ring's end only; the rest comes from the next prepare.
    auto room = b.prepare(20000);
    REQUIRE(room.size() == (64u << 10) - 60000);
    auto fill = bytes_from(60000, room.size());
    std::copy(fill.begin(), fill.end(), room.begin());
    b.commit(room.size());
    std::uint64_t end = b.end();
    room = b.prepare(20000 - fill.size());
    REQUIRE(room.size() == 20000 - fill.size());
    fill = bytes_from(end, room.size());
    std::copy(fill.begin(), fill.end(), room.begin());
    b.commit(room.size());
    CHECK(b.end() == 80000);
    CHECK(holds_pattern(b));
    // More than the ring holds: it grows (re-based), and the room is contiguous.
    end = b.end();
    room = b.prepare(200000);
    REQUIRE(room.size() == 200000);
    fill = bytes_from(end, room.size());
    std::copy(fill.begin(), fill.end(), room.begin());
    b.commit(150000);  // less than offered is fine
    CHECK(b.end() == end + 150000);
    CHECK(holds_pattern(b));
    CHECK_THROWS_AS(b.commit(1), std::logic_error);  // one commit per prepare
    (void)b.prepare(10);
    CHECK_THROWS_AS(b.commit(11), std::logic_error);
}

TEST_CASE("A receive buffer read to empty starts again at its ring's start, a send buffer does not") {
    // Receive: 40 KB arrive and are read; the next 40 KB do not wrap at
    // 64 KiB but lie in one run from the ring's start (where the last bytes
    // were, still in the cache).
    RecvStream r;
    const auto first = bytes_from(0, 40000), second = bytes_from(40000, 40000);
    REQUIRE(r.on_frame(0, first, false) == RecvStream::Result::ok);
    r.consume(r.peek().size());
    REQUIRE(r.on_frame(40000, second, false) == RecvStream::Result::ok);
    const auto view = r.peek();
    CHECK(view.size() == 40000);
    CHECK(std::equal(view.begin(), view.end(), second.begin()));
    // Not while bytes are left: 1 byte unread keeps the ring where it is.
    r.consume(view.size() - 1);
    REQUIRE(r.on_frame(80000, bytes_from(80000, 40000), false) == RecvStream::Result::ok);
    CHECK(r.peek().size() == (64u << 10) - 39999);  // the unread byte sits at ring index 39999

    // Send: the ring's geometry decides where STREAM frames split, so an
    // emptied send buffer keeps its position.
    OffsetBuffer b;
    b.append(first);
    b.drop_front_to(40000);
    b.append(second);
    CHECK(b.contiguous(40000, 1 << 20).size() == (64u << 10) - 40000);
}

TEST_CASE("OffsetBuffer uses half its ring once a quarter full, and grows back over the same memory") {
    OffsetBuffer b;
    b.append(bytes_from(0, 4u << 20));  // a burst: a mapped 4 MiB ring
    REQUIRE(b.ring_capacity() == (4u << 20));
    std::uint64_t end = b.end();
    // The burst is acknowledged; 200 KB stay in flight, sliding. The data
    // wraps, and once it lies in the ring's lower quarter the ring halves
    // (down to 512 KiB: 200 KB is not a quarter of that).
    b.drop_front_to(end - 200000);
    for (int i = 0; i < 100; ++i) {
        b.append(bytes_from(end, 50000));
        end += 50000;
        b.drop_front_to(end - 200000);
        REQUIRE(holds_pattern(b));
    }
    CHECK(b.ring_capacity() == (512u << 10));
    CHECK(b.contiguous(b.begin(), 1 << 30).size() == b.size());  // sliding, not wrapped right now
    // A larger burst grows it again, byte-exact.
    b.append(bytes_from(end, 3u << 20));
    end += 3u << 20;
    CHECK(b.ring_capacity() == (4u << 20));
    CHECK(holds_pattern(b));
    CHECK(b.end() == end);
}

TEST_CASE("OffsetBuffer stays byte-exact through random growing and shrinking") {
    std::mt19937_64 rng(11);
    OffsetBuffer b;
    std::uint64_t end = 0;
    std::size_t shrinks = 0, grows = 0;
    for (int step = 0; step < 3000; ++step) {
        const std::size_t before = b.ring_capacity();
        // Phases of large and small working sets, by prepare/commit or append.
        const std::size_t scale = (step / 500) % 2 ? 300000 : 3000;
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, scale)(rng);
        if (rng() % 2) {
            b.append(bytes_from(end, n));
            end += n;
        } else {
            auto room = b.prepare(n);
            const auto fill = bytes_from(end, room.size());
            std::copy(fill.begin(), fill.end(), room.begin());
            b.commit(room.size());
            end += room.size();
        }
        const std::uint64_t keep = std::uniform_int_distribution<std::uint64_t>(0, 2 * scale)(rng);
        b.drop_front_to(end - std::min(end, keep));
        REQUIRE(b.end() == end);
        REQUIRE(b.size() <= b.ring_capacity());
        REQUIRE(holds_pattern(b));
        shrinks += b.ring_capacity() < before;
        grows += b.ring_capacity() > before;
    }
    CHECK(shrinks >= 3);
    CHECK(grows >= 3);
}
