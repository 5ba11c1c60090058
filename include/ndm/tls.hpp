// TLS 1.3 for ndm's connections (RFC 9001): the certificates a server
// presents and how a client decides to trust them, the key log Wireshark
// reads, and TlsOptions, the handshake part of a ConnectionConfig.
//
// Certificates (RFC 9001 §4.4): The server loads a PEM chain and key
// or generates a self-signed Ed25519 certificate and shows its fingerprint;
// the client trusts the system store, a CA file, a pinned SHA-256 fingerprint
// of the leaf, or - only when told so - anything. GnuTLS does the work; the
// handles here are shared by every session that uses them (docs/tls.md).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::tls {

// A certificate or key could not be loaded or made; what() names the file
// (or the input) and the problem in one line.
class CredentialError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// SHA-256 of the leaf certificate's DER encoding. Printed as 64 lower-case
// hex digits without separators; parsed with or without ':' between bytes,
// in either case.
struct Fingerprint {
    std::array<std::uint8_t, 32> bytes{};
    friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};
std::string to_string(const Fingerprint& fp);
std::optional<Fingerprint> parse_fingerprint(std::string_view text);
Fingerprint fingerprint_of_der(const std::uint8_t* der, std::size_t size);

// A PEM certificate (chain, leaf first) with its private key: what the
// server tools write or read with --cert/--key.
struct PemCertificate {
    std::string certificate_pem;
    std::string key_pem;
};

// A self-signed certificate with an Ed25519 key (fixed-size signatures,
// RFC 8032), for `names` (each an IPv4/IPv6 literal becomes an iPAddress
// SAN, anything else a dNSName; the first is also the subject CN), valid from
// now - 1 h to now + validity. `now` is a parameter: this module reads no clock.
PemCertificate generate_self_signed(const std::vector<std::string>& names, std::chrono::system_clock::time_point now,
                                    std::chrono::seconds validity = std::chrono::hours(24 * 30));

struct ServerCredentialsState;  // gnutls_certificate_credentials_t, shared

// What a server presents: a certificate chain and its key.
class ServerCredentials {
public:
    // From PEM text; the origins name where each part came from in errors.
    static ServerCredentials from_pem(const PemCertificate& pem, std::string_view cert_origin = "certificate",
                                      std::string_view key_origin = "private key");
    // From files (--cert, --key); errors name the file and the problem.
    static ServerCredentials load(const std::string& cert_file, const std::string& key_file);
    // generate_self_signed() in memory.
    static ServerCredentials self_signed(const std::vector<std::string>& names, std::chrono::system_clock::time_point now,
                                         std::chrono::seconds validity = std::chrono::hours(24 * 30));

    [[nodiscard]] const Fingerprint& fingerprint() const;  // of the leaf
    [[nodiscard]] const std::string& certificate_pem() const;  // the chain, no key
    [[nodiscard]] std::shared_ptr<ServerCredentialsState> state() const { return state_; }

private:
    explicit ServerCredentials(std::shared_ptr<ServerCredentialsState> s) : state_(std::move(s)) {}
    std::shared_ptr<ServerCredentialsState> state_;
};

// How a client decides to trust the server's certificate.
enum class VerifyMode : std::uint8_t {
    system,    // the system trust store (gnutls_certificate_set_x509_system_trust)
    ca_file,   // the CAs (or self-signed certificates) of a PEM file (--ca)
    pin,       // a leaf whose SHA-256 fingerprint matches (--pin); names are not checked
    insecure,  // anything (--insecure): explicit, never a default
};

struct ClientCredentialsState;

class ClientCredentials {
public:
    static ClientCredentials system();
    static ClientCredentials ca_file(const std::string& path);
    static ClientCredentials pinned(const Fingerprint& fp);
    static ClientCredentials insecure();

    [[nodiscard]] VerifyMode mode() const;
    [[nodiscard]] std::shared_ptr<ClientCredentialsState> state() const { return state_; }

private:
    explicit ClientCredentials(std::shared_ptr<ClientCredentialsState> s) : state_(std::move(s)) {}
    std::shared_ptr<ClientCredentialsState> state_;
};

// ---- key log
// NSS key log lines (the SSLKEYLOGFILE format Wireshark reads): "LABEL
// <client random, 64 hex> <secret, hex>", for CLIENT_HANDSHAKE_TRAFFIC_SECRET,
// SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0,
// SERVER_TRAFFIC_SECRET_0 and EXPORTER_SECRET (RFC 8446 §7.1), which is all a
// QUIC decoder needs (RFC 9001 §5.1).

// Receives one line, without its newline.
using KeylogSink = std::function<void(std::string_view line)>;

class KeylogError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

std::string keylog_line(std::string_view label, std::span<const std::uint8_t> client_random,
                        std::span<const std::uint8_t> secret);

// A sink that appends each line to `path` (created 0600), one write(2) per
// line with O_APPEND so that processes sharing the file do not interleave.
// Throws KeylogError naming the path when it cannot be opened; a later write
// error is logged once and the rest of the lines are dropped.
KeylogSink keylog_to_file(const std::string& path);

// ---- session resumption (RFC 8446 §2.2, §4.6.1; RFC 9001 §4.5, §4.6)
// What a client keeps of a connection to resume a later one with the same
// server: GnuTLS's session data from a NewSessionTicket, and the server's
// transport parameters, which a 0-RTT flight must respect (RFC 9000 §7.4.1).
// A Connection raises event::SessionTicket with one; TlsOptions::resume
// gives it back. Opaque to the application, who stores it as serialize()
// bytes (a file, ndm-send --session-file) and must keep it secret: whoever
// holds it can resume the session.
class ResumptionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ResumptionTicket {
    std::vector<std::uint8_t> session;               // gnutls_session_get_data2()
    std::vector<std::uint8_t> transport_parameters;  // the server's, as it sent them
    std::string server_name;                         // TlsOptions::server_name of that connection
    std::string alpn;                                // the protocol agreed on it
    bool early_data = false;                         // the server allows 0-RTT with it (RFC 9001 §4.6.1)

    // A versioned byte format ("ndm-ticket 1", then length-prefixed fields).
    [[nodiscard]] std::vector<std::uint8_t> serialize() const;
    // Throws ResumptionError naming what is wrong with `bytes`.
    static ResumptionTicket parse(std::span<const std::uint8_t> bytes);
};

}  // namespace ndm::tls

namespace ndm {

// The TLS handshake of one connection. A server needs `certificate`; a
// client trusts the system store unless told otherwise, and names the
// server it expects in `server_name`.
struct TlsOptions {
    // ALPN (RFC 9001 §8.1, required): offered in preference order by a
    // client, accepted by a server; no protocol in common ends the handshake
    // with no_application_protocol. "ndm" is ndm's own protocol.
    std::vector<std::string> alpn{"ndm"};
    // Client: sent as SNI (unless an IP literal) and the name the
    // certificate must carry (not checked when pinned or insecure).
    std::string server_name;
    // Server: the certificate chain and key it presents (required).
    std::optional<tls::ServerCredentials> certificate;
    // Client: how the server's certificate is trusted; unset: the system store.
    std::optional<tls::ClientCredentials> trust;
    // TLS 1.3 cipher suites allowed, in preference order, by their RFC 8446
    // names (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
    // TLS_CHACHA20_POLY1305_SHA256) or short ones (aes128-gcm, aes256-gcm,
    // chacha20); empty: all three. An unknown name makes the connection
    // throw std::invalid_argument when it is created.
    std::vector<std::string> cipher_suites;
    // Receives the key log (tls::keylog_to_file); unset: none is written.
    tls::KeylogSink keylog;
    // X25519 and Ed25519 only, so that every handshake message has the same
    // size in every run: the virtual-time simulator's setting.
    bool fixed_sizes = false;
    // The wall-clock time certificates are checked against: a Connection
    // reads no clock. The Endpoint sets the system time when this is unset
    // (the epoch); a simulation sets a fixed one.
    std::chrono::system_clock::time_point wall_time{};

    // ---- resumption and 0-RTT (RFC 9001 §4.5, §4.6; docs/tls.md)
    // Client: resume the session of an earlier connection to this server
    // (its event::SessionTicket). The server may still make a full
    // handshake. A ticket for another server_name or an ALPN not offered
    // makes the connection throw std::invalid_argument when it is created.
    std::optional<tls::ResumptionTicket> resume;
    // Client: with `resume` from a server that allows it, write on streams
    // before the handshake completes, sent in 0-RTT packets (RFC 9001 §4.6.1)
    // within the remembered transport parameters (RFC 9000 §7.4.1); if the
    // server refuses, the same bytes go again in 1-RTT packets.
    // Server: accept 0-RTT (and say so in its tickets). Off by default: 0-RTT
    // data can be replayed by an attacker (RFC 8446 §8, docs/security.md);
    // only an application whose first requests are safe to repeat turns it on.
    bool early_data = false;
    // Server: send a NewSessionTicket after each handshake (RFC 8446 §4.6.1),
    // in a 1-RTT CRYPTO frame. Off by default, so that a connection's bytes
    // on the wire (and every recorded simulation) stay as they were; the
    // servers of the tools turn it on (ndm-recv, ndm-h3 serve), and
    // early_data implies it.
    bool session_tickets = false;
    // Server, with early_data: ClientHellos are remembered this long, and
    // one seen again, or whose ticket age is off by more, has its early
    // data refused (RFC 8446 §8.2, gnutls_anti_replay_set_window).
    std::chrono::milliseconds anti_replay_window{10000};
};

}  // namespace ndm

#pragma GCC visibility pop
