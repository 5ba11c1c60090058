#include "transport/retry_gate.hpp"

#include <array>

namespace ndm::transport {

namespace {

// The bytes a token binds: the peer's IP address and port (RFC 9000 §8.1.3:
// a Retry token is for the address the Initial came from, port included),
// and the QUIC version of the connection (RFC 9369 §5: a token from a
// connection of one version is not accepted for another; §4.1 lets a Retry
// token carry it too, so a client cannot switch versions after a Retry).
struct AddressBytes {
    std::array<std::uint8_t, 18 + 4> bytes{};
    std::size_t size = 0;
    [[nodiscard]] std::span<const std::uint8_t> span() const { return {bytes.data(), size}; }
};

AddressBytes address_bytes(const PeerAddress& a, std::uint32_t version) {
    AddressBytes out;
    out.size = a.token_bytes(std::span(out.bytes).first<18>());
    for (int shift = 24; shift >= 0; shift -= 8) out.bytes[out.size++] = static_cast<std::uint8_t>(version >> shift);
    return out;
}

}  // namespace

RetryGate::RetryGate(RetryMode policy, std::size_t threshold)
    : policy_(policy), threshold_(threshold), key_(random_) {}

bool RetryGate::wants_retry(std::size_t half_open, Instant now) const {
    switch (policy_) {
        case RetryMode::never: return false;
        case RetryMode::always: return true;
        case RetryMode::under_load:
            return half_open >= threshold_ || recent_handshakes(now) >= static_cast<double>(threshold_);
    }
    return false;
}

void RetryGate::on_handshake_started(Instant now) {
    roll_window(now);
    ++this_window_;
}

void RetryGate::roll_window(Instant now) {
    constexpr Duration kWindow = std::chrono::seconds(1);
    if (now - window_start_ < kWindow) return;
    last_window_ = now - window_start_ < 2 * kWindow ? this_window_ : 0;
    this_window_ = 0;
    window_start_ = now;
}

double RetryGate::recent_handshakes(Instant now) const {
    const double into = to_seconds(now - window_start_);
    if (into >= 2) return 0;
    if (into >= 1) return static_cast<double>(this_window_) * (2 - into);
    return static_cast<double>(this_window_) + static_cast<double>(last_window_) * (1 - into);
}

std::size_t RetryGate::write_retry(std::span<std::uint8_t> out, const wire::quic::PacketView& initial,
                                   const PeerAddress& peer, Instant now) {
    const auto token =
        key_.issue(crypto::TokenKind::retry, address_bytes(peer, initial.version).span(), now, initial.dcid, random_);
    wire::ConnectionId scid;
    scid.length = wire::kShortCidLength;  // the length ndm routes short headers by
    random_.fill(std::span<std::uint8_t>(scid.bytes.data(), scid.length));
    std::uint8_t unused = 0;
    random_.fill(std::span<std::uint8_t>(&unused, 1));
    // RFC 9369 §4.1: a Retry is sent in the version of the Initial it answers.
    const auto version = crypto::known_version(initial.version);
    if (!version) return 0;
    return wire::quic::write_retry(out, *version, wire::ConnectionId::from(initial.scid), scid, token.span(),
                                   initial.dcid, unused);
}

std::vector<std::uint8_t> RetryGate::issue_new_token(const PeerAddress& peer, std::uint32_t version, Instant now) {
    const auto token =
        key_.issue(crypto::TokenKind::new_token, address_bytes(peer.host(), version).span(), now, {}, random_);
    return {token.span().begin(), token.span().end()};
}

RetryGate::TokenCheck RetryGate::check_token(const wire::quic::PacketView& initial, const PeerAddress& peer,
                                             Instant now) {
    using Kind = TokenCheck::Kind;
    const auto token = initial.token;
    // crypto/address_token.hpp: a token is its kind byte, then a nonce, the
    // sealed fields and the tag.
    const bool shaped = token.size() >= crypto::kAddressTokenOverhead && token.size() <= crypto::kMaxAddressTokenSize;
    if (shaped && token[0] == static_cast<std::uint8_t>(crypto::TokenKind::new_token)) {
        const auto v = key_.validate(token, address_bytes(peer.host(), initial.version).span(), now);
        if (!v || v->kind != crypto::TokenKind::new_token) return {};
        RetryValidation r;
        r.from_new_token = true;
        return {Kind::valid, std::move(r)};
    }
    const bool ours = shaped && token[0] == static_cast<std::uint8_t>(crypto::TokenKind::retry);
    if (!ours) return {};
    const auto v = key_.validate(token, address_bytes(peer, initial.version).span(), now);
    if (!v || v->kind != crypto::TokenKind::retry) return {Kind::invalid, {}};
    const auto odcid = v->original_dcid();
    return {Kind::valid, RetryValidation{{odcid.begin(), odcid.end()}}};
}

}  // namespace ndm::transport
