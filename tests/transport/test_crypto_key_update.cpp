// 1-RTT key update (src/crypto/key_phase, RFC 9001 §6) between two
// OneRttKeys in virtual time: an update initiated by one side and answered by
// the other, late packets read with the previous keys until three PTOs have
// passed, the rules that refuse an update, and the AEAD limits (§6.6).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "crypto/key_phase.hpp"
#include "crypto/limits.hpp"
#include "crypto_test_util.hpp"

using ndm::crypto::QuicVersion;

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;
using ndm::crypto::AeadLimits;
using ndm::crypto::AeadUsage;
using ndm::crypto::CipherSuite;
using ndm::crypto::OneRttKeys;
using ndm::crypto::Secret;
using Open = OneRttKeys::Open;

namespace {

constexpr auto kSuite = CipherSuite::aes128_gcm_sha256;
constexpr Duration kPto = 100ms;
constexpr std::size_t kPnOffset = 9;  // first byte and an 8-byte DCID

Secret secret(std::uint8_t fill) {
    Secret s;
    s.size = 32;
    s.bytes.fill(fill);
    return s;
}

// A short header packet (2-byte packet number) with a 32-byte payload.
std::vector<std::uint8_t> plain_packet(std::uint64_t pn) {
    std::vector<std::uint8_t> p(kPnOffset + 2 + 32 + ndm::crypto::kAeadTagSize, 0xab);
    p[0] = 0x41;
    p[kPnOffset] = static_cast<std::uint8_t>(pn >> 8);
    p[kPnOffset + 1] = static_cast<std::uint8_t>(pn);
    return p;
}

std::vector<std::uint8_t> send(OneRttKeys& from, std::uint64_t pn) {
    auto p = plain_packet(pn);
    REQUIRE(from.protect(p, kPnOffset, 2, pn));
    return p;
}

// The receive path; the full packet number is the truncated one here.
Open receive(OneRttKeys& to, std::vector<std::uint8_t> packet, Instant now) {
    const auto header = ndm::crypto::remove_header_protection(packet, kPnOffset, to.read_hp());
    if (!header) return Open::failed;
    const bool phase = (header->first_byte & 0x04) != 0;
    return to.open(packet, header->header_length(kPnOffset), phase, header->truncated_pn, now, kPto).result;
}

struct Pair {
    OneRttKeys client{kSuite, QuicVersion::v1, secret(2), secret(1)};  // reads the server's secret, writes its own
    OneRttKeys server{kSuite, QuicVersion::v1, secret(1), secret(2)};
};

// Packet 0 read and acknowledged, the client updates, packet 1 (phase 1)
// makes the server answer.
void client_updates(Pair& p, Instant now) {
    CHECK(receive(p.server, send(p.client, 0), now) == Open::ok);
    p.client.on_packet_acked(0);
    REQUIRE(p.client.initiate_update());
    CHECK(receive(p.server, send(p.client, 1), now) == Open::ok);
    CHECK(p.server.key_phase());
}

}  // namespace

TEST_CASE("crypto key update: initiated, answered, late packets read with the previous keys for 3 PTO") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        Pair p;
        const Instant t0{};
        CHECK(receive(p.server, send(p.client, 0), t0) == Open::ok);
        const auto late1 = send(p.client, 1);
        const auto late2 = send(p.client, 2);

        CHECK_FALSE(p.client.can_initiate_update());  // §6.1: nothing of this phase acknowledged yet
        CHECK_FALSE(p.client.initiate_update());
        p.client.on_packet_acked(0);
        REQUIRE(p.client.initiate_update());
        CHECK(p.client.key_phase());
        CHECK_FALSE(p.client.can_initiate_update());  // the peer has not answered

        // The server reads phase 1 with its precomputed next keys and answers.
        CHECK(receive(p.server, send(p.client, 3), t0 + 10ms) == Open::ok);
        CHECK(p.server.key_phase());
        CHECK(p.server.updates() == 1);
        CHECK(p.server.previous_keys_discard_at() == t0 + 10ms + 3 * kPto);
        CHECK(receive(p.client, send(p.server, 0), t0 + 20ms) == Open::ok);
        CHECK(p.client.updates() == 1);

        // A late phase-0 packet within 3 PTO: the previous keys; after: dropped.
        CHECK(receive(p.server, late1, t0 + 10ms + 3 * kPto - 1ns) == Open::ok);
        CHECK(receive(p.server, late2, t0 + 10ms + 3 * kPto) == Open::failed);
        CHECK(p.server.previous_keys_discard_at() == ndm::kNever);
        CHECK(p.server.key_phase());  // a failed packet changes no phase
        CHECK(receive(p.server, send(p.client, 4), t0 + 400ms) == Open::ok);
    }
}

TEST_CASE("crypto key update: the server initiates the second update and the client answers") {
    Pair p;
    const Instant t0{};
    client_updates(p, t0);
    CHECK(receive(p.client, send(p.server, 0), t0) == Open::ok);
    CHECK(receive(p.client, send(p.server, 1), t0) == Open::ok);

    // Back to phase 0 keys of generation 2, started by the server.
    p.server.on_packet_acked(1);
    REQUIRE(p.server.initiate_update());
    CHECK_FALSE(p.server.key_phase());
    CHECK(receive(p.client, send(p.server, 2), t0 + 1s) == Open::ok);
    CHECK_FALSE(p.client.key_phase());
    CHECK(p.client.updates() == 2);
    CHECK(receive(p.server, send(p.client, 2), t0 + 1s) == Open::ok);
    CHECK(p.server.updates() == 2);
}

TEST_CASE("crypto key update: a new-phase packet numbered below the current phase is KEY_UPDATE_ERROR") {
    Pair p;
    const Instant t0{};
    const auto low = send(p.client, 3);
    CHECK(receive(p.server, send(p.client, 5), t0) == Open::ok);
    p.client.on_packet_acked(5);
    REQUIRE(p.client.initiate_update());
    // Packet 4 protected with the new keys arrives after packet 5 of the old
    // phase: a higher number used older keys (§6.4).
    CHECK(receive(p.server, send(p.client, 4), t0) == Open::key_update_error);
    CHECK_FALSE(p.server.key_phase());
    CHECK(receive(p.server, low, t0) == Open::ok);  // still in phase 0
}

TEST_CASE("crypto key update: the peer's second update before any answer is KEY_UPDATE_ERROR") {
    Pair p;
    const Instant t0{};
    client_updates(p, t0);  // the server answers, sends nothing

    // A client that updates again at once (phase 0, generation 2), built by hand.
    const Secret gen2 = ndm::crypto::next_secret(kSuite, ndm::crypto::next_secret(kSuite, secret(1), QuicVersion::v1), QuicVersion::v1);
    const auto base = ndm::crypto::derive_packet_keys(kSuite, secret(1), QuicVersion::v1);
    ndm::crypto::DirectionKeys keys(ndm::crypto::updated_keys(base, gen2, QuicVersion::v1));
    auto packet = plain_packet(2);
    REQUIRE(ndm::crypto::protect(packet, kPnOffset, 2, 2, keys.aead, keys.hp));
    CHECK(receive(p.server, packet, t0) == Open::key_update_error);
    CHECK(p.server.updates() == 1);
}

TEST_CASE("crypto key update: a forged packet with the other key phase fails and counts toward the integrity limit") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        Pair p;
        const Instant t0{};
        CHECK(receive(p.server, send(p.client, 0), t0) == Open::ok);
        auto forged = send(p.client, 1);
        forged[20] ^= 0x01;  // payload byte
        CHECK(receive(p.server, forged, t0) == Open::failed);
        CHECK(p.server.usage().failed() == 1);
        CHECK_FALSE(p.server.key_phase());
        CHECK_FALSE(p.server.integrity_limit_reached());
    }
}

TEST_CASE("crypto key update: AEAD limits ask for an update at 3/4 and stop at the limit") {
    // Small limits, same logic: confidentiality 8, update at 6, integrity 2.
    OneRttKeys client(kSuite, QuicVersion::v1, secret(2), secret(1), AeadUsage(AeadLimits{8, 2}, 6));
    OneRttKeys server(kSuite, QuicVersion::v1, secret(1), secret(2), AeadUsage(AeadLimits{8, 2}, 6));
    const Instant t0{};
    for (std::uint64_t pn = 0; pn < 6; ++pn) {
        CHECK_FALSE(client.wants_update());
        CHECK(receive(server, send(client, pn), t0) == Open::ok);
    }
    CHECK(client.wants_update());
    send(client, 6);
    send(client, 7);
    auto refused = plain_packet(8);
    CHECK_FALSE(client.protect(refused, kPnOffset, 2, 8));  // the 9th packet: past the limit
    client.on_packet_acked(5);
    REQUIRE(client.initiate_update());
    CHECK_FALSE(client.wants_update());  // the new key starts from zero
    CHECK(receive(server, send(client, 8), t0) == Open::ok);

    auto bad = send(client, 9);
    bad.back() ^= 1;
    CHECK(receive(server, bad, t0) == Open::failed);
    CHECK(receive(server, bad, t0) == Open::failed);
    CHECK_FALSE(server.integrity_limit_reached());  // 2 failures: at the limit, not past it
    CHECK(receive(server, bad, t0) == Open::failed);
    CHECK(server.integrity_limit_reached());  // §6.6: close with AEAD_LIMIT_REACHED
}
