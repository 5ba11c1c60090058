// The sans-I/O router (src/transport/router, RFC 9000 §5.2, §6, §8.1, §10.3)
// in virtual time, with no socket: datagrams from numbered addresses, the
// clients real Connections. Routing by every ID of a connection; admission
// under the half-open and per-host caps and through the Retry gate; Version
// Negotiation for an unknown version; stateless reset for an unknown ID; and
// a reason counted for every drop.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../fuzz/router_harness.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"
#include "transport/router.hpp"
#include "util/rng.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using transport::PeerAddress;
using transport::RouteDrop;
using transport::Router;
using Kind = Router::Routed::Kind;

namespace {

const Instant t0 = Instant{} + 100s;

PeerAddress addr(std::uint32_t host, std::uint16_t port) { return PeerAddress::ipv4(0x0a000000u + host, port); }

struct Configs {
    ConnectionConfig client, server;
    Configs() { sim::simulation_tls(client, server); }
};

const Configs& configs() {
    static const Configs c;
    return c;
}

transport::RouterConfig server_config(transport::RetryMode retry = transport::RetryMode::never) {
    transport::RouterConfig c;
    c.accept_connections = true;
    c.retry = retry;
    c.connection_config = [] { return configs().server; };
    return c;
}

// A client and the datagrams it sends; each its own seed, so its own IDs.
ConnectionConfig next_client_config() {
    static std::uint64_t seed = 1;
    ConnectionConfig c = configs().client;
    c.seed = ++seed;
    return c;
}

struct Client {
    std::unique_ptr<Connection> conn = Connection::connect(next_client_config(), t0);
    std::vector<std::uint8_t> next() {
        std::vector<std::uint8_t> d(kMaxDatagramSize);
        d.resize(conn->poll_datagram(d, t0));
        REQUIRE(!d.empty());
        return d;
    }
};

wire::quic::PacketView header(const std::vector<std::uint8_t>& d) {
    wire::quic::PacketView v;
    REQUIRE(wire::quic::parse_packet_header(d, wire::kShortCidLength, v) == wire::quic::HeaderError::none);
    return v;
}

// A short-header datagram of `size` bytes to connection ID `cid`.
std::vector<std::uint8_t> short_header(std::span<const std::uint8_t> cid, std::size_t size = 60) {
    std::vector<std::uint8_t> d(size, 0x5a);
    d[0] = 0x41;
    std::copy(cid.begin(), cid.end(), d.begin() + 1);
    return d;
}

}  // namespace

TEST_CASE("router: an Initial is accepted, and every ID of the connection routes to it") {
    Router router(server_config());
    Client c;
    const auto initial = c.next();
    auto r = router.handle(t0, addr(1, 4000), initial, Ecn::not_ect);
    REQUIRE(r.kind == Kind::accepted);
    REQUIRE(r.connection);
    CHECK(r.handle != 0);
    CHECK(r.evicted.empty());
    CHECK(router.half_open() == 1);
    CHECK(router.stats().accepted == 1);
    const Router::Handle h = r.handle;
    const auto local = r.connection->local_cid();
    const std::vector<std::uint8_t> local_cid(local.begin(), local.end());

    // A retransmitted Initial (the client's first DCID) and the server's own ID reach it.
    CHECK(router.handle(t0, addr(1, 4000), initial, Ecn::not_ect).handle == h);
    CHECK(router.handle(t0, addr(1, 4000), initial, Ecn::not_ect).kind == Kind::connection);
    CHECK(router.handle(t0, addr(9, 9), short_header(local_cid), Ecn::not_ect).handle == h);  // any address

    // Many IDs to one connection (what NEW_CONNECTION_ID will add).
    const std::vector<std::uint8_t> second = {9, 8, 7, 6, 5, 4, 3, 2};
    CHECK(router.handle(t0, addr(1, 4000), short_header(second), Ecn::not_ect).kind != Kind::connection);
    router.add_cid(h, second);
    auto by_second = router.handle(t0, addr(1, 4000), short_header(second), Ecn::not_ect);
    CHECK(by_second.kind == Kind::connection);
    CHECK(by_second.handle == h);
    CHECK(router.connections_to(addr(1, 4000)) == std::vector<Router::Handle>{h});

    router.established(h);
    CHECK(router.half_open() == 0);
    router.remove(h);
    CHECK(router.size() == 0);
    CHECK(router.connections_to(addr(1, 4000)).empty());
    for (const auto& cid : {local_cid, second}) {
        const auto gone = router.handle(t0, addr(1, 4000), short_header(cid), Ecn::not_ect);
        CHECK(gone.kind == Kind::respond);  // a stateless reset: the ID is unknown now
    }
}

TEST_CASE("router: a client's router routes to the connections it was given and answers nothing") {
    Router router(transport::RouterConfig{});
    const std::vector<std::uint8_t> cid = {1, 2, 3, 4, 5, 6, 7, 8};
    const Router::Handle h = router.add(addr(1, 443), cid);
    CHECK(router.handle(t0, addr(1, 443), short_header(cid), Ecn::ect0).handle == h);
    Client c;
    const auto refused = router.handle(t0, addr(2, 4000), c.next(), Ecn::not_ect);
    CHECK(refused.kind == Kind::drop);
    CHECK(refused.reason == RouteDrop::not_accepting);
    const auto unknown = router.handle(t0, addr(3, 5), short_header(std::vector<std::uint8_t>(8, 0xee)), Ecn::not_ect);
    CHECK(unknown.kind == Kind::drop);
    CHECK(unknown.reason == RouteDrop::unknown_cid);
    const auto nothing = router.handle(t0, addr(3, 5), {}, Ecn::not_ect);
    CHECK(nothing.reason == RouteDrop::malformed);
    CHECK(router.stats().drops(RouteDrop::not_accepting) == 1);
    CHECK(router.stats().drops(RouteDrop::unknown_cid) == 1);
    CHECK(router.stats().drops(RouteDrop::malformed) == 1);
    CHECK(router.reset_tokens() == nullptr);
}

TEST_CASE("router: beyond max_half_open a new handshake evicts the oldest (a SYN cache)") {
    auto cfg = server_config();
    cfg.max_half_open = 2;
    Router router(cfg);
    std::vector<Router::Handle> handles;
    for (std::uint32_t i = 0; i < 2; ++i) {
        Client c;
        const auto r = router.handle(t0, addr(i + 1, 4000), c.next(), Ecn::not_ect);
        REQUIRE(r.kind == Kind::accepted);
        CHECK(r.evicted.empty());
        handles.push_back(r.handle);
    }
    Client third;
    const auto r = router.handle(t0, addr(3, 4000), third.next(), Ecn::not_ect);
    REQUIRE(r.kind == Kind::accepted);
    REQUIRE(r.evicted.size() == 1);
    CHECK(r.evicted[0].handle == handles[0]);
    CHECK(router.half_open() == 2);
    CHECK(router.stats().half_open_evicted == 1);
    // An established connection no longer counts, nor is it evicted.
    router.established(handles[1]);
    Client fourth;
    const auto r4 = router.handle(t0, addr(4, 4000), fourth.next(), Ecn::not_ect);
    REQUIRE(r4.kind == Kind::accepted);
    CHECK(r4.evicted.empty());
}

TEST_CASE("router: the per-host cap drops without Retry, and with it admits a proven address in place of a handshake") {
    auto cfg = server_config();
    cfg.max_connections_per_host = 1;
    {
        Router router(cfg);
        Client a, b, other;
        REQUIRE(router.handle(t0, addr(1, 4000), a.next(), Ecn::not_ect).kind == Kind::accepted);
        const auto refused = router.handle(t0, addr(1, 4001), b.next(), Ecn::not_ect);  // same host, another port
        CHECK(refused.kind == Kind::drop);
        CHECK(refused.reason == RouteDrop::per_host_cap);
        CHECK(router.handle(t0, addr(2, 4000), other.next(), Ecn::not_ect).kind == Kind::accepted);
        CHECK(router.stats().drops(RouteDrop::per_host_cap) == 1);
    }
    cfg.retry = transport::RetryMode::under_load;
    Router router(cfg);
    Client a, b;
    const auto first = router.handle(t0, addr(1, 4000), a.next(), Ecn::not_ect);
    REQUIRE(first.kind == Kind::accepted);
    const auto retry = router.handle(t0, addr(1, 4001), b.next(), Ecn::not_ect);
    REQUIRE(retry.kind == Kind::respond);
    CHECK(header(retry.response).kind == wire::quic::PacketKind::retry);
    b.conn->on_datagram(retry.response, t0);
    const auto proven = router.handle(t0 + 1ms, addr(1, 4001), b.next(), Ecn::not_ect);
    REQUIRE(proven.kind == Kind::accepted);
    REQUIRE(proven.evicted.size() == 1);
    CHECK(proven.evicted[0].handle == first.handle);  // the host's handshake in progress
    // Once the host's connections are all established, a proven address is refused too.
    router.established(proven.handle);
    router.remove(first.handle);
    Client c;
    const auto retry2 = router.handle(t0, addr(1, 4002), c.next(), Ecn::not_ect);
    REQUIRE(retry2.kind == Kind::respond);
    c.conn->on_datagram(retry2.response, t0);
    const auto refused = router.handle(t0 + 1ms, addr(1, 4002), c.next(), Ecn::not_ect);
    CHECK(refused.kind == Kind::drop);
    CHECK(refused.reason == RouteDrop::per_host_cap);
}

TEST_CASE("router: with Retry always, only an Initial returning a valid token from its address gets in") {
    Router router(server_config(transport::RetryMode::always));
    Client c;
    const auto initial = c.next();
    const auto retry = router.handle(t0, addr(1, 4000), initial, Ecn::not_ect);
    REQUIRE(retry.kind == Kind::respond);
    const auto rv = header(retry.response);
    CHECK(rv.kind == wire::quic::PacketKind::retry);
    CHECK(wire::quic::verify_retry(rv, header(initial).dcid) == wire::quic::HeaderError::none);
    CHECK(retry.response.size() < 3 * initial.size());  // never an amplifier (RFC 9000 §8.1)
    CHECK(router.size() == 0);                           // a Retry costs no state
    CHECK(router.stats().retries_sent == 1);
    c.conn->on_datagram(retry.response, t0);
    const auto with_token = c.next();
    // The token from another address (or port) is invalid: dropped and counted.
    const auto moved = router.handle(t0, addr(1, 4001), with_token, Ecn::not_ect);
    CHECK(moved.kind == Kind::drop);
    CHECK(moved.reason == RouteDrop::invalid_token);
    auto forged = with_token;
    const auto v = header(forged);
    const auto at = static_cast<std::size_t>(v.token.data() - forged.data()) + v.token.size() - 1;
    forged[at] ^= 1;
    CHECK(router.handle(t0, addr(1, 4000), forged, Ecn::not_ect).reason == RouteDrop::invalid_token);
    CHECK(router.stats().drops(RouteDrop::invalid_token) == 2);
    const auto ok = router.handle(t0, addr(1, 4000), with_token, Ecn::not_ect);
    REQUIRE(ok.kind == Kind::accepted);
    CHECK(ok.connection->state() == ConnectionState::handshaking);
}

TEST_CASE("router: a version 2 client gets its Retry in version 2 and is accepted in it (RFC 9369 §4.1)") {
    Router router(server_config(transport::RetryMode::always));
    ConnectionConfig cfg = next_client_config();
    cfg.version = kQuicVersion2;
    Client c{Connection::connect(cfg, t0)};
    const auto initial = c.next();
    CHECK(header(initial).version == kQuicVersion2);
    const auto retry = router.handle(t0, addr(1, 4000), initial, Ecn::not_ect);
    REQUIRE(retry.kind == Kind::respond);
    const auto rv = header(retry.response);
    CHECK(rv.kind == wire::quic::PacketKind::retry);
    CHECK(rv.version == kQuicVersion2);
    CHECK(wire::quic::verify_retry(rv, header(initial).dcid) == wire::quic::HeaderError::none);
    c.conn->on_datagram(retry.response, t0);
    const auto ok = router.handle(t0, addr(1, 4000), c.next(), Ecn::not_ect);
    REQUIRE(ok.kind == Kind::accepted);
    CHECK(ok.connection->state() == ConnectionState::handshaking);
}

TEST_CASE("router: an Initial of an unknown version gets Version Negotiation, and keeps no state") {
    Router router(server_config());
    Client c;
    auto other = c.next();
    other[1] = 0x1a, other[2] = 0x2a, other[3] = 0x3a, other[4] = 0x4a;  // a reserved version (RFC 9000 §15)
    const auto vn = router.handle(t0, addr(1, 4000), other, Ecn::not_ect);
    REQUIRE(vn.kind == Kind::respond);
    const auto v = header(vn.response);
    CHECK(v.kind == wire::quic::PacketKind::version_negotiation);
    CHECK(wire::quic::check_version_negotiation(v, 0x1a2a3a4a) == wire::quic::HeaderError::none);
    CHECK(wire::quic::listed_version(v, 0) == kQuicVersion1);
    CHECK(wire::quic::listed_version(v, 1) == kQuicVersion2);
    const auto sent = header(other);
    CHECK(std::ranges::equal(v.dcid, sent.scid));  // the IDs swapped (§17.2.1)
    CHECK(std::ranges::equal(v.scid, sent.dcid));
    CHECK(router.size() == 0);
    CHECK(router.stats().version_negotiations_sent == 1);
    // Under 1200 bytes it is not answered (§14.1): no amplification.
    other.resize(kMinDatagramSize - 1);
    const auto small = router.handle(t0, addr(1, 4000), other, Ecn::not_ect);
    CHECK(small.kind == Kind::drop);
    CHECK(small.reason == RouteDrop::not_a_connection);
}

TEST_CASE("router: a short header for an unknown ID gets a smaller stateless reset, or is offered to its peer's connections") {
    auto cfg = server_config();
    cfg.stateless_reset_key.emplace();
    cfg.stateless_reset_key->fill(7);
    Router router(cfg);
    const std::vector<std::uint8_t> cid = {0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8};
    const auto r = router.handle(t0, addr(5, 6000), short_header(cid, 50), Ecn::not_ect);
    REQUIRE(r.kind == Kind::respond);
    CHECK(r.response.size() < 50);  // RFC 9000 §10.3.3: never a loop
    CHECK(r.response.size() >= 21);
    CHECK((r.response[0] & 0xc0) == 0x40);  // looks like a short header
    const auto token = router.reset_tokens()(cid);
    CHECK(std::equal(token.begin(), token.end(), r.response.end() - 16));
    CHECK(router.stats().stateless_resets_sent == 1);
    // Too short to answer with a smaller one: dropped.
    CHECK(router.handle(t0, addr(5, 6000), short_header(cid, 21), Ecn::not_ect).reason == RouteDrop::unknown_cid);

    // From the address of a connection: offered to it first (its peer's reset, §10.3.1).
    Client c;
    const auto acc = router.handle(t0, addr(6, 7000), c.next(), Ecn::not_ect);
    REQUIRE(acc.kind == Kind::accepted);
    const auto offer = router.handle(t0, addr(6, 7000), short_header(cid, 50), Ecn::not_ect);
    REQUIRE(offer.kind == Kind::offer_reset);
    CHECK(offer.candidates == std::vector<Router::Handle>{acc.handle});
    CHECK(router.reset(t0, short_header(cid, 50)).size() < 50);
}

// The router fuzz target's driver (fuzz/router_harness.hpp) on its seed
// corpus and on seeded random inputs, in the ordinary build: every invariant
// it checks (no answer over three times its prompt, handles the router holds,
// the half-open cap, the connections held) must hold on each.
TEST_CASE("router: the fuzz driver's seeds and 300 seeded random inputs keep every invariant") {
    const auto dir = std::filesystem::path(NDM_SOURCE_DIR) / "fuzz/corpus/router";
    std::map<std::string, fuzz::RouterRunStats> seeds;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(e.path(), std::ios::binary);
        const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        seeds[e.path().filename().string()] = fuzz::run_router_input(bytes.data(), bytes.size());
    }
    // The seeds reach what they are named for.
    REQUIRE(seeds.count("accept"));
    CHECK(seeds["accept"].accepted == 1);
    CHECK(seeds["accept"].routed >= 2);
    CHECK(seeds["retry-accept"].responses >= 1);  // the Retry
    CHECK(seeds["retry-accept"].accepted == 1);   // its token returned from the right address
    CHECK(seeds["caps"].accepted == 2);
    CHECK(seeds["version"].responses == 2);  // a Retry, then Version Negotiation for the other version
    CHECK(seeds["version"].accepted == 0);
    util::Xoshiro256 rng(2026);
    fuzz::RouterRunStats total;
    for (int i = 0; i < 300; ++i) {
        std::vector<std::uint8_t> input(64 + rng.below(1024));
        for (auto& b : input) b = static_cast<std::uint8_t>(rng.next());
        const auto st = fuzz::run_router_input(input.data(), input.size());
        total.accepted += st.accepted;
        total.responses += st.responses;
        total.drops += st.drops;
    }
    MESSAGE("random inputs: ", total.accepted, " accepted, ", total.responses, " answered, ", total.drops, " dropped");
    CHECK(total.accepted > 0);
    CHECK(total.responses > 0);
    CHECK(total.drops > 0);
}
