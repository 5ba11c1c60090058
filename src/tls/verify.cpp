#include "tls/verify.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gnutls/x509.h>

#include <ctime>
#include <memory>
#include <vector>

namespace ndm::tls {

namespace {

using CrtPtr = std::unique_ptr<gnutls_x509_crt_int, decltype(&gnutls_x509_crt_deinit)>;

CrtPtr import_der(const gnutls_datum_t& der) {
    gnutls_x509_crt_t crt = nullptr;
    if (gnutls_x509_crt_init(&crt) < 0) return {nullptr, &gnutls_x509_crt_deinit};
    CrtPtr p(crt, &gnutls_x509_crt_deinit);
    if (gnutls_x509_crt_import(crt, &der, GNUTLS_X509_FMT_DER) < 0) p.reset();
    return p;
}

// The names a certificate is for: its dNSName and iPAddress SANs, or its
// subject CN when it has none (for the message only; matching is GnuTLS's).
std::vector<std::string> names_of(gnutls_x509_crt_t crt) {
    std::vector<std::string> names;
    for (unsigned i = 0; names.size() < 8; ++i) {
        unsigned char buf[256];
        std::size_t size = sizeof buf;
        unsigned critical = 0;
        const int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, &critical);
        if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
        if (type == GNUTLS_SAN_DNSNAME) {
            names.emplace_back(reinterpret_cast<const char*>(buf), size);
        } else if (type == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
            char text[INET6_ADDRSTRLEN] = {};
            if (inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, text, sizeof text)) names.emplace_back(text);
        } else if (type < 0 && type != GNUTLS_E_SHORT_MEMORY_BUFFER) {
            break;
        }
    }
    if (names.empty()) {
        char cn[256];
        std::size_t size = sizeof cn;
        if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size) >= 0)
            names.emplace_back(cn, size);
    }
    if (names.empty()) names.emplace_back("no name");
    return names;
}

std::string utc(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// RFC 5280 §4.1.2.5 against the caller's clock, for every certificate sent.
std::optional<VerifyFailure> check_validity(const gnutls_datum_t* certs, unsigned n, std::time_t now) {
    for (unsigned i = 0; i < n; ++i) {
        const CrtPtr crt = import_der(certs[i]);
        if (!crt) return VerifyFailure{Alert::bad_certificate, "certificate cannot be parsed"};
        const char* which = i == 0 ? "certificate" : "issuer certificate";
        const std::time_t not_after = gnutls_x509_crt_get_expiration_time(crt.get());
        const std::time_t not_before = gnutls_x509_crt_get_activation_time(crt.get());
        if (not_after != static_cast<std::time_t>(-1) && now > not_after)
            return VerifyFailure{Alert::certificate_expired, fmt::format("{} expired (not after {})", which, utc(not_after))};
        if (not_before != static_cast<std::time_t>(-1) && now < not_before)
            return VerifyFailure{Alert::certificate_expired,
                                 fmt::format("{} not yet valid (not before {})", which, utc(not_before))};
    }
    return std::nullopt;
}

// GnuTLS's verification status bits as one reason and alert (RFC 8446 §6.2).
VerifyFailure chain_failure(unsigned status, gnutls_x509_crt_t leaf, unsigned n, const ClientCredentialsState& creds) {
    const bool self_signed = n == 1 && gnutls_x509_crt_check_issuer(leaf, leaf) != 0;
    if (status & GNUTLS_CERT_REVOKED) return {Alert::certificate_revoked, "certificate revoked"};
    if (status & (GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA)) {
        const std::string what = self_signed ? "self-signed" : "unknown issuer";
        if (creds.mode == VerifyMode::ca_file)
            return {Alert::unknown_ca, fmt::format("certificate not trusted ({}, not in {})", what, creds.origin)};
        return {Alert::unknown_ca, fmt::format("certificate not trusted ({}); pass --ca, --pin or --insecure", what)};
    }
    if (status & GNUTLS_CERT_INSECURE_ALGORITHM)
        return {Alert::bad_certificate, "certificate signed with an insecure algorithm"};
    if (status & GNUTLS_CERT_SIGNATURE_FAILURE) return {Alert::bad_certificate, "certificate signature is invalid"};
    gnutls_datum_t text{nullptr, 0};
    std::string reason = "certificate not trusted";
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) >= 0 && text.data) {
        reason += fmt::format(" ({})", std::string_view(reinterpret_cast<const char*>(text.data), text.size));
        gnutls_free(text.data);
    }
    return {Alert::certificate_unknown, reason};
}

std::optional<VerifyFailure> check_pin(const gnutls_datum_t& leaf_der, const Fingerprint& pin) {
    const Fingerprint got = fingerprint_of_der(leaf_der.data, leaf_der.size);
    if (got == pin) return std::nullopt;
    return VerifyFailure{Alert::bad_certificate,
                         fmt::format("pinned fingerprint mismatch: got {}, expected {}", to_string(got), to_string(pin))};
}

}  // namespace

std::optional<VerifyFailure> verify_peer(gnutls_session_t session, const ClientCredentialsState& creds,
                                         std::string_view name, std::chrono::system_clock::time_point now) {
    if (creds.mode == VerifyMode::insecure) return std::nullopt;
    unsigned n = 0;
    const gnutls_datum_t* certs = gnutls_certificate_get_peers(session, &n);
    if (certs == nullptr || n == 0) return VerifyFailure{Alert::bad_certificate, "server sent no certificate"};
    const CrtPtr leaf = import_der(certs[0]);
    if (!leaf) return VerifyFailure{Alert::bad_certificate, "certificate cannot be parsed"};

    if (creds.mode == VerifyMode::pin) {
        if (auto f = check_pin(certs[0], creds.pin)) return f;
    } else {
        unsigned status = 0;
        if (const int rc = gnutls_certificate_verify_peers2(session, &status); rc < 0)
            return VerifyFailure{Alert::bad_certificate, "certificate verification failed: " + gnutls_error(rc)};
        if (status != 0) return chain_failure(status, leaf.get(), n, creds);
    }
    if (auto f = check_validity(certs, n, std::chrono::system_clock::to_time_t(now))) return f;
    if (creds.mode != VerifyMode::pin && !name.empty()) {
        const std::string host(name);
        if (gnutls_x509_crt_check_hostname2(leaf.get(), host.c_str(), 0) == 0)
            return VerifyFailure{Alert::bad_certificate,
                                 fmt::format("certificate for {}, expected {}", fmt::join(names_of(leaf.get()), ", "), host)};
    }
    return std::nullopt;
}

}  // namespace ndm::tls
