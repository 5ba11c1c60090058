// Stream sinks (Connection::set_stream_sink): a stream's in-order bytes go to
// the application while the packet that carried them is processed, through
// no receive buffer.
#include <doctest/doctest.h>

#include <vector>

#include "connection_pair.hpp"
#include "ndm/workload.hpp"
#include "transport/stream.hpp"

using namespace ndm;

namespace {

// Collects what a sink is given, checking that the offsets run on without gaps.
struct Collector {
    std::vector<std::uint8_t> bytes;
    bool contiguous = true;
    void operator()(std::uint64_t offset, std::span<const std::uint8_t> b) {
        contiguous = contiguous && offset == bytes.size();
        bytes.insert(bytes.end(), b.begin(), b.end());
    }
};

std::vector<std::uint8_t> pattern(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    workload::Payload(5).fill(0, v);
    return v;
}

}  // namespace

TEST_CASE("RecvStream: a sink takes in-order bytes at once and bytes beyond a gap once it fills") {
    transport::RecvStream r;
    const auto data = pattern(3000);
    const std::span<const std::uint8_t> all(data);
    r.on_frame(0, all.first(500), false);  // readable before the sink: handed over when it is set
    Collector got;
    CHECK(r.set_sink([&](std::uint64_t o, std::span<const std::uint8_t> b) { got(o, b); }) == 500);
    CHECK(r.has_sink());
    CHECK(r.readable() == 0);

    CHECK(r.on_frame(500, all.subspan(500, 500), false) == transport::RecvStream::Result::ok);
    CHECK(r.take_sunk() == 500);
    // Beyond a gap: kept until [1000, 1500) arrives, then all of it in order.
    CHECK(r.on_frame(1500, all.subspan(1500, 1000), false) == transport::RecvStream::Result::ok);
    CHECK(r.take_sunk() == 0);
    CHECK(got.bytes.size() == 1000);
    CHECK(r.on_frame(1000, all.subspan(1000, 500), false) == transport::RecvStream::Result::ok);
    CHECK(r.take_sunk() == 1500);
    // A duplicate of what the sink took is not given again; the FIN ends it.
    CHECK(r.on_frame(200, all.subspan(200, 600), false) == transport::RecvStream::Result::duplicate);
    CHECK(r.on_frame(2500, all.subspan(2500, 500), true) == transport::RecvStream::Result::ok);
    CHECK(r.take_sunk() == 500);
    CHECK(r.finished());
    CHECK(got.contiguous);
    CHECK(got.bytes == data);
    CHECK(r.peek().empty());
}

TEST_CASE("a stream sink receives 3 MiB byte-exact through loss, and returns flow-control credit") {
    test::ConnectionPair p;
    // Far less credit than the transfer: it completes only if what the sink
    // takes counts as read.
    p.server_cfg.initial_max_stream_data = 256u << 10;
    p.server_cfg.initial_max_data = 512u << 10;
    REQUIRE(p.handshake());
    int n = 0;
    p.to_server = [&](std::vector<std::uint8_t>&) { return ++n % 7 != 0; };  // every seventh datagram lost
    const StreamId id = *p.client->open_stream();
    constexpr std::uint64_t kTotal = 3u << 20;
    REQUIRE(p.client->set_stream_source(
        id, [payload = workload::Payload(13)](std::uint64_t o, std::span<std::uint8_t> out) { payload.fill(o, out); }));

    workload::PayloadCheck check(13);
    std::uint64_t generated = 0, sunk = 0, calls = 0;
    bool contiguous = true, readable_event = false;
    bool sink_set = false;
    const bool done = p.run_until([&] {
        if (generated < kTotal) generated += p.client->generate(id, kTotal - generated, true);
        while (auto ev = p.server->poll_event()) {
            if (std::holds_alternative<event::StreamOpened>(*ev) && !sink_set) {
                sink_set = p.server->set_stream_sink(id, [&](std::uint64_t offset, std::span<const std::uint8_t> b) {
                    contiguous = contiguous && offset == sunk;
                    check.update(b);
                    sunk += b.size();
                    ++calls;
                });
                REQUIRE(sink_set);
            }
            if (const auto* r = std::get_if<event::StreamReadable>(&*ev); r && r->id == id) readable_event = true;
        }
        CHECK(p.server->peek(id).empty());  // nothing left for read()
        return sink_set && p.server->stream_finished(id);
    });
    REQUIRE(done);
    CHECK(sunk == kTotal);
    CHECK(contiguous);
    CHECK_FALSE(check.mismatched());
    CHECK(calls > 100);          // as the bytes arrive (a call per in-order run), not at the end
    CHECK(readable_event);       // the FIN's
    CHECK(p.client->stats(p.now).packets_lost > 0);
    CHECK(p.server->stats(p.now).stream_bytes_delivered == kTotal);
}

TEST_CASE("set_stream_sink refuses a stream it cannot receive on, one not open, and a null sink") {
    test::ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId uni = *p.client->open_uni_stream();
    CHECK_FALSE(p.client->set_stream_sink(uni, [](std::uint64_t, std::span<const std::uint8_t>) {}));
    CHECK_FALSE(p.client->set_stream_sink(4 * 1000, [](std::uint64_t, std::span<const std::uint8_t>) {}));
    const StreamId bidi = *p.client->open_stream();
    CHECK_FALSE(p.client->set_stream_sink(bidi, nullptr));
    CHECK(p.client->set_stream_sink(bidi, [](std::uint64_t, std::span<const std::uint8_t>) {}));
}
