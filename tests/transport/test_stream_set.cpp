// StreamSet on its own (no connection): the order in which it fills packets
// with STREAM frames, the stream limits and flow-control credit both ways,
// and the reaping of streams finished in both directions.
#include <doctest/doctest.h>

#include <deque>
#include <vector>

#include "transport/stream_set.hpp"

using namespace ndm;
using namespace ndm::transport;
using FT = trace::Frame::Type;

namespace {

// One packet's worth of room; what the stream set wrote, as trace frames.
struct Packet {
    std::vector<std::uint8_t> buf;
    wire::Writer w;
    SentFrames sent;
    std::vector<trace::Frame> frames;
    FrameSink sink;
    explicit Packet(std::size_t size = 1200) : buf(size), w(buf), sink(w, sent, &frames) {}

    std::vector<StreamId> stream_ids() const {
        std::vector<StreamId> ids;
        for (const auto& f : frames)
            if (f.type == FT::stream) ids.push_back(f.stream_id);
        return ids;
    }
    std::uint64_t bytes_of(StreamId id) const {
        std::uint64_t n = 0;
        for (const auto& f : frames)
            if (f.type == FT::stream && f.stream_id == id) n += f.length;
        return n;
    }
    const trace::Frame* find(FT type) const {
        for (const auto& f : frames)
            if (f.type == type) return &f;
        return nullptr;
    }
    // The value (limit, maximum) of the frame of this type, which must be there.
    std::uint64_t value(FT type) const {
        const trace::Frame* f = find(type);
        REQUIRE(f != nullptr);
        return f->value;
    }
};

struct Fixture {
    std::deque<Event> events;
    StreamSet set;
    explicit Fixture(bool client = true, StreamSet::Config cfg = {})
        : set((cfg.client = client, cfg), events) {}

    void write(StreamId id, std::size_t n, bool fin = false) {
        std::vector<std::uint8_t> data(n, static_cast<std::uint8_t>(id));
        auto& s = set.require(id);
        REQUIRE(s.send.write(data) == n);
        if (fin) s.send.finish();
    }
};

wire::StreamFrame stream_frame(StreamId id, std::uint64_t offset, const std::vector<std::uint8_t>& data,
                               bool fin = false) {
    return wire::StreamFrame{id, offset, data, fin};
}

}  // namespace

TEST_CASE("stream set: packets are filled in stream order from the cursor, which wraps around") {
    Fixture f;
    f.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 10, 0});
    const StreamId a = *f.set.open(), b = *f.set.open(), c = *f.set.open();
    CHECK(a == 0);
    CHECK(b == 4);
    CHECK(c == 8);
    f.write(b, 1000);
    f.write(c, 1000);
    Packet p1;
    f.set.write_stream_frames(p1.sink);
    // b drains first; c takes the rest of the packet, and passes the turn.
    CHECK(p1.stream_ids() == std::vector<StreamId>{b, c});
    CHECK(p1.bytes_of(b) == 1000);
    CHECK(p1.bytes_of(c) > 0);
    CHECK(p1.bytes_of(c) < 1000);
    CHECK(p1.sink.remaining() <= 16);

    // The next packet starts after c, wrapping to a, then c again.
    f.write(a, 100);
    Packet p2;
    f.set.write_stream_frames(p2.sink);
    CHECK(p2.stream_ids() == std::vector<StreamId>{a, c});
    CHECK(p1.bytes_of(c) + p2.bytes_of(c) == 1000);
    CHECK(p2.bytes_of(a) == 100);
    CHECK_FALSE(f.set.has_pending_data());
    CHECK(f.set.counters().sent == 2100);

    // Nothing pending: the packet stays empty.
    Packet p3;
    CHECK_FALSE(f.set.write_stream_frames(p3.sink));
    CHECK(p3.frames.empty());
}

TEST_CASE("stream set: a stream held back by its credit does not hold back the others") {
    Fixture f;
    f.set.on_peer_params({1u << 20, 100, 100, 0, 10, 0});
    const StreamId a = *f.set.open(), b = *f.set.open();
    f.write(a, 1000);
    f.write(b, 50);
    CHECK(f.set.sendable_new_data(UINT64_MAX) == 150);
    Packet p1;
    f.set.write_stream_frames(p1.sink);
    CHECK(p1.bytes_of(a) == 100);  // the peer's MAX_STREAM_DATA
    CHECK(p1.bytes_of(b) == 50);
    CHECK_FALSE(f.set.has_pending_data());

    // Next time the set tells the peer, once, why it stopped.
    Packet p2;
    f.set.write_stream_frames(p2.sink);
    const trace::Frame* blocked = p2.find(FT::stream_data_blocked);
    REQUIRE(blocked != nullptr);
    CHECK(blocked->stream_id == a);
    CHECK(blocked->value == 100);
    Packet p3;
    f.set.write_stream_frames(p3.sink);
    CHECK(p3.frames.empty());
    // Lost, it goes out again.
    REQUIRE(p2.sent.size() == 1);
    CHECK(f.set.on_lost(p2.sent[0]));
    Packet p4;
    f.set.write_stream_frames(p4.sink);
    CHECK(p4.find(FT::stream_data_blocked) != nullptr);

    // More credit releases the rest.
    CHECK_FALSE(f.set.on_max_stream_data(wire::MaxStreamDataFrame{a, 2000}));
    CHECK(f.set.has_pending_data());
    Packet p5;
    f.set.write_stream_frames(p5.sink);
    CHECK(p5.bytes_of(a) == 900);
}

TEST_CASE("stream set: connection credit caps all streams together and DATA_BLOCKED says so") {
    Fixture f;
    f.set.on_peer_params({150, 1u << 20, 1u << 20, 0, 10, 0});
    const StreamId a = *f.set.open(), b = *f.set.open();
    f.write(a, 100);
    f.write(b, 100);
    Packet p1;
    f.set.write_stream_frames(p1.sink);
    CHECK(p1.bytes_of(a) + p1.bytes_of(b) == 150);
    Packet p2;
    f.set.write_stream_frames(p2.sink);
    CHECK(p2.value(FT::data_blocked) == 150);
    f.set.on_max_data(300);
    Packet p3;
    f.set.write_stream_frames(p3.sink);
    CHECK(p3.bytes_of(a) + p3.bytes_of(b) == 50);
}

TEST_CASE("stream set: stream limits both ways") {
    StreamSet::Config cfg;
    cfg.max_streams = 2;
    Fixture client(true, cfg);
    // Ours: the peer's MAX_STREAMS.
    client.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 2, 0});
    CHECK(client.set.open());
    CHECK(client.set.open());
    CHECK_FALSE(client.set.open());
    client.set.on_max_streams(1, true);  // never lowers
    CHECK_FALSE(client.set.open());
    client.set.on_max_streams(3, true);
    CHECK(client.set.open() == StreamId{8});

    // The peer's: ours, as a server; opening stream 4 opens 0 implicitly.
    Fixture server(false, cfg);
    const std::vector<std::uint8_t> data{1, 2, 3};
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(4, 0, data)));
    REQUIRE(server.events.size() == 3);
    CHECK(std::get<event::StreamOpened>(server.events[0]).id == 0);
    CHECK(std::get<event::StreamOpened>(server.events[1]).id == 4);
    CHECK(std::get<event::StreamReadable>(server.events[2]).id == 4);
    auto over = server.set.on_stream_frame(stream_frame(8, 0, data));
    REQUIRE(over);
    CHECK(over->code == CloseCode::stream_limit_error);
    auto uni = server.set.on_stream_frame(stream_frame(2, 0, data));  // no unidirectional streams allowed
    REQUIRE(uni);
    CHECK(uni->code == CloseCode::stream_limit_error);
    auto never = server.set.on_stream_frame(stream_frame(1, 0, data));  // server-initiated, never opened
    REQUIRE(never);
    CHECK(never->code == CloseCode::stream_state_error);
}

TEST_CASE("stream set: unidirectional streams go one way, with their own limits and credit") {
    StreamSet::Config cfg;
    cfg.max_streams_uni = 2;
    Fixture server(false, cfg);
    server.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 500, 10, 1});
    const std::vector<std::uint8_t> data{1, 2, 3};

    // The client's: stream 6 opens 2 with it; a third exceeds the limit of 2.
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(6, 0, data, true)));
    REQUIRE(server.events.size() == 3);
    CHECK(std::get<event::StreamOpened>(server.events[0]).id == 2);
    CHECK(std::get<event::StreamOpened>(server.events[1]).id == 6);
    auto over = server.set.on_stream_frame(stream_frame(10, 0, data));
    REQUIRE(over);
    CHECK(over->code == CloseCode::stream_limit_error);
    CHECK(over->reason.find("unidirectional") != std::string::npos);
    // Receive-only here: no writing, no credit for it (RFC 9000 §19.10).
    CHECK_THROWS_AS(server.set.writable(2), std::logic_error);
    auto credit = server.set.on_max_stream_data(wire::MaxStreamDataFrame{2, 1000});
    REQUIRE(credit);
    CHECK(credit->code == CloseCode::stream_state_error);

    // Ours: send-only, one allowed, with the peer's uni credit of 500 bytes.
    const auto mine = server.set.open(false);
    REQUIRE(mine);
    CHECK(*mine == 3);  // server-initiated, unidirectional (RFC 9000 §2.1)
    CHECK_FALSE(server.set.open(false));
    CHECK(server.set.open() == StreamId{1});  // the bidirectional limit is separate
    auto data_on_mine = server.set.on_stream_frame(stream_frame(3, 0, data));  // RFC 9000 §19.8
    REQUIRE(data_on_mine);
    CHECK(data_on_mine->code == CloseCode::stream_state_error);
    server.write(3, 1000, true);
    Packet p(4000);
    server.set.write_stream_frames(p.sink);
    CHECK(p.bytes_of(3) == 500);

    // Stream 6, read to its FIN, is reaped: the peer may open one more.
    std::uint8_t buf[8];
    auto& s6 = server.set.require(6);
    CHECK(s6.recv.read(buf) == 3);
    server.set.on_consumed(6, 3);
    CHECK(server.set.find(6) == nullptr);
    CHECK(server.set.local_max_streams(false) == 3);
    CHECK(server.set.local_max_streams(true) == 100);
    Packet control;
    server.set.write_control_frames(control.sink, Instant{}, Duration{0});
    const trace::Frame* ms = control.find(FT::max_streams);
    REQUIRE(ms != nullptr);
    CHECK(ms->unidirectional);
    CHECK(ms->value == 3);
}

TEST_CASE("stream set: receive windows are enforced per stream and per connection") {
    StreamSet::Config cfg;
    cfg.max_stream_data = 100;
    cfg.max_data = 150;
    Fixture server(false, cfg);
    const std::vector<std::uint8_t> d80(80, 7), d21(21, 7);
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(0, 0, d80)));
    auto past_stream = server.set.on_stream_frame(stream_frame(0, 80, d21));
    REQUIRE(past_stream);
    CHECK(past_stream->code == CloseCode::flow_control_error);
    auto past_conn = server.set.on_stream_frame(stream_frame(4, 0, d80));  // 160 > 150
    REQUIRE(past_conn);
    CHECK(past_conn->code == CloseCode::flow_control_error);
    CHECK(server.set.counters().received == 80);

    // Reading half the window asks for MAX_STREAM_DATA (and MAX_DATA).
    std::vector<std::uint8_t> out(80);
    REQUIRE(server.set.require(0).recv.read(out) == 80);
    server.set.on_consumed(0, 80);
    CHECK(server.set.has_control_frames());
    Packet p;
    server.set.write_control_frames(p.sink, Instant{}, Duration{0});
    CHECK(p.value(FT::max_stream_data) == 180);
    CHECK(p.value(FT::max_data) == 230);
    CHECK_FALSE(server.set.has_control_frames());
}

TEST_CASE("stream set: a receive window that slides again within two RTTs doubles, up to 4 times its size") {
    using namespace std::chrono_literals;
    ReceiveWindow w(1000);
    const Duration rtt = 100ms;
    Instant t{};
    auto consume_and_slide = [&](std::uint64_t n, Duration after) {
        w.on_consumed(n);
        t += after;
        REQUIRE(w.should_update());
        return w.update(t, rtt);
    };
    CHECK(consume_and_slide(500, 1s) == 1500);     // the first slide: no history yet
    CHECK(consume_and_slide(500, 150ms) == 3000);  // 150 ms < 2 RTT: 2000-byte window
    CHECK(w.window() == 2000);
    CHECK(consume_and_slide(1000, 300ms) == 4000);  // 300 ms >= 2 RTT: unchanged
    CHECK(consume_and_slide(1000, 50ms) == 7000);   // doubled to 4000
    CHECK(consume_and_slide(2000, 50ms) == 9000);   // capped at 4 × 1000
    CHECK(w.window() == 4000);
    // Resending a lost update (nothing new consumed) neither slides nor grows.
    t += 1ms;
    CHECK_FALSE(w.should_update());
    CHECK(w.update(t, rtt) == 9000);
    CHECK(w.window() == 4000);
}

TEST_CASE("stream set: a cap bounds the receive window and keeps its auto-tuned size for when it is lifted") {
    using namespace std::chrono_literals;
    ReceiveWindow w(1000);
    const Duration rtt = 100ms;
    Instant t{};
    w.set_cap(400);
    CHECK(w.window() == 400);
    CHECK(w.limit() == 1000);  // advertised before the cap: never withdrawn
    w.on_consumed(700);
    CHECK_FALSE(w.should_update());  // 700 + 400 < 1000 + 200
    w.on_consumed(100);
    REQUIRE(w.should_update());
    CHECK(w.update(t, rtt) == 1200);  // 800 consumed + the 400 cap
    w.on_consumed(400);
    t += 50ms;  // slid again within two RTTs: the window behind the cap grows
    CHECK(w.update(t, rtt) == 1600);
    w.set_cap(UINT64_MAX);
    CHECK(w.window() == 2000);
    t += 1s;
    CHECK(w.update(t, rtt) == 3200);  // 1200 consumed + the grown 2000
}

TEST_CASE("stream set: a stream finished both ways is reaped and the peer may open another") {
    StreamSet::Config cfg;
    cfg.max_streams = 1;
    Fixture server(false, cfg);
    server.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 10, 0});
    const std::vector<std::uint8_t> data{1, 2, 3};
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(0, 0, data, true)));
    CHECK(server.set.size() == 1);
    std::vector<std::uint8_t> out(8);
    REQUIRE(server.set.require(0).recv.read(out) == 3);
    server.set.on_consumed(0, 3);
    CHECK(server.set.size() == 1);  // our direction is still open
    CHECK(server.set.finished(0));

    server.write(0, 10, true);
    Packet p;
    server.set.write_stream_frames(p.sink);
    REQUIRE(p.sent.size() == 1);
    CHECK_FALSE(server.set.has_control_frames());
    server.set.on_acked(std::get<sent::Stream>(p.sent[0]));
    CHECK(server.set.size() == 0);
    CHECK(server.set.finished(0));
    CHECK(server.set.find(0) == nullptr);
    CHECK(server.set.counters().acked == 10);

    // RFC 9000 §4.6: the reaped stream's slot goes back to the peer.
    CHECK(server.set.local_max_streams() == 2);
    REQUIRE(server.set.has_control_frames());
    Packet ctl;
    server.set.write_control_frames(ctl.sink, Instant{}, Duration{0});
    CHECK(ctl.value(FT::max_streams) == 2);

    // A late duplicate of the reaped stream is ignored, not reopened.
    const std::size_t before = server.events.size();
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(0, 0, data, true)));
    CHECK(server.set.size() == 0);
    CHECK(server.events.size() == before);
    // The slot it freed opens stream 4.
    CHECK_FALSE(server.set.on_stream_frame(stream_frame(4, 0, data)));
    CHECK(server.set.size() == 1);
}

TEST_CASE("stream set: the peer's bidi_local credit covers streams it opened, bidi_remote ours (RFC 9000 18.2)") {
    Fixture f(false);  // a server
    f.set.on_peer_params({1u << 20, 100, 300, 0, 10, 0});
    const std::vector<std::uint8_t> one{1};
    REQUIRE_FALSE(f.set.on_stream_frame(stream_frame(0, 0, one)));  // the client opens stream 0
    const StreamId ours = *f.set.open();
    CHECK(ours == 1);
    f.write(0, 1000);
    f.write(ours, 1000);
    Packet p(4000);
    f.set.write_stream_frames(p.sink);
    CHECK(p.bytes_of(0) == 100);
    CHECK(p.bytes_of(ours) == 300);
}

TEST_CASE("stream set: new receive windows keep the credit given, bind after it, and can be fixed") {
    StreamSet::Config cfg;
    cfg.max_stream_data = 1000;
    cfg.max_data = 1000;
    Fixture server(false, cfg);
    const std::vector<std::uint8_t> d600(600, 7);
    REQUIRE_FALSE(server.set.on_stream_frame(stream_frame(0, 0, d600)));
    // Smaller, fixed: the 1000 bytes advertised stay (RFC 9000 §4.1), and no
    // update is due until consumption passes limit - window / 2.
    server.set.set_receive_windows(100, 100, false);
    CHECK_FALSE(server.set.has_control_frames());
    std::vector<std::uint8_t> out(600);
    REQUIRE(server.set.require(0).recv.read(out) == 600);
    server.set.on_consumed(0, 600);
    CHECK_FALSE(server.set.has_control_frames());
    const std::vector<std::uint8_t> d400(400, 7);
    REQUIRE_FALSE(server.set.on_stream_frame(stream_frame(0, 600, d400)));
    REQUIRE(server.set.require(0).recv.read(out) == 400);
    server.set.on_consumed(0, 400);
    Packet p;
    server.set.write_control_frames(p.sink, Instant{}, Duration{0});
    CHECK(p.value(FT::max_stream_data) == 1100);  // consumed 1000 + the 100-byte window
    CHECK(p.value(FT::max_data) == 1100);
    // Larger: due at once; a stream the peer opens later starts at the
    // advertised 1000 and gets the larger window in its first update.
    server.set.set_receive_windows(1 << 20, 1 << 20, true);
    Packet q;
    server.set.write_control_frames(q.sink, Instant{}, Duration{0});
    CHECK(q.value(FT::max_data) == 1000 + (1 << 20));
    REQUIRE_FALSE(server.set.on_stream_frame(stream_frame(4, 0, d600)));
    auto past = server.set.on_stream_frame(stream_frame(4, 600, d600));  // beyond the advertised 1000
    REQUIRE(past);
    CHECK(past->code == CloseCode::flow_control_error);
}

TEST_CASE("stream set: incremental streams of one urgency take turns a packet each (RFC 9218 shape)") {
    Fixture f;
    f.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 10, 0});
    const StreamId a = *f.set.open(), b = *f.set.open(), c = *f.set.open();
    f.write(a, 10'000);  // a bulk stream, written first
    f.write(b, 10'000);
    Packet p1, p2, p3;
    f.set.write_stream_frames(p1.sink);
    f.set.write_stream_frames(p2.sink);
    CHECK(p1.stream_ids() == std::vector<StreamId>{a});
    CHECK(p2.stream_ids() == std::vector<StreamId>{b});
    // A small stream written now goes in the very next packet.
    f.write(c, 300);
    f.set.write_stream_frames(p3.sink);
    CHECK(p3.stream_ids() == std::vector<StreamId>{c, a});
    CHECK(p3.bytes_of(c) == 300);
}

TEST_CASE("stream set: a lower urgency goes first, and at one urgency non-incremental streams go one at a time by ID") {
    Fixture f;
    f.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 10, 0});
    const StreamId a = *f.set.open(), b = *f.set.open(), c = *f.set.open(), d = *f.set.open();
    f.set.set_priority(a, {3, true});
    f.set.set_priority(b, {3, false});
    f.set.set_priority(c, {3, false});
    f.set.set_priority(d, {1, true});
    for (const StreamId id : {a, b, c, d}) f.write(id, 2000);
    // The streams in the order their frames went, each once.
    std::vector<StreamId> order;
    for (int i = 0; i < 10 && f.set.has_pending_data(); ++i) {
        Packet p;
        f.set.write_stream_frames(p.sink);
        for (const StreamId id : p.stream_ids())
            if (order.empty() || order.back() != id) order.push_back(id);
    }
    CHECK_FALSE(f.set.has_pending_data());
    // d (urgency 1) first, then b to its end, then c, then a (incremental last).
    CHECK(order == std::vector<StreamId>{d, b, c, a});
    CHECK_THROWS_AS(f.set.set_priority(a, {8, true}), std::invalid_argument);
}

TEST_CASE("stream set: a reset stream sends RESET_STREAM with its final size and no more data") {
    Fixture f;
    f.set.on_peer_params({1u << 20, 1u << 20, 1u << 20, 0, 10, 0});
    const StreamId a = *f.set.open();
    f.write(a, 3000);
    Packet p1;
    f.set.write_stream_frames(p1.sink);
    const std::uint64_t sent = p1.bytes_of(a);
    REQUIRE(sent < 3000);
    f.set.reset(a, 5);
    CHECK_FALSE(f.set.has_pending_data());
    CHECK(f.set.has_control_frames());
    Packet p2;
    f.set.write_control_frames(p2.sink, Instant{}, std::chrono::milliseconds(10));
    f.set.write_stream_frames(p2.sink);
    REQUIRE(p2.find(FT::reset_stream) != nullptr);
    CHECK(p2.find(FT::reset_stream)->value == 5);
    CHECK(p2.find(FT::reset_stream)->offset == sent);
    CHECK(p2.stream_ids().empty());
    // Lost: queued again; acknowledged: done.
    REQUIRE(p2.sent.size() == 1);
    CHECK(f.set.on_lost(p2.sent[0]));
    CHECK(f.set.has_control_frames());
    f.set.on_acked(std::get<sent::ResetStream>(p2.sent[0]));
    Packet p3;
    f.set.write_control_frames(p3.sink, Instant{}, std::chrono::milliseconds(10));
    CHECK(p3.frames.empty());
}

TEST_CASE("stream set: the IDs of streams released after a reset merge by type and stay bounded") {
    StreamIdSet ids;
    for (StreamId i = 0; i < 100; ++i) ids.add(i * 4);  // streams 0, 4, 8, ...: one range
    CHECK(ids.contains(0));
    CHECK(ids.contains(396));
    CHECK_FALSE(ids.contains(400));
    CHECK_FALSE(ids.contains(1));  // another type
    // Every other stream: one range each, at most kMaxRanges; the oldest go first.
    for (StreamId i = 0; i < 3000; ++i) ids.add(1 + i * 8);
    CHECK(ids.contains(1 + 2999 * 8));
    CHECK_FALSE(ids.contains(1));
    CHECK(ids.contains(396));  // the other types' ranges stay
}
