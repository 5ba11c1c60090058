#include "tools/cli/tls_flags.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ndm/experiment.hpp"
#include "tools/cli/command_line.hpp"

namespace ndm::tools {

void add_server_tls_flags(CLI::App& app, ServerTlsFlags& flags) {
    auto* cert = app.add_option("--cert", flags.cert,
                                "PEM certificate chain (leaf first) to present; without --cert/--key a self-signed "
                                "certificate is made at start-up and its SHA-256 fingerprint printed");
    auto* key = app.add_option("--key", flags.key, "PEM private key of --cert");
    cert->needs(key);
    key->needs(cert);
    add_cipher_flag(app, flags.ciphers);
}

namespace {
bool is_wildcard(const std::string& bind) { return bind.empty() || bind == "::" || bind == "0.0.0.0"; }
}  // namespace

ServerTls server_tls(const ServerTlsFlags& flags, const std::string& bind) {
    ServerTls out;
    out.options.keylog = keylog_from_environment();
    out.options.cipher_suites = flags.ciphers;
    out.options.session_tickets = true;
    out.options.early_data = flags.early_data;
    if (!flags.cert.empty()) {
        out.options.certificate = tls::ServerCredentials::load(flags.cert, flags.key);
        return out;
    }
    std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0' && std::string(host) != "localhost")
        names.emplace_back(host);
    if (!is_wildcard(bind) && bind != "127.0.0.1" && bind != "::1") names.push_back(bind);
    out.options.certificate = tls::ServerCredentials::self_signed(names, std::chrono::system_clock::now());
    const std::string fp = tls::to_string(out.options.certificate->fingerprint());
    out.self_signed_note = fmt::format("TLS: self-signed certificate for {}, SHA-256 fingerprint {}\n"
                                       "     clients trust it with: ndm-send --pin {} ...",
                                       fmt::join(names, ", "), fp, fp);
    return out;
}

void add_early_data_flag(CLI::App& app, ServerTlsFlags& flags) {
    app.add_flag("--early-data", flags.early_data,
                 "accept 0-RTT: a client resuming a session may send its first requests before the handshake "
                 "completes, one round trip sooner. Off by default (unlike a TCP server, which has no such "
                 "data): an attacker who records a 0-RTT flight can replay it, and a replay within the "
                 "anti-replay window (10 s) is refused but one to another server process is not "
                 "(docs/security.md); only requests that are safe to repeat belong in it");
}

void add_client_tls_flags(CLI::App& app, ClientTlsFlags& flags) {
    auto* ca = app.add_option("--ca", flags.ca,
                              "trust the CAs (or self-signed certificates) in this PEM file instead of the system "
                              "store; the certificate must name the server (-c or --server-name)");
    auto* pin = app.add_option("--pin", flags.pin,
                               "trust exactly the server certificate with this SHA-256 fingerprint (64 hex digits, "
                               "':' separators allowed; ndm-recv prints it), whatever names it carries");
    auto* insecure = app.add_flag("--insecure", flags.insecure,
                                  "trust any server certificate: the data is encrypted, but the server is not "
                                  "authenticated");
    ca->excludes(pin)->excludes(insecure);
    pin->excludes(insecure);
    app.add_option("--server-name", flags.server_name,
                   "the name the server's certificate must carry, and the TLS SNI (default: the -c address)");
    add_cipher_flag(app, flags.ciphers);
}

TlsOptions client_tls(const ClientTlsFlags& flags) {
    TlsOptions o;
    o.keylog = keylog_from_environment();
    o.server_name = flags.server_name;
    o.cipher_suites = flags.ciphers;
    if (flags.insecure) {
        o.trust = tls::ClientCredentials::insecure();
    } else if (!flags.pin.empty()) {
        const auto fp = tls::parse_fingerprint(flags.pin);
        if (!fp) throw std::invalid_argument("--pin: expected a SHA-256 fingerprint, 64 hex digits, got \"" + flags.pin + "\"");
        o.trust = tls::ClientCredentials::pinned(*fp);
    } else if (!flags.ca.empty()) {
        o.trust = tls::ClientCredentials::ca_file(flags.ca);
    } else {
        o.trust = tls::ClientCredentials::system();
    }
    return o;
}

TlsOptions in_process_tls() {
    TlsOptions o = experiment::loopback_tls();
    o.keylog = keylog_from_environment();
    return o;
}

void add_cipher_flag(CLI::App& app, std::vector<std::string>& suites) {
    app.add_option("--cipher", suites,
                   "TLS 1.3 cipher suites to allow, in preference order: aes128-gcm, aes256-gcm, chacha20 "
                   "(comma-separated; default: all three). The handshake is GnuTLS's; the packets of the suite "
                   "are protected by OpenSSL's libcrypto or by GnuTLS, whichever a short run at start-up measures "
                   "faster (OpenSSL for chacha20, about twice nettle's; NDM_AEAD_BACKEND=gnutls|openssl|auto "
                   "chooses; -V names it)")
        ->delimiter(',')
        ->type_name("LIST")
        ->check(one_of({"aes128-gcm", "aes256-gcm", "chacha20", "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                        "TLS_CHACHA20_POLY1305_SHA256"},
                       true));
}

void add_no_gso_flag(CLI::App& app, bool& no_gso) {
    app.add_flag("--no-gso", no_gso,
                 "send and receive one datagram per system call (no UDP GSO/GRO): a capture on loopback then "
                 "shows every datagram on its own, which Wireshark needs to decode them and, with the keys "
                 "SSLKEYLOGFILE names, decrypt them; with GSO it sees super-datagrams of up to 64 KB that it "
                 "cannot take apart (slower; give it to both sides)");
}

void add_no_ecn_flag(CLI::App& app, bool& no_ecn) {
    app.add_flag("--no-ecn", no_ecn,
                 "send without ECN: no ECT(0) marks, so CE marks on the path cannot slow this side down "
                 "(default: marked once the path is validated, docs/wire-format.md §12)");
}

void add_retry_option(CLI::App& app, std::string& retry) {
    app.add_option("--retry", retry,
                   "address validation with Retry (RFC 9000 8.1.2): auto = once 128 handshakes are in progress or began in the last second (a "
                   "flood of spoofed Initials then costs one small Retry each, not a TLS handshake), always = "
                   "every new client (one extra round trip), never")
        ->capture_default_str()
        ->check(one_of({"auto", "always", "never"}));
}

tls::KeylogSink keylog_from_environment() {
    const char* path = std::getenv("SSLKEYLOGFILE");
    if (path == nullptr || *path == '\0') return {};
    return tls::keylog_to_file(path);
}

}  // namespace ndm::tools
