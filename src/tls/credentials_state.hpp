// The GnuTLS objects behind ServerCredentials and ClientCredentials
// (credentials.hpp), for tls_session.cpp and verify.cpp only.
#pragma once

#include <gnutls/gnutls.h>

#include <memory>
#include <string>

#include "ndm/tls.hpp"
#include "tls/anti_replay.hpp"

namespace ndm::tls {

struct ServerCredentialsState {
    gnutls_certificate_credentials_t cred = nullptr;
    Fingerprint fingerprint;
    std::string certificate_pem;
    // Session tickets (RFC 8446 §4.6.1) are sealed under this key, random
    // per ServerCredentials and never written anywhere: they resume only with
    // servers sharing these credentials in this process.
    gnutls_datum_t ticket_key{nullptr, 0};
    AntiReplay anti_replay;  // for the sessions that accept 0-RTT
    ServerCredentialsState();
    ~ServerCredentialsState();
    ServerCredentialsState(const ServerCredentialsState&) = delete;
    ServerCredentialsState& operator=(const ServerCredentialsState&) = delete;
};

struct ClientCredentialsState {
    gnutls_certificate_credentials_t cred = nullptr;
    VerifyMode mode = VerifyMode::system;
    Fingerprint pin;     // mode == pin
    std::string origin;  // "the system trust store" or the CA file's path
    ClientCredentialsState();
    ~ClientCredentialsState();
    ClientCredentialsState(const ClientCredentialsState&) = delete;
    ClientCredentialsState& operator=(const ClientCredentialsState&) = delete;
};

// GnuTLS's error text for `rc`, for messages.
std::string gnutls_error(int rc);

}  // namespace ndm::tls
