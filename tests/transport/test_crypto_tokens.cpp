// Randomness, stateless reset tokens and address validation tokens
// (src/crypto/random, stateless_reset, address_token; RFC 9000 §8.1.3,
// §8.1.4, §10.3).
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <vector>

#include "crypto/address_token.hpp"
#include "crypto/random.hpp"
#include "crypto/stateless_reset.hpp"
#include "crypto_test_util.hpp"

using namespace std::chrono_literals;
using ndm::Instant;
using ndm::crypto::AddressTokenKey;
using ndm::crypto::CryptoRandom;
using ndm::crypto::SeededRandom;
using ndm::crypto::TokenKind;
using ndm::test::hex;
using ndm::test::unhex;

namespace {

std::vector<std::uint8_t> draw(ndm::crypto::RandomSource& r, std::size_t n) {
    std::vector<std::uint8_t> out(n);
    r.fill(out);
    return out;
}

// 192.0.2.1 port 4433, and the same host on another port.
const std::vector<std::uint8_t> kAddress = {192, 0, 2, 1, 0x11, 0x51};
const std::vector<std::uint8_t> kOtherPort = {192, 0, 2, 1, 0x11, 0x52};
const std::vector<std::uint8_t>& kOdcid = ndm::test::rfc9001_dcid();
const Instant kT0 = Instant{} + 1000s;

}  // namespace

TEST_CASE("crypto random: the seeded source repeats for a seed and the cryptographic one does not") {
    SeededRandom a(42);
    SeededRandom b(42);
    SeededRandom c(43);
    const auto first = draw(a, 37);
    CHECK(first == draw(b, 37));
    CHECK(first != draw(c, 37));
    CHECK(draw(a, 37) != first);  // the stream advances
    // The seeded bytes are Xoshiro256's words, little-endian.
    ndm::util::Xoshiro256 rng(42);
    const std::uint64_t w = rng.next();
    for (int i = 0; i < 8; ++i) CHECK(first[static_cast<std::size_t>(i)] == static_cast<std::uint8_t>(w >> (8 * i)));

    CryptoRandom r;
    std::set<std::vector<std::uint8_t>> seen;
    for (int i = 0; i < 16; ++i) seen.insert(draw(r, 16));
    CHECK(seen.size() == 16);
    CHECK(draw(r, 32) != std::vector<std::uint8_t>(32, 0));
}

TEST_CASE("crypto stateless reset: HMAC-SHA256 token per CID, constant-time compare (RFC 9000 10.3.2)") {
    std::array<std::uint8_t, 32> key{};
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i);
    const ndm::crypto::StatelessResetKey reset_key(key);
    // HMAC-SHA256(00..1f, 8394c8f03e515708), first 16 bytes, from OpenSSL 3:
    //   printf '\x83\x94\xc8\xf0\x3e\x51\x57\x08' | openssl dgst -sha256 -mac HMAC
    //     -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
    const auto token = reset_key.token_for(kOdcid);
    CHECK(hex(token) == "50b5d256607ba9fa7686ff5cea8c78c9");
    CHECK(ndm::crypto::tokens_equal(token, reset_key.token_for(kOdcid)));
    auto other_cid = kOdcid;
    other_cid[7] ^= 1;
    CHECK_FALSE(ndm::crypto::tokens_equal(token, reset_key.token_for(other_cid)));

    // A datagram ending in the token is a reset; short or long-header ones are not.
    std::vector<std::uint8_t> datagram(40, 0x5a);
    datagram[0] = 0x40;
    std::copy(token.begin(), token.end(), datagram.end() - 16);
    CHECK(ndm::crypto::is_stateless_reset(datagram, token));
    datagram.back() ^= 1;
    CHECK_FALSE(ndm::crypto::is_stateless_reset(datagram, token));
    datagram.back() ^= 1;
    datagram[0] = 0xc0;
    CHECK_FALSE(ndm::crypto::is_stateless_reset(datagram, token));
    std::vector<std::uint8_t> tiny(token.begin(), token.end());
    tiny.insert(tiny.begin(), 4, 0x40);  // 20 bytes: below the 21-byte minimum
    CHECK_FALSE(ndm::crypto::is_stateless_reset(tiny, token));

    SeededRandom r(1);
    const ndm::crypto::StatelessResetKey random_key(r);
    CHECK_FALSE(ndm::crypto::tokens_equal(random_key.token_for(kOdcid), token));
}

TEST_CASE("crypto address token: Retry and NEW_TOKEN tokens round-trip with their fields") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        SeededRandom r(7);
        AddressTokenKey key(r);
        const auto retry = key.issue(TokenKind::retry, kAddress, kT0, kOdcid, r);
        CHECK(retry.size == ndm::crypto::kAddressTokenOverhead + kOdcid.size());
        const auto v = key.validate(retry.span(), kAddress, kT0 + 9s);
        REQUIRE(v);
        CHECK(v->kind == TokenKind::retry);
        CHECK(v->issued == kT0);
        CHECK(hex(v->original_dcid()) == hex(kOdcid));

        const auto nt = key.issue(TokenKind::new_token, std::span(kAddress).first(4), kT0, {}, r);
        const auto w = key.validate(nt.span(), std::span(kAddress).first(4), kT0 + 23h);
        REQUIRE(w);
        CHECK(w->kind == TokenKind::new_token);
        CHECK(w->original_dcid().empty());
        // Two tokens for the same input differ (random nonce).
        CHECK(hex(key.issue(TokenKind::retry, kAddress, kT0, kOdcid, r).span()) != hex(retry.span()));
    }
}

TEST_CASE("crypto address token: tampered, expired, future, wrong-address and foreign tokens are rejected") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        SeededRandom r(8);
        AddressTokenKey key(r);
        const auto token = key.issue(TokenKind::retry, kAddress, kT0, kOdcid, r);
        const std::vector<std::uint8_t> good(token.span().begin(), token.span().end());
        REQUIRE(key.validate(good, kAddress, kT0));
        for (std::size_t i = 0; i < good.size(); ++i) {
            auto bad = good;
            bad[i] ^= 0x01;
            CHECK_FALSE(key.validate(bad, kAddress, kT0));
        }
        CHECK_FALSE(key.validate(good, kOtherPort, kT0));
        CHECK_FALSE(key.validate(good, {}, kT0));
        CHECK(key.validate(good, kAddress, kT0 + 10s));
        CHECK_FALSE(key.validate(good, kAddress, kT0 + 10s + 1ns));  // Retry tokens live 10 s
        CHECK_FALSE(key.validate(good, kAddress, kT0 - 1ns));        // not issued yet
        for (std::size_t n = 0; n < good.size(); ++n) {
            const std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
            CHECK_FALSE(key.validate(cut, kAddress, kT0));
        }
        auto longer = good;
        longer.push_back(0);
        CHECK_FALSE(key.validate(longer, kAddress, kT0));
        CHECK_FALSE(key.validate(std::vector<std::uint8_t>(200, 1), kAddress, kT0));
        // The kind is authenticated: relabelling a Retry token as NEW_TOKEN fails.
        auto relabelled = good;
        relabelled[0] = static_cast<std::uint8_t>(TokenKind::new_token);
        CHECK_FALSE(key.validate(relabelled, kAddress, kT0));
        // Another server key (another process) does not accept it.
        SeededRandom r2(9);
        AddressTokenKey other(r2);
        CHECK_FALSE(other.validate(good, kAddress, kT0));
        // NEW_TOKEN tokens last longer, but not forever.
        const auto nt = key.issue(TokenKind::new_token, kAddress, kT0, {}, r);
        CHECK(key.validate(nt.span(), kAddress, kT0 + 24h));
        CHECK_FALSE(key.validate(nt.span(), kAddress, kT0 + 24h + 1ns));
    }
}

TEST_CASE("crypto address token: oversized inputs are refused when issuing") {
    SeededRandom r(10);
    AddressTokenKey key(r);
    CHECK_THROWS_AS((void)key.issue(TokenKind::retry, kAddress, kT0, std::vector<std::uint8_t>(21, 0), r),
                    std::invalid_argument);
    CHECK_THROWS_AS((void)key.issue(TokenKind::retry, std::vector<std::uint8_t>(33, 0), kT0, kOdcid, r),
                    std::invalid_argument);
    CHECK_FALSE(key.validate(key.issue(TokenKind::retry, kAddress, kT0, kOdcid, r).span(),
                             std::vector<std::uint8_t>(33, 0), kT0));
}
