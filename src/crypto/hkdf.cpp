#include "crypto/hkdf.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <array>
#include <stdexcept>
#include <string>

namespace ndm::crypto {

namespace {

gnutls_mac_algorithm_t mac_of(CipherSuite suite) {
    return suite == CipherSuite::aes256_gcm_sha384 ? GNUTLS_MAC_SHA384 : GNUTLS_MAC_SHA256;
}

// gnutls_datum_t takes a non-const pointer but neither HKDF call writes through it.
gnutls_datum_t datum(std::span<const std::uint8_t> bytes) {
    return {const_cast<unsigned char*>(bytes.data()), static_cast<unsigned>(bytes.size())};
}

constexpr std::string_view kLabelPrefix = "tls13 ";
// HkdfLabel: uint16 length, opaque label<7..255>, opaque context<0..255>.
constexpr std::size_t kMaxHkdfLabel = 2 + 1 + 255 + 1 + 255;

}  // namespace

std::size_t hash_size(CipherSuite suite) { return suite == CipherSuite::aes256_gcm_sha384 ? 48 : 32; }

Secret hkdf_extract(CipherSuite suite, std::span<const std::uint8_t> salt, std::span<const std::uint8_t> ikm) {
    Secret out;
    out.size = static_cast<std::uint8_t>(hash_size(suite));
    const gnutls_datum_t key = datum(ikm);
    const gnutls_datum_t salt_datum = datum(salt);
    if (gnutls_hkdf_extract(mac_of(suite), &key, &salt_datum, out.bytes.data()) < 0) {
        throw CryptoError("HKDF-Extract failed");
    }
    return out;
}

void hkdf_expand_label(CipherSuite suite, std::span<const std::uint8_t> secret, std::string_view label,
                       std::span<const std::uint8_t> context, std::span<std::uint8_t> out) {
    const std::size_t label_size = kLabelPrefix.size() + label.size();
    if (label_size > 255 || context.size() > 255 || out.size() > 255 * hash_size(suite) || out.size() > 0xffff) {
        throw std::invalid_argument("HKDF-Expand-Label: label, context or output too long");
    }
    std::array<std::uint8_t, kMaxHkdfLabel> info{};
    std::size_t n = 0;
    info[n++] = static_cast<std::uint8_t>(out.size() >> 8);
    info[n++] = static_cast<std::uint8_t>(out.size());
    info[n++] = static_cast<std::uint8_t>(label_size);
    for (const char c : kLabelPrefix) info[n++] = static_cast<std::uint8_t>(c);
    for (const char c : label) info[n++] = static_cast<std::uint8_t>(c);
    info[n++] = static_cast<std::uint8_t>(context.size());
    for (const std::uint8_t b : context) info[n++] = b;

    const gnutls_datum_t key = datum(secret);
    const gnutls_datum_t info_datum = datum({info.data(), n});
    if (gnutls_hkdf_expand(mac_of(suite), &key, &info_datum, out.data(), out.size()) < 0) {
        throw CryptoError("HKDF-Expand-Label failed for \"" + std::string(label) + "\"");
    }
}

Secret expand_secret(CipherSuite suite, const Secret& secret, std::string_view label) {
    Secret out;
    out.size = static_cast<std::uint8_t>(hash_size(suite));
    hkdf_expand_label(suite, secret.span(), label, {}, {out.bytes.data(), out.size});
    return out;
}

}  // namespace ndm::crypto
