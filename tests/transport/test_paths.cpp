// Connection IDs, path validation and migration in virtual time (RFC 9000
// §5.1, §8.2, §9): two connections back to back whose datagrams carry the
// path each side sees, with a NAT between them that can rebind (the client's
// source port changes as the server sees it) and a client that can move to a
// new local socket (Connection::migrate). Byte-exact transfers across a
// rebinding and a migration, IDs issued and retired, forged responses.
#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "connection_pair.hpp"
#include "transport/connection_impl.hpp"

using namespace ndm;
using namespace ndm::transport;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kClientNet = 11, kOtherNet = 12;

// A ConnectionPair whose datagrams cross paths: `c2s` maps a client path to
// the path the server sees it as (the NAT's mapping; none: the datagram is
// lost), `s2c` the way back.
struct PathPair : test::ConnectionPair {
    std::map<std::uint64_t, PathId> c2s{{0, PathId{0, kClientNet}}};
    std::map<std::uint64_t, PathId> s2c{{0, PathId{0, kClientNet}}};
    std::vector<Event> client_events, server_events;
    std::function<bool(PathId to_server_path)> drop_to_client;  // on the server's path

    bool exchange_paths() {
        bool moved = false;
        for (bool again = true; again;) {
            again = false;
            Ecn ecn = Ecn::not_ect;
            PathId path;
            while (std::size_t n = client->poll_datagram(buf, now, ecn, path)) {
                again = moved = true;
                const auto it = c2s.find(path.id);
                if (it == c2s.end()) continue;
                std::vector<std::uint8_t> d(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                if (!server) server = Connection::Impl::accept(server_cfg, d, now, nullptr);
                else server->on_datagram(d, now, Ecn::not_ect, it->second);
            }
            while (server) {
                const std::size_t n = server->poll_datagram(buf, now, ecn, path);
                if (!n) break;
                again = moved = true;
                const auto it = s2c.find(path.id);
                if (it == s2c.end() || (drop_to_client && drop_to_client(path))) continue;
                client->on_datagram({buf.data(), n}, now, Ecn::not_ect, it->second);
            }
        }
        while (auto e = client->poll_event()) client_events.push_back(*e);
        while (server)
            if (auto e = server->poll_event()) server_events.push_back(*e);
            else break;
        return moved;
    }

    bool run_paths(const std::function<bool()>& pred, Duration limit = 60s) {
        const Instant deadline = now + limit;
        for (int guard = 0; guard < 10'000'000; ++guard) {
            exchange_paths();
            if (pred()) return true;
            if (!advance(deadline)) return pred();
        }
        return false;
    }

    bool handshake_paths() {
        start();
        return run_paths([&] {
            return client->is_established() && server && server->is_established() &&
                   Connection::Impl::of(*client).handshake_confirmed;
        });
    }
};

template <class E>
std::vector<E> events_of(const std::vector<Event>& all) {
    std::vector<E> out;
    for (const auto& e : all)
        if (const auto* x = std::get_if<E>(&e)) out.push_back(*x);
    return out;
}

std::uint8_t pattern(std::uint64_t i) { return static_cast<std::uint8_t>((i * 131 + (i >> 9)) & 0xff); }

// Client to server, `total` bytes on one stream written a chunk a turn,
// `during` called once a third has arrived; true when every byte arrived, in order and unchanged.
bool transfer(PathPair& p, std::size_t total, const std::function<void()>& during) {
    const StreamId id = *p.client->open_stream();
    std::size_t written = 0, received = 0;
    bool exact = true, called = false;
    std::vector<std::uint8_t> chunk(64 * 1024), in(64 * 1024);
    const bool done = p.run_paths(
        [&] {
            // One chunk a turn: the transfer spans many turns of virtual time.
            if (written < total) {
                const std::size_t n = std::min(chunk.size(), total - written);
                for (std::size_t i = 0; i < n; ++i) chunk[i] = pattern(written + i);
                written += p.client->write(id, {chunk.data(), n}, written + n == total);
            }
            for (;;) {
                const std::size_t n = p.server->read(id, in);
                if (n == 0) break;
                for (std::size_t i = 0; i < n; ++i) exact &= in[i] == pattern(received + i);
                received += n;
            }
            if (!called && received >= total / 3) {
                called = true;
                during();
                return false;
            }
            return called && p.server->stream_finished(id);
        },
        120s);
    return done && exact && received == total;
}

// A 1-RTT packet of `frames` from the client to the server on the server's
// path `path`, sealed with the client's keys under a packet number far
// ahead of the client's own (recorded nowhere).
void inject(PathPair& p, const std::vector<wire::Frame>& frames, PathId path) {
    std::vector<std::uint8_t> payload(256);
    wire::Writer w(payload);
    for (const auto& f : frames) REQUIRE(wire::encode_frame(w, f));
    payload.resize(w.position());
    auto& c = Connection::Impl::of(*p.client);
    static std::uint64_t ahead = 5000;
    std::vector<std::uint8_t> d(1500);
    const std::size_t n = c.seal_payload(d, PacketSpace::application,
                                         c.loss.next_packet_number(PacketSpace::application) + ahead++, payload, 1200);
    REQUIRE(n > 0);
    p.server->on_datagram({d.data(), n}, p.now, Ecn::not_ect, path);
}

}  // namespace

TEST_CASE("paths: each side issues min(peer's limit, 8) connection IDs, and a retired one is replaced and reported") {
    PathPair p;
    p.client_cfg.limits.active_connection_ids = 4;
    p.server_cfg.limits.active_connection_ids = 20;
    REQUIRE(p.handshake_paths());
    p.run_paths([] { return false; }, 200ms);
    auto& s = Connection::Impl::of(*p.server);
    auto& c = Connection::Impl::of(*p.client);
    CHECK(s.local_cids.active() == 4);                 // the client's limit
    CHECK(c.local_cids.active() == kMaxIssuedConnectionIds);  // our cap, below the server's 20
    CHECK(c.peer_cids.active() == 4);
    auto changes = p.server->take_connection_id_changes();
    REQUIRE(changes.size() == 3);
    for (const auto& ch : changes) CHECK(ch.added);
    const auto seq1 = changes[0].cid;

    // RETIRE_CONNECTION_ID for sequence 1: forgotten, and sequence 4 replaces it.
    inject(p, {wire::RetireConnectionIdFrame{1}}, PathId{0, kClientNet});
    CHECK(p.server->is_established());
    changes = p.server->take_connection_id_changes();
    REQUIRE(changes.size() == 2);
    CHECK_FALSE(changes[0].added);
    CHECK(changes[0].cid == seq1);
    CHECK(changes[1].added);
    CHECK(s.local_cids.next_sequence() == 5);
    CHECK_FALSE(s.local_cids.contains(seq1));
    // A repeat is no error.
    inject(p, {wire::RetireConnectionIdFrame{1}}, PathId{0, kClientNet});
    CHECK(p.server->is_established());
    // The replacement reaches the client.
    p.run_paths([] { return false; }, 200ms);
    CHECK(c.peer_cids.active() == 4);
}

TEST_CASE("paths: RETIRE_CONNECTION_ID of an unissued sequence or of the packet's own ID is PROTOCOL_VIOLATION") {
    for (const bool own : {false, true}) {
        CAPTURE(own);
        PathPair p;
        REQUIRE(p.handshake_paths());
        p.run_paths([] { return false; }, 200ms);
        // The packet is sealed for the client's peer_cid: the server's sequence 0.
        inject(p, {wire::RetireConnectionIdFrame{own ? 0u : 9u}}, PathId{0, kClientNet});
        CHECK(p.server->state() == ConnectionState::closing);
        CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
        CHECK(p.server->close_info().reason.find(own ? "sent with that connection ID" : "never issued") !=
              std::string::npos);
    }
}

TEST_CASE("paths: a NAT rebinding mid-transfer: the server follows, validates the new path, bytes exact") {
    PathPair p;
    p.client_cfg.cc = p.server_cfg.cc = "cubic";
    REQUIRE(p.handshake_paths());
    const wire::ConnectionId before = Connection::Impl::of(*p.server).peer_cid;
    const bool ok = transfer(p, 4u << 20, [&] {
        // The NAT gives the client's socket a new port: the server sees path 7
        // (same host), and what it sends to the old port is lost.
        p.c2s[0] = PathId{7, kClientNet};
        p.s2c.erase(0);
        p.s2c[7] = PathId{0, kClientNet};
    });
    CHECK(ok);
    CHECK(p.server->active_path().id == 7);
    const auto moved = events_of<event::PeerMigrated>(p.server_events);
    REQUIRE(moved.size() == 1);
    CHECK(moved[0].from.id == 0);
    CHECK(moved[0].to.id == 7);
    const auto validated = events_of<event::PathValidation>(p.server_events);
    REQUIRE(validated.size() == 1);
    CHECK(validated[0].path.id == 7);
    CHECK(validated[0].validated);
    // RFC 9000 §9.5: a connection ID the old path did not use.
    CHECK_FALSE(Connection::Impl::of(*p.server).peer_cid == before);
    CHECK(Connection::Impl::of(*p.server).address_validated);
}

TEST_CASE("paths: a forged PATH_RESPONSE validates nothing, and without the real one the server falls back") {
    PathPair p;
    REQUIRE(p.handshake_paths());
    p.run_paths([] { return false; }, 300ms);
    // A packet from a new address (path 9) that is not a probe: the server moves there and challenges it.
    inject(p, {wire::PingFrame{}}, PathId{9, kOtherNet});
    CHECK(p.server->active_path().id == 9);
    auto& s = Connection::Impl::of(*p.server);
    CHECK_FALSE(s.address_validated);
    // Its challenges go nowhere the client hears; a response with other data validates nothing.
    p.c2s.clear();
    wire::PathResponseFrame forged;
    forged.data.fill(0x42);
    inject(p, {forged}, PathId{9, kOtherNet});
    p.exchange_paths();
    CHECK_FALSE(s.address_validated);
    CHECK(events_of<event::PathValidation>(p.server_events).empty());
    // RFC 9000 §8.2.4, §9.3.2: abandoned after 3 PTOs, back to the old path.
    p.run_paths([&] { return !events_of<event::PathValidation>(p.server_events).empty(); }, 30s);
    const auto v = events_of<event::PathValidation>(p.server_events);
    REQUIRE(v.size() == 1);
    CHECK(v[0].path.id == 9);
    CHECK_FALSE(v[0].validated);
    CHECK(p.server->active_path().id == 0);
    CHECK(s.address_validated);
    CHECK(p.server->is_established());
    // The anti-amplification limit held on the unvalidated path: at most 3x what came from it.
    CHECK(s.unvalidated_sent <= 3 * s.unvalidated_received + 1200);
}

TEST_CASE("paths: a client migrates to a new local socket: probed first, a fresh ID, bytes exact") {
    PathPair p;
    REQUIRE(p.handshake_paths());
    p.run_paths([] { return false; }, 300ms);
    const wire::ConnectionId before = Connection::Impl::of(*p.client).peer_cid;
    CHECK_FALSE(p.client->migrate(PathId{0, kClientNet}, p.now));  // the path it is on
    bool started = false;
    const bool ok = transfer(p, 2u << 20, [&] {
        // The new socket: path 3 for the client, path 5 as the server sees it (another host).
        p.c2s[3] = PathId{5, kOtherNet};
        p.s2c[5] = PathId{3, kOtherNet};
        started = p.client->migrate(PathId{3, kOtherNet}, p.now);
    });
    CHECK(started);
    CHECK(ok);
    CHECK(p.client->active_path().id == 3);
    CHECK(p.server->active_path().id == 5);
    const auto cv = events_of<event::PathValidation>(p.client_events);
    REQUIRE(cv.size() == 1);
    CHECK(cv[0].path.id == 3);
    CHECK(cv[0].validated);
    CHECK(events_of<event::PeerMigrated>(p.server_events).size() == 1);
    CHECK_FALSE(Connection::Impl::of(*p.client).peer_cid == before);
}

TEST_CASE("paths: a server configured with disable_active_migration says so, and a client does not migrate") {
    PathPair p;
    p.server_cfg.disable_active_migration = true;
    REQUIRE(p.handshake_paths());
    CHECK(p.client->handshake_summary().peer.disable_active_migration);
    CHECK_FALSE(p.client->migrate(PathId{3, kOtherNet}, p.now));
    // A packet from another address is dropped, not followed.
    const auto dropped = p.server->stats(p.now).packets_dropped;
    inject(p, {wire::PingFrame{}}, PathId{9, kOtherNet});
    CHECK(p.server->active_path().id == 0);
    CHECK(p.server->stats(p.now).packets_dropped == dropped + 1);
}
