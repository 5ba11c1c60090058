#include "crypto/address_token.hpp"

#include <gnutls/gnutls.h>

#include <algorithm>
#include <stdexcept>

namespace ndm::crypto {

namespace {

constexpr std::size_t kKindSize = 1;
constexpr std::size_t kTimeSize = 8;
// The associated data: the kind and the address (an IPv6 address and port
// is 18 bytes; longer addresses are refused).
constexpr std::size_t kMaxAddressSize = 32;

Aead make_aead(RandomSource& random) {
    std::array<std::uint8_t, 16> key{};
    random.fill(key);
    const std::array<std::uint8_t, kAeadIvSize> unused_iv{};  // tokens carry their whole nonce
    Aead aead(CipherSuite::aes128_gcm_sha256, key, unused_iv);
    gnutls_memset(key.data(), 0, key.size());
    return aead;
}

struct Aad {
    std::array<std::uint8_t, kKindSize + kMaxAddressSize> bytes{};
    std::size_t size = 0;
};

std::optional<Aad> aad_of(std::uint8_t kind, std::span<const std::uint8_t> address) {
    if (address.size() > kMaxAddressSize) return std::nullopt;
    Aad aad;
    aad.bytes[0] = kind;
    std::copy(address.begin(), address.end(), aad.bytes.begin() + kKindSize);
    aad.size = kKindSize + address.size();
    return aad;
}

bool known_kind(std::uint8_t kind) {
    return kind == static_cast<std::uint8_t>(TokenKind::retry) || kind == static_cast<std::uint8_t>(TokenKind::new_token);
}

// The plaintext, authenticated but still range-checked: the ODCID length
// must match what is left, the issue time must not be in the future.
std::optional<ValidatedToken> decode_fields(TokenKind kind, std::span<const std::uint8_t> plain, Instant now,
                                            const TokenLifetimes& lifetimes) {
    if (plain.size() < kTimeSize + 1) return std::nullopt;
    std::uint64_t t = 0;
    for (std::size_t i = 0; i < kTimeSize; ++i) t = (t << 8) | plain[i];
    const std::size_t odcid_size = plain[kTimeSize];
    if (odcid_size > kMaxConnectionIdSize || plain.size() != kTimeSize + 1 + odcid_size) return std::nullopt;
    if (kind == TokenKind::new_token && odcid_size != 0) return std::nullopt;
    ValidatedToken out;
    out.kind = kind;
    out.issued = Instant(Duration(static_cast<Duration::rep>(t)));
    const Duration lifetime = kind == TokenKind::retry ? lifetimes.retry : lifetimes.new_token;
    if (out.issued > now || now - out.issued > lifetime) return std::nullopt;
    out.odcid_size = static_cast<std::uint8_t>(odcid_size);
    std::copy_n(plain.begin() + kTimeSize + 1, odcid_size, out.odcid.begin());
    return out;
}

}  // namespace

AddressTokenKey::AddressTokenKey(RandomSource& random, TokenLifetimes lifetimes)
    : aead_(make_aead(random)), lifetimes_(lifetimes) {}

AddressToken AddressTokenKey::issue(TokenKind kind, std::span<const std::uint8_t> address, Instant now,
                                    std::span<const std::uint8_t> odcid, RandomSource& random) {
    if (odcid.size() > kMaxConnectionIdSize) throw std::invalid_argument("original DCID longer than 20 bytes");
    const auto aad = aad_of(static_cast<std::uint8_t>(kind), address);
    if (!aad) throw std::invalid_argument("address longer than 32 bytes");
    AddressToken token;
    token.bytes[0] = static_cast<std::uint8_t>(kind);
    Nonce nonce{};
    random.fill(nonce);
    std::copy(nonce.begin(), nonce.end(), token.bytes.begin() + kKindSize);
    std::size_t n = kKindSize + kAeadIvSize;
    const std::size_t plaintext_at = n;
    const auto t = static_cast<std::uint64_t>(now.time_since_epoch().count());
    for (int i = 7; i >= 0; --i) token.bytes[n++] = static_cast<std::uint8_t>(t >> (8 * i));
    token.bytes[n++] = static_cast<std::uint8_t>(odcid.size());
    n = static_cast<std::size_t>(std::copy(odcid.begin(), odcid.end(), token.bytes.begin() + n) - token.bytes.begin());
    token.size = static_cast<std::uint8_t>(n + kAeadTagSize);
    aead_.seal_with_nonce(nonce, {aad->bytes.data(), aad->size},
                          std::span(token.bytes).subspan(plaintext_at, token.size - plaintext_at));
    return token;
}

std::optional<ValidatedToken> AddressTokenKey::validate(std::span<const std::uint8_t> token,
                                                        std::span<const std::uint8_t> address, Instant now) {
    if (token.size() < kAddressTokenOverhead || token.size() > kMaxAddressTokenSize || !known_kind(token[0])) {
        return std::nullopt;
    }
    const auto aad = aad_of(token[0], address);
    if (!aad) return std::nullopt;
    Nonce nonce{};
    std::copy_n(token.begin() + kKindSize, kAeadIvSize, nonce.begin());
    // Opened in a copy: the caller's token stays as received.
    std::array<std::uint8_t, kMaxAddressTokenSize> buf{};
    const std::size_t sealed_size = token.size() - kKindSize - kAeadIvSize;
    std::copy(token.begin() + kKindSize + kAeadIvSize, token.end(), buf.begin());
    if (!aead_.open_with_nonce(nonce, {aad->bytes.data(), aad->size}, {buf.data(), sealed_size})) return std::nullopt;
    return decode_fields(static_cast<TokenKind>(token[0]), {buf.data(), sealed_size - kAeadTagSize}, now, lifetimes_);
}

}  // namespace ndm::crypto
