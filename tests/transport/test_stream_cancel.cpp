// Stream cancellation between two connections, no sockets (RFC 9000 §3,
// §4.5, §19.4, §19.5): reset_stream() and stop_sending() with their codes
// both ways, the events that tell the other side, final-size errors,
// flow-control credit after a reset, lost RESET_STREAM and STOP_SENDING
// frames sent again, and the streams' state released afterwards.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "connection_pair.hpp"
#include "quic_test_util.hpp"
#include "wire/frame.hpp"

using namespace ndm;
using ndm::test::ConnectionPair;

namespace {

std::vector<std::uint8_t> bytes(std::size_t n, std::uint32_t seed = 1) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

transport::StreamSet& streams_of(Connection& c) { return Connection::Impl::of(c).streams; }

// The events a connection raised since the last call (taking them, as an application does).
struct Events {
    std::vector<event::StreamReset> resets;
    std::vector<event::StreamStopped> stops;
    void take(Connection& c) {
        while (auto e = c.poll_event()) {
            if (const auto* r = std::get_if<event::StreamReset>(&*e)) resets.push_back(*r);
            if (const auto* s = std::get_if<event::StreamStopped>(&*e)) stops.push_back(*s);
        }
    }
};

// How many frames of type F the datagram carries, as `to` would read them.
template <typename F>
int count_frames(Connection& to, const std::vector<std::uint8_t>& d, Instant now) {
    int n = 0;
    for (const auto& p : test::open_datagram(to, d, now).packets)
        for (const auto& f : p.frames) n += std::holds_alternative<F>(f) ? 1 : 0;
    return n;
}

// Reads what is readable (and the FIN) on the stream; the bytes read.
std::size_t drain(Connection& c, StreamId id) {
    std::vector<std::uint8_t> buf(1 << 16);
    std::size_t total = 0;
    while (const std::size_t n = c.read(id, buf)) total += n;
    return total;
}

std::vector<std::uint8_t> craft(Connection& from, Instant now, const std::vector<wire::Frame>& frames) {
    return test::seal(from, transport::PacketSpace::application, from.stats(now).packets_sent + 5,
                      test::encode(frames));
}

void expect_close(const std::vector<wire::Frame>& frames, CloseCode code, const char* reason_part) {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.server->on_datagram(craft(*p.client, p.now, frames), p.now);
    CHECK(p.server->state() == ConnectionState::closing);
    CHECK(p.server->close_info().code == static_cast<std::uint64_t>(code));
    CHECK_MESSAGE(p.server->close_info().reason.find(reason_part) != std::string::npos, p.server->close_info().reason);
}

const std::uint8_t kData8[8] = {1, 2, 3, 4, 5, 6, 7, 8};

}  // namespace

TEST_CASE("stream cancel: reset_stream reaches the peer with its code and final size, and both sides release the stream") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    const auto data = bytes(3000);
    REQUIRE(p.client->write(id, data) == data.size());
    p.exchange();
    std::vector<std::uint8_t> buf(1000);
    REQUIRE(p.server->read(id, buf) == 1000);  // 2000 stay unread
    // Written, never sent: abandoned with the rest.
    REQUIRE(p.client->write(id, bytes(5000, 2)) == 5000);
    p.client->reset_stream(id, 42);
    CHECK(p.client->stream_send_capacity(id) == 0);
    CHECK_THROWS_AS(p.client->write(id, data), std::logic_error);

    Events ev;
    REQUIRE(p.run_until([&] {
        ev.take(*p.server);
        return !ev.resets.empty();
    }));
    REQUIRE(ev.resets.size() == 1);
    CHECK(ev.resets[0].id == id);
    CHECK(ev.resets[0].error_code == 42);
    CHECK(ev.resets[0].final_size == 3000);
    CHECK(streams_of(*p.server).counters().received == 3000);  // the 5000 never went out
    CHECK(p.server->read(id, buf) == 0);
    CHECK(p.server->stream_readable(id) == 0);
    CHECK_FALSE(p.server->stream_finished(id));

    // The server ends its half; the stream is gone on both sides, and the
    // server lets the client open one more in its place (RFC 9000 §4.6).
    const std::uint64_t max_streams = streams_of(*p.server).local_max_streams();
    p.server->finish(id);
    REQUIRE(p.run_until([&] {
        drain(*p.client, id);
        return streams_of(*p.client).size() == 0 && streams_of(*p.server).size() == 0;
    }));
    CHECK(streams_of(*p.server).local_max_streams() == max_streams + 1);
    // Released, the stream still answers truthfully: the client's half was
    // reset, the server's ended with its FIN.
    CHECK_FALSE(p.server->stream_finished(id));
    CHECK_FALSE(p.client->stream_send_acked(id));
    CHECK(p.client->stream_finished(id));
    CHECK(p.server->stream_send_acked(id));
    CHECK(p.client->is_established());
    CHECK(p.server->is_established());
}

TEST_CASE("stream cancel: stop_sending drops what is held and the peer answers with RESET_STREAM and its code") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    REQUIRE(p.client->write(id, bytes(100'000)) == 100'000);
    p.exchange();
    REQUIRE(p.server->stream_readable(id) > 0);
    p.server->stop_sending(id, 9);
    // Memory follows the bytes: the receive ring is gone at once.
    CHECK(streams_of(*p.server).find(id)->recv.memory() == 0);
    CHECK(p.server->stream_readable(id) == 0);
    CHECK(p.server->peek(id).empty());

    int resets_seen = 0;
    std::uint64_t reset_code = 0;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        for (const auto& pk : test::open_datagram(*p.server, d, p.now).packets)
            for (const auto& f : pk.frames)
                if (const auto* r = std::get_if<wire::ResetStreamFrame>(&f)) {
                    ++resets_seen;
                    reset_code = r->error_code;
                }
        return true;
    };
    Events client_ev, server_ev;
    REQUIRE(p.run_until([&] {
        client_ev.take(*p.client);
        server_ev.take(*p.server);
        return !client_ev.stops.empty() && resets_seen > 0;
    }));
    CHECK(client_ev.stops[0].id == id);
    CHECK(client_ev.stops[0].error_code == 9);
    CHECK(reset_code == 9);  // RFC 9000 §3.5: the code copied
    // The application could not know: writes take nothing, without throwing.
    CHECK(p.client->write(id, bytes(10)) == 0);
    CHECK(p.client->stream_send_capacity(id) == 0);
    // The side that stopped is not told of a reset it asked for.
    p.run_until([] { return false; }, std::chrono::milliseconds(200));
    server_ev.take(*p.server);
    CHECK(server_ev.resets.empty());

    p.server->finish(id);
    REQUIRE(p.run_until([&] {
        drain(*p.client, id);
        return streams_of(*p.client).size() == 0 && streams_of(*p.server).size() == 0;
    }));
    CHECK_FALSE(p.server->stream_finished(id));   // stopped
    CHECK_FALSE(p.client->stream_send_acked(id));  // reset in answer
}

TEST_CASE("stream cancel: both directions, server-initiated streams, and uni streams") {
    ConnectionPair p;
    p.client_cfg.initial_max_streams_uni = 4;
    REQUIRE(p.handshake());
    // The server resets its own bidirectional stream; the client stops the
    // server's unidirectional one.
    const StreamId bidi = *p.server->open_stream();
    const StreamId uni = *p.server->open_uni_stream();
    REQUIRE(p.server->write(bidi, bytes(2000)) == 2000);
    REQUIRE(p.server->write(uni, bytes(2000)) == 2000);
    p.exchange();
    CHECK_THROWS_AS(p.client->reset_stream(uni, 1), std::logic_error);  // receive-only here
    CHECK_THROWS_AS(p.server->stop_sending(uni, 1), std::logic_error);  // send-only there
    p.server->reset_stream(bidi, 0x3fff'ffff'ffff'ffff);  // the largest code there is
    p.client->stop_sending(uni, 5);
    Events client_ev, server_ev;
    REQUIRE(p.run_until([&] {
        client_ev.take(*p.client);
        server_ev.take(*p.server);
        return !client_ev.resets.empty() && !server_ev.stops.empty();
    }));
    CHECK(client_ev.resets[0].id == bidi);
    CHECK(client_ev.resets[0].error_code == 0x3fff'ffff'ffff'ffff);
    CHECK(client_ev.resets[0].final_size == 2000);
    CHECK(server_ev.stops[0].id == uni);
    CHECK(server_ev.stops[0].error_code == 5);
    // The uni stream is gone on both sides once the reset is acknowledged.
    REQUIRE(p.run_until([&] { return !streams_of(*p.server).find(uni) && !streams_of(*p.client).find(uni); }));
}

TEST_CASE("stream cancel: the connection's flow control counts a reset stream at its final size and frees the rest") {
    ConnectionPair p;
    p.server_cfg.initial_max_data = 64 * 1024;
    p.server_cfg.initial_max_stream_data = 64 * 1024;
    p.server_cfg.autotune_receive_windows = false;
    REQUIRE(p.handshake());
    const StreamId a = *p.client->open_stream();
    const StreamId b = *p.client->open_stream();
    // The end of a's data is lost: the server sees less than was sent.
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        for (const auto& pk : test::open_datagram(*p.server, d, p.now).packets)
            for (const auto& f : pk.frames)
                if (const auto* s = std::get_if<wire::StreamFrame>(&f); s && s->offset >= 60'000) return false;
        return true;
    };
    REQUIRE(p.client->write(a, bytes(64 * 1024)) == 64 * 1024);
    p.exchange();
    p.to_server = nullptr;
    const std::uint64_t seen = streams_of(*p.server).counters().received;
    REQUIRE(seen < 64 * 1024);
    // The server reads nothing: a holds the whole connection window, and b waits.
    REQUIRE(p.client->write(b, bytes(10'000, 3)) == 10'000);
    p.exchange();
    CHECK(p.server->stream_readable(b) == 0);
    CHECK(p.client->stream_send_limit(b) == 0);

    p.client->reset_stream(a, 3);
    Events ev;
    std::size_t got_b = 0;
    REQUIRE(p.run_until([&] {
        ev.take(*p.server);
        got_b += drain(*p.server, b);
        return got_b == 10'000;
    }));
    REQUIRE(ev.resets.size() == 1);
    CHECK(ev.resets[0].final_size == 64 * 1024);
    // a counts at its final size (RFC 9000 §4.5), b at what it sent.
    CHECK(streams_of(*p.server).counters().received == 64 * 1024 + 10'000);
}

TEST_CASE("stream cancel: a lost RESET_STREAM or STOP_SENDING is sent again") {
    SUBCASE("RESET_STREAM") {
        ConnectionPair p;
        REQUIRE(p.handshake());
        const StreamId id = *p.client->open_stream();
        REQUIRE(p.client->write(id, bytes(500)) == 500);
        p.exchange();
        int sent = 0;
        p.to_server = [&](std::vector<std::uint8_t>& d) {
            const int n = count_frames<wire::ResetStreamFrame>(*p.server, d, p.now);
            sent += n;
            return !(n > 0 && sent == 1);  // the first one is lost
        };
        p.client->reset_stream(id, 77);
        Events ev;
        REQUIRE(p.run_until([&] {
            ev.take(*p.server);
            return !ev.resets.empty();
        }));
        CHECK(sent >= 2);
        CHECK(ev.resets[0].error_code == 77);
        CHECK(ev.resets[0].final_size == 500);
        CHECK(p.client->stats(p.now).packets_lost >= 1);
    }
    SUBCASE("STOP_SENDING") {
        ConnectionPair p;
        REQUIRE(p.handshake());
        const StreamId id = *p.client->open_stream();
        REQUIRE(p.client->write(id, bytes(500)) == 500);
        p.exchange();
        int sent = 0;
        p.to_client = [&](std::vector<std::uint8_t>& d) {
            const int n = count_frames<wire::StopSendingFrame>(*p.client, d, p.now);
            sent += n;
            return !(n > 0 && sent == 1);
        };
        p.server->stop_sending(id, 78);
        Events ev;
        REQUIRE(p.run_until([&] {
            ev.take(*p.client);
            return !ev.stops.empty();
        }));
        CHECK(sent >= 2);
        CHECK(ev.stops[0].error_code == 78);
    }
}

TEST_CASE("stream cancel: a reset after every byte was acknowledged, or a second one, changes nothing") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    REQUIRE(p.client->write(id, bytes(100), true) == 100);
    REQUIRE(p.run_until([&] { return p.client->stream_send_acked(id); }));
    p.client->reset_stream(id, 1);  // "Data Recvd" is terminal (RFC 9000 §3.1)
    p.client->stop_sending(id, 2);
    p.client->stop_sending(id, 3);  // a second stop is nothing
    Events ev;
    p.run_until([&] {
        ev.take(*p.server);
        return false;
    }, std::chrono::milliseconds(300));
    CHECK(ev.resets.empty());
    CHECK(drain(*p.server, id) == 100);
    CHECK(p.server->stream_finished(id));
}

TEST_CASE("stream cancel: final-size and stream-state errors of RESET_STREAM and STOP_SENDING close the connection") {
    SUBCASE("final size below the data received (RFC 9000 4.5)") {
        expect_close({wire::StreamFrame{0, 0, kData8, false}, wire::ResetStreamFrame{0, 1, 4}},
                     CloseCode::final_size_error, "contradicts");
    }
    SUBCASE("final size other than the FIN's") {
        expect_close({wire::StreamFrame{0, 0, kData8, true}, wire::ResetStreamFrame{0, 1, 12}},
                     CloseCode::final_size_error, "final size 8");
    }
    SUBCASE("a second RESET_STREAM with another final size") {
        expect_close({wire::ResetStreamFrame{0, 1, 8}, wire::ResetStreamFrame{0, 1, 9}}, CloseCode::final_size_error,
                     "contradicts");
    }
    SUBCASE("data beyond the final size a reset stated") {
        expect_close({wire::ResetStreamFrame{0, 1, 4}, wire::StreamFrame{0, 0, kData8, false}},
                     CloseCode::final_size_error, "final size");
    }
    SUBCASE("a final size beyond the stream's flow-control limit") {
        expect_close({wire::ResetStreamFrame{0, 1, (16u << 20) + 1}}, CloseCode::flow_control_error, "limit");
    }
    SUBCASE("the largest final size a varint holds") {
        expect_close({wire::ResetStreamFrame{0, 1, wire::kVarintMax}}, CloseCode::flow_control_error, "limit");
    }
    SUBCASE("RESET_STREAM for a stream of the receiver's it never opened (19.4)") {
        expect_close({wire::ResetStreamFrame{1, 1, 0}}, CloseCode::stream_state_error, "never opened");
    }
    SUBCASE("RESET_STREAM beyond the stream limit") {
        expect_close({wire::ResetStreamFrame{4 * 1000, 1, 0}}, CloseCode::stream_limit_error, "limit");
    }
    SUBCASE("STOP_SENDING beyond the stream limit") {
        expect_close({wire::StopSendingFrame{4 * 1000, 1}}, CloseCode::stream_limit_error, "limit");
    }
}

TEST_CASE("stream cancel: a repeated RESET_STREAM and data up to the final size after it are accepted") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    p.server->on_datagram(craft(*p.client, p.now,
                                {wire::ResetStreamFrame{0, 6, 8}, wire::StreamFrame{0, 0, kData8, true},
                                 wire::ResetStreamFrame{0, 6, 8}}),
                          p.now);
    CHECK(p.server->is_established());
    Events ev;
    ev.take(*p.server);
    REQUIRE(ev.resets.size() == 1);  // once
    CHECK(ev.resets[0].error_code == 6);
    CHECK(p.server->stream_readable(0) == 0);
}

TEST_CASE("stream cancel and priority: the application's arguments are checked") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    CHECK_THROWS_AS(p.client->reset_stream(id, std::uint64_t{1} << 62), std::invalid_argument);
    CHECK_THROWS_AS(p.client->stop_sending(id, UINT64_MAX), std::invalid_argument);
    CHECK_THROWS_AS(p.client->reset_stream(id + 400, 1), std::invalid_argument);  // not open
    CHECK_THROWS_AS(p.client->set_stream_priority(id, {8, false}), std::invalid_argument);
    CHECK_THROWS_AS(p.client->set_stream_priority(id + 400, {}), std::invalid_argument);
    CHECK(p.client->stream_priority(id) == StreamPriority{3, true});  // ndm's default
    p.client->set_stream_priority(id, {0, false});
    CHECK(p.client->stream_priority(id) == StreamPriority{0, false});
}

TEST_CASE("stream cancel: a consume after stop_sending takes nothing, whether the bytes were peeked before or not") {
    ConnectionPair p;
    REQUIRE(p.handshake());
    const StreamId a = *p.client->open_stream(), b = *p.client->open_stream();
    REQUIRE(p.client->write(a, bytes(5000)) == 5000);
    REQUIRE(p.client->write(b, bytes(5000, 3)) == 5000);
    p.exchange();
    const std::uint64_t delivered = streams_of(*p.server).counters().delivered;

    // peek, stop, consume: what the peek showed is gone; the consume takes
    // nothing and counts nothing as read.
    const auto shown = p.server->peek(a);
    REQUIRE(shown.size() > 0);
    p.server->stop_sending(a, 7);
    CHECK_NOTHROW(p.server->consume(a, shown.size()));
    CHECK(p.server->peek(a).empty());
    CHECK(p.server->stream_readable(a) == 0);

    // stop, then peek and consume: nothing to show or take.
    p.server->stop_sending(b, 8);
    CHECK(p.server->peek(b).empty());
    CHECK_NOTHROW(p.server->consume(b, 0));
    CHECK_NOTHROW(p.server->consume(b, 100));
    CHECK(streams_of(*p.server).counters().delivered == delivered);

    // A stream never stopped still refuses a consume of bytes it does not hold.
    const StreamId c = *p.client->open_stream();
    REQUIRE(p.client->write(c, bytes(10, 4)) == 10);
    p.exchange();
    CHECK_THROWS_AS(p.server->consume(c, 11), std::logic_error);

    Events ev;
    REQUIRE(p.run_until([&] {
        ev.take(*p.client);
        return ev.stops.size() == 2;
    }));
    CHECK(ev.stops[0].error_code == 7);
    CHECK(ev.stops[1].error_code == 8);
    CHECK(p.client->is_established());
    CHECK(p.server->is_established());
}
