// The server's Retry gate (src/transport/retry_gate, RFC 9000 §8.1.2), with
// the addresses of src/io's sockets (io::Address::peer()):
// when it retries, the Retry it writes (RFC 9001 §5.8 tag, the client's SCID
// echoed, a fresh SCID), and the token check: valid for the address and port
// it was issued to within its lifetime, invalid when forged, expired or
// moved, ignored when it is not one of ours (§8.1.3).
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "io/backend.hpp"
#include "transport/retry_gate.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using namespace std::chrono_literals;
using Kind = transport::RetryGate::TokenCheck::Kind;

namespace {

const std::vector<std::uint8_t> kClientDcid = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<std::uint8_t> kClientScid = {0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8};

// What the gate reads of a client Initial: its IDs and token.
wire::quic::PacketView initial(std::span<const std::uint8_t> token = {},
                               std::span<const std::uint8_t> dcid = kClientDcid) {
    wire::quic::PacketView v;
    v.kind = wire::quic::PacketKind::initial;
    v.version = wire::quic::kVersion1;
    v.dcid = dcid;
    v.scid = kClientScid;
    v.token = token;
    return v;
}

struct Retry {
    std::vector<std::uint8_t> bytes;
    wire::quic::PacketView view;
};

Retry retry_from(transport::RetryGate& gate, const transport::PeerAddress& peer, Instant now) {
    Retry r;
    r.bytes.resize(transport::RetryGate::kMaxRetrySize);
    r.bytes.resize(gate.write_retry(r.bytes, initial(), peer, now));
    REQUIRE(!r.bytes.empty());
    REQUIRE(wire::quic::parse_packet_header(r.bytes, wire::kShortCidLength, r.view) == wire::quic::HeaderError::none);
    return r;
}

}  // namespace

TEST_CASE("retry gate: never, always, and under load from the threshold of handshakes in progress on") {
    const Instant t = Instant{} + 10s;
    CHECK_FALSE(transport::RetryGate(transport::RetryMode::never, 0).wants_retry(1000, t));
    CHECK(transport::RetryGate(transport::RetryMode::always, 1000).wants_retry(0, t));
    transport::RetryGate load(transport::RetryMode::under_load, 3);
    CHECK_FALSE(load.wants_retry(2, t));
    CHECK(load.wants_retry(3, t));
    CHECK(load.wants_retry(4, t));
    CHECK(parse_retry_policy("auto") == RetryPolicy::under_load);
    CHECK(parse_retry_policy("always") == RetryPolicy::always);
    CHECK(parse_retry_policy("never") == RetryPolicy::never);
    CHECK_THROWS_WITH_AS(parse_retry_policy("sometimes"),
                         "unknown Retry policy 'sometimes' (expected auto, always or never)", std::invalid_argument);
}

TEST_CASE("retry gate: under load also counts the handshakes begun within the last second") {
    // Handshakes that end at once (spoofed ports answering with ICMP errors)
    // never pile up, but each cost a TLS handshake: their rate counts too.
    transport::RetryGate gate(transport::RetryMode::under_load, 4);
    const Instant t0 = Instant{} + 100s;
    for (int i = 0; i < 3; ++i) gate.on_handshake_started(t0 + std::chrono::milliseconds(100 * i));
    CHECK_FALSE(gate.wants_retry(0, t0 + 300ms));
    gate.on_handshake_started(t0 + 300ms);
    CHECK(gate.wants_retry(0, t0 + 300ms));
    CHECK(gate.wants_retry(0, t0 + 900ms));         // the last second still holds them all
    CHECK_FALSE(gate.wants_retry(0, t0 + 1900ms));  // they have aged out
    CHECK_FALSE(gate.wants_retry(0, t0 + 5s));
    CHECK(gate.wants_retry(4, t0 + 5s));            // in progress still counts
}

TEST_CASE("retry gate: the Retry echoes the client's SCID, names a fresh SCID and carries a verified tag") {
    transport::RetryGate gate(transport::RetryMode::always, 0);
    const auto peer = io::Address::parse("127.0.0.1", 4000).peer();
    const Retry a = retry_from(gate, peer, Instant{} + 1s);
    CHECK(a.view.kind == wire::quic::PacketKind::retry);
    CHECK(std::vector(a.view.dcid.begin(), a.view.dcid.end()) == kClientScid);
    CHECK(a.view.scid.size() == wire::kShortCidLength);
    CHECK_FALSE(a.view.token.empty());
    CHECK(wire::quic::verify_retry(a.view, kClientDcid) == wire::quic::HeaderError::none);
    CHECK(wire::quic::verify_retry(a.view, kClientScid) == wire::quic::HeaderError::retry_integrity);
    CHECK(a.bytes.size() < 3 * kMinDatagramSize);  // never an amplifier (RFC 9000 §8.1)
    const Retry b = retry_from(gate, peer, Instant{} + 1s);
    CHECK_FALSE(std::ranges::equal(a.view.scid, b.view.scid));  // unpredictable IDs
    CHECK_FALSE(std::ranges::equal(a.view.token, b.view.token));
}

TEST_CASE("retry gate: a token is valid from its address and port within 10 s, and nowhere else") {
    transport::RetryGate gate(transport::RetryMode::always, 0);
    const auto peer = io::Address::parse("127.0.0.1", 4000).peer();
    const Instant t0 = Instant{} + 100s;
    const Retry r = retry_from(gate, peer, t0);
    const std::vector<std::uint8_t> token(r.view.token.begin(), r.view.token.end());

    const auto ok = gate.check_token(initial(token, r.view.scid), peer, t0 + 9s);
    CHECK(ok.kind == Kind::valid);
    CHECK(ok.retry.original_dcid == kClientDcid);  // for original_destination_connection_id
    CHECK(gate.check_token(initial(token), io::Address::parse("127.0.0.1", 4001).peer(), t0 + 1s).kind == Kind::invalid);
    CHECK(gate.check_token(initial(token), io::Address::parse("127.0.0.2", 4000).peer(), t0 + 1s).kind == Kind::invalid);
    CHECK(gate.check_token(initial(token), io::Address::parse("::1", 4000).peer(), t0 + 1s).kind == Kind::invalid);
    CHECK(gate.check_token(initial(token), peer, t0 + 11s).kind == Kind::invalid);  // expired
    for (std::size_t i = 1; i < token.size(); ++i) {
        auto bad = token;
        bad[i] ^= 0x01;
        CHECK(gate.check_token(initial(bad), peer, t0 + 1s).kind == Kind::invalid);
    }
    transport::RetryGate other(transport::RetryMode::always, 0);  // another server's (or a restarted one's) key
    CHECK(other.check_token(initial(token), peer, t0 + 1s).kind == Kind::invalid);
    auto switched = initial(token, r.view.scid);  // RFC 9369 §4.1: the version may not change after a Retry
    switched.version = wire::quic::kVersion2;
    CHECK(gate.check_token(switched, peer, t0 + 1s).kind == Kind::invalid);
}

TEST_CASE("retry gate: a NEW_TOKEN token admits its host in the version it was issued for only (RFC 9369 section 5)") {
    transport::RetryGate gate(transport::RetryMode::always, 0);
    const auto peer = io::Address::parse("127.0.0.1", 4000).peer();
    const Instant t0 = Instant{} + 100s;
    const auto token = gate.issue_new_token(peer, wire::quic::kVersion1, t0);
    const auto later = io::Address::parse("127.0.0.1", 4100).peer();  // a later connection, another port
    const auto ok = gate.check_token(initial(token), later, t0 + 1h);
    CHECK(ok.kind == Kind::valid);
    CHECK(ok.retry.from_new_token);
    auto v2 = initial(token);
    v2.version = wire::quic::kVersion2;
    CHECK(gate.check_token(v2, later, t0 + 1h).kind == Kind::none);  // as no token: the address is not proven
}

TEST_CASE("retry gate: a token that is not a Retry token of this shape counts as none (RFC 9000 8.1.3)") {
    transport::RetryGate gate(transport::RetryMode::always, 0);
    const auto peer = io::Address::parse("127.0.0.1", 4000).peer();
    CHECK(gate.check_token(initial(), peer, Instant{}).kind == Kind::none);
    const std::vector<std::uint8_t> foreign(40, 0x02);  // e.g. another server's NEW_TOKEN token
    CHECK(gate.check_token(initial(foreign), peer, Instant{}).kind == Kind::none);
    const std::vector<std::uint8_t> tiny = {0x01, 0x02};
    CHECK(gate.check_token(initial(tiny), peer, Instant{}).kind == Kind::none);
    const std::vector<std::uint8_t> huge(200, 0x01);
    CHECK(gate.check_token(initial(huge), peer, Instant{}).kind == Kind::none);
}
