// Key update on request (RFC 9001 §6), between two connections back to back
// (tests/support/connection_pair.hpp): Connection::request_key_update() is
// refused before the handshake is confirmed and while the last update is
// unanswered (§6.1, §6.5); once started, both phases carry stream data both
// ways, byte-exact, the peer answers in kind, and ConnectionStats::key_updates
// counts each phase on both sides. The phase is read from each 1-RTT packet's
// key phase bit with header protection removed (the same key in every
// phase, §6.1): the receiver's keys are not touched.
#include <doctest/doctest.h>

#include <array>
#include <random>
#include <vector>

#include "connection_pair.hpp"
#include "crypto/packet_protection.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using ndm::test::ConnectionPair;

namespace {

std::vector<std::uint8_t> bytes(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

// Short-header datagrams seen in one direction, by key phase, and those of
// them long enough to carry stream data (more than ACKs).
struct Phases {
    std::array<int, 2> packets{}, data_packets{};
    void see(Connection& to, const std::vector<std::uint8_t>& d) {
        if (d.empty() || (d[0] & wire::quic::kLongForm) != 0) return;
        const auto& impl = Connection::Impl::of(to);
        if (!impl.one_rtt) return;
        std::vector<std::uint8_t> copy = d;
        const auto h = crypto::remove_header_protection(copy, 1 + wire::kShortCidLength, impl.one_rtt->read_hp());
        REQUIRE(h);
        const int phase = (h->first_byte & wire::quic::kKeyPhaseBit) != 0 ? 1 : 0;
        ++packets[phase];
        if (d.size() > 500) ++data_packets[phase];
    }
};

// Sends `data` from one side on stream `id` and reads it on the other;
// true when it arrived whole and equal.
bool transfer(ConnectionPair& p, Connection& from, Connection& to, StreamId id, const std::vector<std::uint8_t>& data) {
    std::size_t written = 0;
    std::vector<std::uint8_t> got, buf(1 << 16);
    const bool ok = p.run_until([&] {
        if (written < data.size())
            written += from.write(id, std::span(data).subspan(written));
        while (const std::size_t n = to.read(id, buf)) got.insert(got.end(), buf.begin(), buf.begin() + n);
        return got.size() >= data.size();
    });
    return ok && got == data;
}

}  // namespace

TEST_CASE("key update: requested after the handshake, both phases carry data both ways, and each is counted") {
    ConnectionPair p;
    Phases up, down;
    p.to_server = [&](std::vector<std::uint8_t>& d) {
        if (p.server) up.see(*p.server, d);
        return true;
    };
    p.to_client = [&](std::vector<std::uint8_t>& d) {
        down.see(*p.client, d);
        return true;
    };
    p.start();
    CHECK_FALSE(p.client->request_key_update());  // no 1-RTT keys, nothing confirmed
    REQUIRE(p.run_until([&] { return p.client->is_established() && p.server && p.server->is_established(); }));

    const StreamId id = *p.client->open_stream();
    REQUIRE(transfer(p, *p.client, *p.server, id, bytes(200'000, 1)));
    REQUIRE(transfer(p, *p.server, *p.client, id, bytes(200'000, 2)));
    CHECK(p.client->stats(p.now).key_updates == 0);
    CHECK(up.data_packets[0] > 0);
    CHECK(down.data_packets[0] > 0);
    CHECK(up.packets[1] + down.packets[1] == 0);

    REQUIRE(p.client->request_key_update());
    CHECK_FALSE(p.client->request_key_update());  // unanswered yet (§6.1)
    CHECK(p.client->stats(p.now).key_updates == 1);
    REQUIRE(transfer(p, *p.client, *p.server, id, bytes(200'000, 3)));
    REQUIRE(transfer(p, *p.server, *p.client, id, bytes(200'000, 4)));
    CHECK(up.data_packets[1] > 0);
    CHECK(down.data_packets[1] > 0);
    CHECK(p.client->stats(p.now).key_updates == 1);
    CHECK(p.server->stats(p.now).key_updates == 1);  // answered

    // The server starts the next one: phase 0 again, under new keys.
    const std::array<int, 2> up_before = up.data_packets, down_before = down.data_packets;
    REQUIRE(p.server->request_key_update());
    REQUIRE(transfer(p, *p.server, *p.client, id, bytes(200'000, 5)));
    REQUIRE(transfer(p, *p.client, *p.server, id, bytes(200'000, 6)));
    CHECK(up.data_packets[0] > up_before[0]);
    CHECK(down.data_packets[0] > down_before[0]);
    CHECK(p.client->stats(p.now).key_updates == 2);
    CHECK(p.server->stats(p.now).key_updates == 2);
    CHECK(p.client->is_established());
    CHECK(p.server->is_established());
    CHECK(p.client->stats(p.now).packets_dropped == 0);
    CHECK(p.server->stats(p.now).packets_dropped == 0);
}

TEST_CASE("key update: refused until the handshake is confirmed, and after the connection ends") {
    ConnectionPair p;
    bool confirmed_seen = false;
    p.start();
    // The server completes (and, RFC 9001 §4.1.2, confirms) first; the client
    // confirms on HANDSHAKE_DONE. Until then the client's request is refused.
    REQUIRE(p.run_until([&] {
        if (p.client->is_established() && !Connection::Impl::of(*p.client).handshake_confirmed) {
            CHECK_FALSE(p.client->request_key_update());
            confirmed_seen = true;
        }
        return p.server && p.server->is_established() && Connection::Impl::of(*p.client).handshake_confirmed;
    }));
    const StreamId id = *p.client->open_stream();
    REQUIRE(transfer(p, *p.client, *p.server, id, bytes(10'000, 7)));
    p.client->close(0, "done", p.now);
    CHECK_FALSE(p.client->request_key_update());
    CHECK(p.client->stats(p.now).key_updates == 0);
    MESSAGE("client established before confirmation seen: " << confirmed_seen);
}
