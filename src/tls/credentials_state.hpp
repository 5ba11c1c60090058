// The GnuTLS objects behind ServerCredentials and ClientCredentials
// (credentials.hpp), for tls_session.cpp and verify.cpp only.
#pragma once

#include <gnutls/gnutls.h>

#include <string>

#include "ndm/tls.hpp"

namespace ndm::tls {

struct ServerCredentialsState {
    gnutls_certificate_credentials_t cred = nullptr;
    Fingerprint fingerprint;
    std::string certificate_pem;
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
