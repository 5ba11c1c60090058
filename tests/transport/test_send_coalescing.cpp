// Coalescing of small writes into full packets (src/transport/send_coalescing.hpp,
// Connection::set_send_coalescing): the rule on its own, then a connection
// whose application writes 100 bytes a millisecond.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <variant>
#include <vector>

#include "ack_trace.hpp"
#include "connection_pair.hpp"
#include "transport/send_coalescing.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using transport::SendCoalescing;

TEST_CASE("send coalescing: new data short of a packet waits, from the first look, until its bound") {
    const std::uint64_t room = SendCoalescing::packet_room(1452);
    CHECK(room == 1392);
    CHECK(SendCoalescing::holdable(100, room, true));
    CHECK_FALSE(SendCoalescing::holdable(0, room, true));      // nothing waits
    CHECK_FALSE(SendCoalescing::holdable(room, room, true));   // a full packet goes
    CHECK_FALSE(SendCoalescing::holdable(100, room, false));   // a FIN, a retransmission, ...
    SendCoalescing c;
    const Instant t0 = Instant{} + 1s;
    CHECK_FALSE(c.holds(true, t0));  // off by default
    CHECK(c.deadline(true, t0) == kNever);
    c.set_max_hold(2ms);
    CHECK(c.holds(true, t0));                 // not yet looked at: the wait starts now
    CHECK(c.deadline(true, t0) == t0 + 2ms);
    c.observe(true, t0);
    c.observe(true, t0 + 1ms);               // the clock runs from the first look
    CHECK(c.holds(true, t0 + 1ms));
    CHECK(c.deadline(true, t0 + 1ms) == t0 + 2ms);
    CHECK_FALSE(c.holds(true, t0 + 2ms));    // the bound: it goes as it is
    CHECK(c.deadline(true, t0 + 2ms) == kNever);
    CHECK_FALSE(c.holds(false, t0 + 1ms));
    c.observe(false, t0 + 3ms);              // sent: the next wait has a clock of its own
    c.observe(true, t0 + 4ms);
    CHECK(c.deadline(true, t0 + 4ms) == t0 + 6ms);
}

namespace {

// 100 bytes every millisecond for 200 ms, then FIN, over a pair whose
// client coalesces with max_hold (0: off). The datagrams the client sent
// after the handshake, the ACKs its controller saw, and whether the FIN
// left at the instant of the last write.
struct Writes {
    std::uint64_t datagrams = 0;
    std::uint64_t acks = 0, app_limited_acks = 0;
    bool fin_at_once = false;
    bool exact = false;
};

Writes small_writes(Duration max_hold) {
    testing::Recording rec;
    rec.inner = "reno";
    const testing::ScopedRecorder recorder("coalescing-recorder", rec);
    test::ConnectionPair p;
    p.client_cfg.cc = "coalescing-recorder";
    REQUIRE(p.handshake());
    const auto s = p.client->open_stream();
    REQUIRE(s);
    p.client->set_send_coalescing(max_hold);
    Writes w;
    bool counting = true;
    p.to_server = [&](std::vector<std::uint8_t>&) {
        if (counting) ++w.datagrams;
        return true;
    };
    const std::size_t before = rec.events.size();
    std::vector<std::uint8_t> got, buf(4096);
    auto read = [&] {
        while (std::size_t n = p.server->read(*s, buf)) got.insert(got.end(), buf.begin(), buf.begin() + n);
    };
    std::vector<std::uint8_t> sent;
    const Instant t0 = p.now;
    for (int i = 0; i < 200; ++i) {
        const Instant at = t0 + std::chrono::milliseconds(i);
        while (p.advance(at) && p.now < at) {
            p.exchange();
            read();
        }
        std::vector<std::uint8_t> chunk(100, static_cast<std::uint8_t>(i));
        REQUIRE(p.client->write(*s, chunk) == chunk.size());
        sent.insert(sent.end(), chunk.begin(), chunk.end());
        p.exchange();
        read();
    }
    const std::uint64_t before_fin = w.datagrams;
    p.client->finish(*s);
    p.exchange();  // no time passes: the last bytes and the FIN go now
    w.fin_at_once = w.datagrams > before_fin;
    counting = false;
    REQUIRE(p.run_until([&] {
        read();
        return p.server->stream_finished(*s);
    }));
    w.exact = got == sent;
    for (std::size_t i = before; i < rec.events.size(); ++i) {
        const auto* a = std::get_if<cc::AckEvent>(&rec.events[i]);
        if (!a) continue;
        ++w.acks;
        if (a->rate.is_app_limited) ++w.app_limited_acks;
    }
    return w;
}

}  // namespace

TEST_CASE("send coalescing: 100-byte writes leave in full datagrams, app-limited, the FIN at once") {
    // 20 ms of writes fill a packet (1392 bytes in 14 writes); the bound is 20 ms.
    const Writes on = small_writes(20ms);
    const Writes off = small_writes(Duration::zero());
    INFO("datagrams with coalescing ", on.datagrams, ", without ", off.datagrams);
    CHECK(on.exact);
    CHECK(off.exact);
    CHECK(on.fin_at_once);
    // 20 000 bytes: 15 datagrams of 1392 bytes at most, a few more for the ACKs the server asks for.
    CHECK(on.datagrams <= 20);
    CHECK(20'000.0 / static_cast<double>(on.datagrams) >= 1000);
    CHECK(off.datagrams >= 200);  // one per write
    // RFC 9002 §7.8: the waiting bytes are the application's shortfall; every sample is app-limited.
    CHECK(on.acks >= 5);
    CHECK(on.app_limited_acks == on.acks);
}

TEST_CASE("send coalescing: a short bound sends what waits when it expires") {
    // 5 ms: each datagram carries five or six writes (the write at the
    // bound's instant may come before the timer), not a full packet's 14.
    const Writes w = small_writes(5ms);
    CHECK(w.exact);
    CHECK(w.datagrams >= 20'000 / 700);
    CHECK(w.datagrams <= 45);
}
