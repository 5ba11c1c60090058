// HKDF (RFC 5869) and TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1), the key
// schedule QUIC packet protection derives everything from (RFC 9001 §5.1,
// §5.2, §6.1). The primitives are GnuTLS's (gnutls_hkdf_extract/expand);
// this file only builds the HkdfLabel structure and picks the hash by suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "crypto/error.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

// The suite's hash: SHA-384 for TLS_AES_256_GCM_SHA384, SHA-256 otherwise.
std::size_t hash_size(CipherSuite suite);

// HKDF-Extract(salt, ikm) with the suite's hash: a Secret of hash_size(suite).
Secret hkdf_extract(CipherSuite suite, std::span<const std::uint8_t> salt, std::span<const std::uint8_t> ikm);

// HKDF-Expand-Label(secret, label, context, out.size()) (RFC 8446 §7.1): the
// label gets the "tls13 " prefix here. out.size() <= 255 * hash size; labels
// up to 249 bytes and contexts up to 255 (std::invalid_argument otherwise).
void hkdf_expand_label(CipherSuite suite, std::span<const std::uint8_t> secret, std::string_view label,
                       std::span<const std::uint8_t> context, std::span<std::uint8_t> out);

// HKDF-Expand-Label with an empty context into a Secret of the suite's hash
// size: the form RFC 9001 uses for "client in", "server in" and "quic ku".
Secret expand_secret(CipherSuite suite, const Secret& secret, std::string_view label);

}  // namespace ndm::crypto
