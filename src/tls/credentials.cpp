#include "ndm/tls.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tls/credentials_state.hpp"
#include "util/input_file.hpp"

namespace ndm::tls {

std::string gnutls_error(int rc) { return gnutls_strerror(rc); }

ServerCredentialsState::ServerCredentialsState() {
    if (const int rc = gnutls_certificate_allocate_credentials(&cred); rc < 0)
        throw CredentialError("cannot allocate certificate credentials: " + gnutls_error(rc));
    if (const int rc = gnutls_session_ticket_key_generate(&ticket_key); rc < 0) {
        gnutls_certificate_free_credentials(cred);
        throw CredentialError("cannot make a session ticket key: " + gnutls_error(rc));
    }
}
ServerCredentialsState::~ServerCredentialsState() {
    gnutls_memset(ticket_key.data, 0, ticket_key.size);
    gnutls_free(ticket_key.data);
    gnutls_certificate_free_credentials(cred);
}

ClientCredentialsState::ClientCredentialsState() {
    if (const int rc = gnutls_certificate_allocate_credentials(&cred); rc < 0)
        throw CredentialError("cannot allocate certificate credentials: " + gnutls_error(rc));
    // Validity periods are checked against the time the caller passes in
    // (TlsConfig::now, verify.cpp), not against GnuTLS's own clock reads.
    gnutls_certificate_set_verify_flags(cred, GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
                                                  GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS);
}
ClientCredentialsState::~ClientCredentialsState() { gnutls_certificate_free_credentials(cred); }

std::string to_string(const Fingerprint& fp) { return fmt::format("{:02x}", fmt::join(fp.bytes, "")); }

std::optional<Fingerprint> parse_fingerprint(std::string_view text) {
    Fingerprint fp;
    std::size_t n = 0;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < text.size();) {
        if (n > 0 && text[i] == ':') {  // between bytes only
            if (++i == text.size()) return std::nullopt;
        }
        if (i + 1 >= text.size() || n == fp.bytes.size()) return std::nullopt;
        const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        fp.bytes[n++] = static_cast<std::uint8_t>(hi << 4 | lo);
        i += 2;
    }
    if (n != fp.bytes.size()) return std::nullopt;
    return fp;
}

Fingerprint fingerprint_of_der(const std::uint8_t* der, std::size_t size) {
    Fingerprint fp;
    if (const int rc = gnutls_hash_fast(GNUTLS_DIG_SHA256, der, size, fp.bytes.data()); rc < 0)
        throw CredentialError("SHA-256 failed: " + gnutls_error(rc));
    return fp;
}

namespace {

using CrtPtr = std::unique_ptr<gnutls_x509_crt_int, decltype(&gnutls_x509_crt_deinit)>;
using KeyPtr = std::unique_ptr<gnutls_x509_privkey_int, decltype(&gnutls_x509_privkey_deinit)>;

struct Datum {  // GnuTLS-allocated output
    gnutls_datum_t d{nullptr, 0};
    ~Datum() { gnutls_free(d.data); }
    [[nodiscard]] std::string str() const { return {reinterpret_cast<const char*>(d.data), d.size}; }
};

gnutls_datum_t view(const std::string& s) {
    return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), static_cast<unsigned>(s.size())};
}

std::string read_text_file(const std::string& path) {
    try {
        return util::read_input_file(path, util::kMaxCredentialFileBytes);
    } catch (const std::invalid_argument& e) {
        throw CredentialError(fmt::format("{}: {}", path, e.what()));
    }
}

void check(int rc, std::string_view what) {
    if (rc < 0) throw CredentialError(fmt::format("{}: {}", what, gnutls_error(rc)));
}

Fingerprint leaf_fingerprint(gnutls_x509_crt_t crt) {
    Datum der;
    check(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der.d), "certificate export");
    return fingerprint_of_der(der.d.data, der.d.size);
}

// The SAN entry for one name: an IP literal is an iPAddress (RFC 5280
// §4.2.1.6, 4 or 16 bytes), anything else a dNSName.
void add_name(gnutls_x509_crt_t crt, const std::string& name) {
    unsigned char ip[16];
    int rc;
    if (inet_pton(AF_INET, name.c_str(), ip) == 1)
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_APPEND);
    else if (inet_pton(AF_INET6, name.c_str(), ip) == 1)
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16, GNUTLS_FSAN_APPEND);
    else
        rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name.data(),
                                                  static_cast<unsigned>(name.size()), GNUTLS_FSAN_APPEND);
    check(rc, "certificate name " + name);
}

// 16 random bytes, the top one in 0x40..0x7f: positive and of one DER length,
// so every generated certificate has the same size (fixed-size handshakes).
void set_serial(gnutls_x509_crt_t crt) {
    std::array<unsigned char, 16> serial{};
    check(gnutls_rnd(GNUTLS_RND_NONCE, serial.data(), serial.size()), "certificate serial");
    serial[0] = static_cast<unsigned char>((serial[0] & 0x3f) | 0x40);
    check(gnutls_x509_crt_set_serial(crt, serial.data(), serial.size()), "certificate serial");
}

// GnuTLS 3.7.9's gnutls_certificate_set_x509_key accepts an Ed25519 key that
// is not the certificate's; compare the public-key IDs instead.
bool key_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key) {
    std::array<unsigned char, 64> a{}, b{};
    std::size_t na = a.size(), nb = b.size();
    if (gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, a.data(), &na) < 0) return false;
    if (gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, b.data(), &nb) < 0) return false;
    return na == nb && std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na), b.begin());
}

}  // namespace

PemCertificate generate_self_signed(const std::vector<std::string>& names, std::chrono::system_clock::time_point now,
                                    std::chrono::seconds validity) {
    if (names.empty()) throw CredentialError("self-signed certificate: no name given");
    gnutls_x509_privkey_t raw_key = nullptr;
    check(gnutls_x509_privkey_init(&raw_key), "private key");
    KeyPtr key(raw_key, &gnutls_x509_privkey_deinit);
    check(gnutls_x509_privkey_generate2(key.get(), GNUTLS_PK_EDDSA_ED25519, 0, 0, nullptr, 0), "Ed25519 key");
    gnutls_x509_crt_t raw_crt = nullptr;
    check(gnutls_x509_crt_init(&raw_crt), "certificate");
    CrtPtr crt(raw_crt, &gnutls_x509_crt_deinit);

    const auto t = std::chrono::system_clock::to_time_t(now);
    check(gnutls_x509_crt_set_version(crt.get(), 3), "certificate version");
    set_serial(crt.get());
    check(gnutls_x509_crt_set_activation_time(crt.get(), t - 3600), "certificate validity");
    check(gnutls_x509_crt_set_expiration_time(crt.get(), t + static_cast<std::time_t>(validity.count())),
          "certificate validity");
    const std::string& cn = names.front();
    check(gnutls_x509_crt_set_dn_by_oid(crt.get(), GNUTLS_OID_X520_COMMON_NAME, 0, cn.data(),
                                        static_cast<unsigned>(cn.size())),
          "certificate subject");
    for (const auto& name : names) add_name(crt.get(), name);
    check(gnutls_x509_crt_set_basic_constraints(crt.get(), 0, -1), "certificate constraints");
    check(gnutls_x509_crt_set_key_usage(crt.get(), GNUTLS_KEY_DIGITAL_SIGNATURE), "certificate key usage");
    check(gnutls_x509_crt_set_key_purpose_oid(crt.get(), GNUTLS_KP_TLS_WWW_SERVER, 0), "certificate purpose");
    check(gnutls_x509_crt_set_key(crt.get(), key.get()), "certificate key");
    check(gnutls_x509_crt_sign2(crt.get(), crt.get(), key.get(), GNUTLS_DIG_UNKNOWN, 0), "certificate signature");

    Datum cert_pem, key_pem;
    check(gnutls_x509_crt_export2(crt.get(), GNUTLS_X509_FMT_PEM, &cert_pem.d), "certificate export");
    // PKCS#8 ("PRIVATE KEY"): GnuTLS 3.7.9's gnutls_x509_privkey_export2 writes
    // an Ed25519 key as "BEGIN UNKNOWN", which nothing (itself included) reads.
    check(gnutls_x509_privkey_export2_pkcs8(key.get(), GNUTLS_X509_FMT_PEM, nullptr, GNUTLS_PKCS_PLAIN, &key_pem.d),
          "private key export");
    return {cert_pem.str(), key_pem.str()};
}

ServerCredentials ServerCredentials::from_pem(const PemCertificate& pem, std::string_view cert_origin,
                                             std::string_view key_origin) {
    auto state = std::make_shared<ServerCredentialsState>();
    gnutls_x509_crt_t* crts = nullptr;
    unsigned n = 0;
    const gnutls_datum_t cert_data = view(pem.certificate_pem);
    if (const int rc = gnutls_x509_crt_list_import2(&crts, &n, &cert_data, GNUTLS_X509_FMT_PEM, 0); rc < 0 || n == 0)
        throw CredentialError(fmt::format("{}: no PEM certificate{}", cert_origin,
                                          rc < 0 ? " (" + gnutls_error(rc) + ")" : std::string()));
    auto free_crts = [&] {
        for (unsigned i = 0; i < n; ++i) gnutls_x509_crt_deinit(crts[i]);
        gnutls_free(crts);
    };
    gnutls_x509_privkey_t raw_key = nullptr;
    int rc = gnutls_x509_privkey_init(&raw_key);
    KeyPtr key(raw_key, &gnutls_x509_privkey_deinit);
    const gnutls_datum_t key_data = view(pem.key_pem);
    if (rc >= 0) rc = gnutls_x509_privkey_import2(key.get(), &key_data, GNUTLS_X509_FMT_PEM, nullptr, 0);
    if (rc < 0) {
        free_crts();
        throw CredentialError(fmt::format("{}: not a PEM private key ({})", key_origin, gnutls_error(rc)));
    }
    try {
        state->fingerprint = leaf_fingerprint(crts[0]);
    } catch (...) {
        free_crts();
        throw;
    }
    const bool match = key_matches(crts[0], key.get());
    rc = match ? gnutls_certificate_set_x509_key(state->cred, crts, n, key.get()) : GNUTLS_E_CERTIFICATE_KEY_MISMATCH;
    free_crts();
    if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
        throw CredentialError(
            fmt::format("{}: the private key does not match the certificate in {}", key_origin, cert_origin));
    check(rc, cert_origin);
    state->certificate_pem = pem.certificate_pem;
    return ServerCredentials(std::move(state));
}

ServerCredentials ServerCredentials::load(const std::string& cert_file, const std::string& key_file) {
    return from_pem({read_text_file(cert_file), read_text_file(key_file)}, cert_file, key_file);
}

ServerCredentials ServerCredentials::self_signed(const std::vector<std::string>& names,
                                                 std::chrono::system_clock::time_point now,
                                                 std::chrono::seconds validity) {
    return from_pem(generate_self_signed(names, now, validity), "self-signed certificate", "self-signed key");
}

const Fingerprint& ServerCredentials::fingerprint() const { return state_->fingerprint; }
const std::string& ServerCredentials::certificate_pem() const { return state_->certificate_pem; }

ClientCredentials ClientCredentials::system() {
    auto state = std::make_shared<ClientCredentialsState>();
    state->mode = VerifyMode::system;
    state->origin = "the system trust store";
    // A store that is missing or empty leaves nothing trusted: every
    // certificate then fails with "not trusted" rather than here.
    (void)gnutls_certificate_set_x509_system_trust(state->cred);
    return ClientCredentials(std::move(state));
}

ClientCredentials ClientCredentials::ca_file(const std::string& path) {
    auto state = std::make_shared<ClientCredentialsState>();
    state->mode = VerifyMode::ca_file;
    state->origin = path;
    const std::string text = read_text_file(path);
    const gnutls_datum_t data = view(text);
    const int rc = gnutls_certificate_set_x509_trust_mem(state->cred, &data, GNUTLS_X509_FMT_PEM);
    if (rc < 0) throw CredentialError(fmt::format("{}: {}", path, gnutls_error(rc)));
    if (rc == 0) throw CredentialError(fmt::format("{}: no PEM certificate", path));
    return ClientCredentials(std::move(state));
}

ClientCredentials ClientCredentials::pinned(const Fingerprint& fp) {
    auto state = std::make_shared<ClientCredentialsState>();
    state->mode = VerifyMode::pin;
    state->pin = fp;
    state->origin = "the pinned fingerprint";
    return ClientCredentials(std::move(state));
}

ClientCredentials ClientCredentials::insecure() {
    auto state = std::make_shared<ClientCredentialsState>();
    state->mode = VerifyMode::insecure;
    state->origin = "--insecure";
    return ClientCredentials(std::move(state));
}

VerifyMode ClientCredentials::mode() const { return state_->mode; }

}  // namespace ndm::tls
