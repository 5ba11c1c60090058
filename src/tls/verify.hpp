// The client's check of the server's certificate (RFC 9001 §4.4, RFC 8446
// §4.4.2.4) against ClientCredentials, with one-line reasons and the alert
// the peer is sent for each.
#pragma once

#include <gnutls/gnutls.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "tls/alert.hpp"
#include "tls/credentials_state.hpp"

namespace ndm::tls {

struct VerifyFailure {
    Alert alert;
    std::string message;  // "certificate for localhost, expected example.org"
};

// Checks the certificate chain the peer of `session` presented. `name` is
// the name the client asked for (empty: not checked); `now` the time the
// validity periods are checked against.
std::optional<VerifyFailure> verify_peer(gnutls_session_t session, const ClientCredentialsState& creds,
                                         std::string_view name, std::chrono::system_clock::time_point now);

}  // namespace ndm::tls
