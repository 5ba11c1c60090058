// The TLS 1.3 handshake for QUIC (RFC 9001 §4) over GnuTLS, sans-I/O: the
// connection hands it the in-order bytes of each CRYPTO stream and drains
// what it produces - bytes to send per encryption level, traffic secrets as
// each level becomes available, the negotiated ALPN, the peer's
// quic_transport_parameters, completion or a terminal error. It opens no
// socket and reads no clock (certificate validity is checked against
// TlsConfig::now). Resumption: a server sends a NewSessionTicket after the
// handshake, a client hands out each one it receives and resumes with one;
// 0-RTT secrets come out as the other levels' do (RFC 9001 §4.6, docs/tls.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto/suite.hpp"
#include "ndm/tls.hpp"

namespace ndm::tls {

enum class Role : std::uint8_t { client, server };
enum class Direction : std::uint8_t { read, write };

// RFC 9000 §7.5 requires accepting at least 4096 bytes of out-of-order
// CRYPTO data; this bounds what is buffered of one incomplete handshake
// message (a certificate chain is the largest).
inline constexpr std::size_t kMinCryptoBuffer = 4096;
inline constexpr std::size_t kDefaultCryptoBuffer = 64 * 1024;

struct TlsConfig {
    Role role = Role::client;
    // Offered (client, in preference order) or accepted (server) protocols;
    // QUIC requires ALPN (RFC 9001 §8.1): at least one, each 1..255 bytes.
    std::vector<std::string> alpn;
    // Client: sent as SNI (unless an IP literal, RFC 6066 §3) and the name the
    // certificate must match; required unless verification is pin/insecure.
    std::string server_name;
    // This endpoint's quic_transport_parameters payload (RFC 9000 §18),
    // encoded by the transport; sent in the ClientHello or EncryptedExtensions.
    std::vector<std::uint8_t> transport_parameters;
    std::optional<ServerCredentials> server_credentials;  // server: required
    std::optional<ClientCredentials> client_credentials;  // client: required (insecure() is explicit)
    KeylogSink keylog;                                    // empty: no key log (GnuTLS's own SSLKEYLOGFILE is off)
    // Allowed suites in preference order; empty: all three.
    std::vector<crypto::CipherSuite> cipher_suites;
    // The deterministic simulator's mode: X25519 and Ed25519 only, so every
    // run's handshake messages have the same sizes.
    bool fixed_sizes = false;
    std::size_t max_crypto_buffer = kDefaultCryptoBuffer;  // >= kMinCryptoBuffer
    std::chrono::system_clock::time_point now{};            // certificate validity is checked at this time
    // Client: GnuTLS session data to resume (ResumptionTicket::session).
    std::vector<std::uint8_t> resume_session;
    // Client: offer 0-RTT with resume_session. Server: accept 0-RTT, and
    // allow it in the tickets sent (max_early_data_size 0xffffffff, RFC 9001 §4.6.1).
    bool early_data = false;
    bool session_tickets = false;  // server: one NewSessionTicket after the handshake
    std::chrono::milliseconds anti_replay_window{10000};  // server, with early_data
};

// The configuration cannot make a session (no ALPN, no credentials, ...).
class TlsSetupError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct SecretEvent {
    crypto::EncryptionLevel level;
    Direction direction;
    crypto::CipherSuite suite;
    crypto::Secret secret;
};

// How the handshake ended, for CONNECTION_CLOSE (RFC 9000 §19.19) and for
// people: code is CRYPTO_ERROR 0x100 + alert (RFC 9001 §4.8) or a transport
// error (PROTOCOL_VIOLATION, CRYPTO_BUFFER_EXCEEDED, INTERNAL_ERROR).
struct TlsError {
    std::uint64_t code = 0;
    std::string alert_name;  // "no_application_protocol"; empty for a transport error
    std::string message;     // one line: "certificate for localhost, expected example.org"
    bool from_peer = false;  // reported by the peer (on_peer_error) rather than found here
};

class TlsSession {
public:
    explicit TlsSession(TlsConfig config);  // throws TlsSetupError
    ~TlsSession();
    TlsSession(TlsSession&&) noexcept;
    TlsSession& operator=(TlsSession&&) noexcept;
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    [[nodiscard]] Role role() const;

    // Client: writes the ClientHello (Initial level). Server: nothing to do.
    // Once only.
    void start();
    // In-order CRYPTO-stream bytes received at `level` (the transport
    // reassembles). Data at a level other than the one being read, a
    // message bigger than max_crypto_buffer, or anything after a failure
    // ends the session with error(); never throws for peer input.
    void provide(crypto::EncryptionLevel level, std::span<const std::uint8_t> bytes);
    // The peer closed with `code` (CONNECTION_CLOSE): records it as error()
    // with a message in this endpoint's terms (e.g. the ALPN it offered).
    void on_peer_error(std::uint64_t code);

    // Bytes to send in CRYPTO frames at `level`, drained.
    std::vector<std::uint8_t> take_output(crypto::EncryptionLevel level);
    [[nodiscard]] bool has_output() const;
    // Secrets in the order they became available, drained.
    std::vector<SecretEvent> take_secrets();

    [[nodiscard]] bool handshake_complete() const;
    [[nodiscard]] const std::optional<TlsError>& error() const;
    // Once known (after the ServerHello; the ALPN and peer parameters once the
    // EncryptedExtensions or ClientHello was read).
    [[nodiscard]] std::optional<crypto::CipherSuite> suite() const;
    [[nodiscard]] const std::string& alpn() const;
    [[nodiscard]] const std::optional<std::vector<std::uint8_t>>& peer_transport_parameters() const;

    // Client: the session data of each NewSessionTicket received, drained
    // (with whether it allows early data).
    struct Ticket {
        std::vector<std::uint8_t> session;
        bool early_data = false;
    };
    std::vector<Ticket> take_tickets();
    // After completion: the handshake resumed a session (no Certificate).
    [[nodiscard]] bool resumed() const;
    // After completion: the server accepted the client's 0-RTT data.
    [[nodiscard]] bool early_data_accepted() const;

    struct Impl;  // opaque; public so that GnuTLS's C callbacks can reach it

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace ndm::tls
