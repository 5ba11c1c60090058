#include "tls/tls_session.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gnutls/gnutls.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "tls/alert.hpp"
#include "tls/credentials_state.hpp"
#include "tls/verify.hpp"

namespace ndm::tls {

using crypto::CipherSuite;
using crypto::EncryptionLevel;

namespace {

// RFC 9001 §8.2: the quic_transport_parameters extension.
constexpr int kTransportParametersExtension = 0x39;
// RFC 8446 §4: handshake message types QUIC forbids (RFC 9001 §8.3, §6).
constexpr std::uint8_t kEndOfEarlyData = 5;
constexpr std::uint8_t kKeyUpdate = 24;
constexpr std::uint8_t kNewSessionTicket = 4;
constexpr std::size_t kMessageHeader = 4;  // type, uint24 length (RFC 8446 §4)

EncryptionLevel from_gnutls(gnutls_record_encryption_level_t level) {
    switch (level) {
    case GNUTLS_ENCRYPTION_LEVEL_INITIAL: return EncryptionLevel::initial;
    case GNUTLS_ENCRYPTION_LEVEL_EARLY: return EncryptionLevel::zero_rtt;
    case GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE: return EncryptionLevel::handshake;
    case GNUTLS_ENCRYPTION_LEVEL_APPLICATION: return EncryptionLevel::one_rtt;
    }
    return EncryptionLevel::initial;
}

gnutls_record_encryption_level_t to_gnutls(EncryptionLevel level) {
    switch (level) {
    case EncryptionLevel::initial: return GNUTLS_ENCRYPTION_LEVEL_INITIAL;
    case EncryptionLevel::zero_rtt: return GNUTLS_ENCRYPTION_LEVEL_EARLY;
    case EncryptionLevel::handshake: return GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE;
    case EncryptionLevel::one_rtt: return GNUTLS_ENCRYPTION_LEVEL_APPLICATION;
    }
    return GNUTLS_ENCRYPTION_LEVEL_INITIAL;
}

std::optional<CipherSuite> suite_of(gnutls_cipher_algorithm_t cipher) {
    switch (cipher) {
    case GNUTLS_CIPHER_AES_128_GCM: return CipherSuite::aes128_gcm_sha256;
    case GNUTLS_CIPHER_AES_256_GCM: return CipherSuite::aes256_gcm_sha384;
    case GNUTLS_CIPHER_CHACHA20_POLY1305: return CipherSuite::chacha20_poly1305_sha256;
    default: return std::nullopt;
    }
}

// RFC 8446 §4.6.1: NewSessionTicket = ticket_lifetime (4) | ticket_age_add
// (4) | ticket_nonce<0..255> | ticket<1..2^16-1> | extensions<0..2^16-2>;
// early_data (42) carries max_early_data_size (4), which RFC 9001 §4.6.1
// sets to 0xffffffff. `m` is the whole message, its 4-byte header first.
bool ticket_allows_early_data(std::span<const std::uint8_t> m) {
    constexpr unsigned kEarlyData = 42;
    if (m.size() < kMessageHeader) return false;
    m = m.subspan(kMessageHeader);
    std::size_t at = 8;
    const auto u16 = [&](std::size_t i) { return std::size_t{m[i]} << 8 | m[i + 1]; };
    if (m.size() < at + 1) return false;
    at += 1 + m[at];  // nonce
    if (m.size() < at + 2) return false;
    at += 2 + u16(at);  // ticket
    if (m.size() < at + 2) return false;
    const std::size_t end = at + 2 + u16(at);
    if (end != m.size()) return false;
    for (at += 2; at + 4 <= end;) {
        const std::size_t type = u16(at), len = u16(at + 2);
        at += 4;
        if (at + len > end) return false;
        if (type == kEarlyData)
            return len == 4 && m[at] == 0xff && m[at + 1] == 0xff && m[at + 2] == 0xff && m[at + 3] == 0xff;
        at += len;
    }
    return false;
}

std::string_view priority_name(CipherSuite suite) {
    switch (suite) {
    case CipherSuite::aes128_gcm_sha256: return "+AES-128-GCM";
    case CipherSuite::aes256_gcm_sha384: return "+AES-256-GCM";
    case CipherSuite::chacha20_poly1305_sha256: return "+CHACHA20-POLY1305";
    }
    return "";
}

// TLS 1.3 only (RFC 9001 §4.2), no middlebox-compatibility ChangeCipherSpec
// or session ID (RFC 9001 §8.4), only the suites QUIC packet protection
// implements; fixed sizes: one key share and one signature scheme.
std::string priority_string(const TlsConfig& config) {
    std::vector<CipherSuite> suites = config.cipher_suites;
    if (suites.empty())
        suites = {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384, CipherSuite::chacha20_poly1305_sha256};
    std::string p = "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE:-CIPHER-ALL";
    for (const auto s : suites) p += fmt::format(":{}", priority_name(s));
    if (config.fixed_sizes) p += ":-GROUP-ALL:+GROUP-X25519:-SIGN-ALL:+SIGN-EDDSA-ED25519";
    return p;
}

bool is_ip_literal(const std::string& name) {
    unsigned char buf[16];
    return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

void validate(const TlsConfig& c) {
    if (c.alpn.empty()) throw TlsSetupError("TLS: no ALPN protocol configured (QUIC requires ALPN, RFC 9001 §8.1)");
    for (const auto& p : c.alpn)
        if (p.empty() || p.size() > 255) throw TlsSetupError("TLS: an ALPN protocol name must be 1 to 255 bytes");
    if (c.transport_parameters.empty())
        throw TlsSetupError("TLS: no transport parameters (RFC 9000 §7.3 requires initial_source_connection_id)");
    if (c.max_crypto_buffer < kMinCryptoBuffer)
        throw TlsSetupError(fmt::format("TLS: CRYPTO buffer below {} bytes (RFC 9000 §7.5)", kMinCryptoBuffer));
    if (c.role == Role::server && !c.server_credentials) throw TlsSetupError("TLS server: no certificate");
    if (c.role == Role::client) {
        if (!c.client_credentials) throw TlsSetupError("TLS client: no verification mode (use insecure() explicitly)");
        const auto mode = c.client_credentials->mode();
        if ((mode == VerifyMode::system || mode == VerifyMode::ca_file) && c.server_name.empty())
            throw TlsSetupError("TLS client: a server name is needed to verify the certificate");
    }
}

}  // namespace

struct TlsSession::Impl {
    TlsConfig config;
    gnutls_session_t session = nullptr;
    bool started = false;
    bool complete = false;
    bool extensions_checked = false;  // on_hook
    EncryptionLevel reading = EncryptionLevel::initial;  // where the next message is expected
    std::vector<std::uint8_t> partial;                   // an incomplete message at `reading`
    std::array<std::vector<std::uint8_t>, crypto::kEncryptionLevels> out;
    std::vector<SecretEvent> secrets;
    std::optional<CipherSuite> suite;
    std::string alpn;
    std::optional<std::vector<std::uint8_t>> peer_params;
    std::optional<TlsError> error;
    std::optional<VerifyFailure> pending;  // the reason a callback made GnuTLS fail
    std::optional<std::uint8_t> sent_alert;
    std::vector<TlsSession::Ticket> tickets;  // client: received, not yet taken

    explicit Impl(TlsConfig c);
    ~Impl() { gnutls_deinit(session); }
    void configure_callbacks();
    void configure_peer();
    void configure_resumption();
    void on_ticket();
    bool ticket_early_data = false;  // the NewSessionTicket being read allows 0-RTT
    bool early_offer_pending = false;  // the byte that makes GnuTLS offer early data is not yet written

    void fail(std::uint64_t code, std::string alert_name, std::string message);
    void fail_alert(Alert alert, std::string message);
    void fail_gnutls(int rc);
    void handshake();
    void process_message(EncryptionLevel level, std::span<const std::uint8_t> msg);
    std::optional<VerifyFailure> check_peer_extensions() const;
    void on_complete();

    // GnuTLS callbacks (gnutls_session_get_ptr is this Impl).
    int on_secret(gnutls_record_encryption_level_t level, const void* rx, const void* tx, std::size_t size);
    int on_handshake_message(gnutls_record_encryption_level_t level, gnutls_handshake_description_t type,
                             const void* data, std::size_t size);
    int on_hook(unsigned type, unsigned incoming);
    int on_verify();
    void on_keylog(const char* label, const gnutls_datum_t* secret) const;
};

namespace {

TlsSession::Impl* impl_of(gnutls_session_t s) { return static_cast<TlsSession::Impl*>(gnutls_session_get_ptr(s)); }

int secret_cb(gnutls_session_t s, gnutls_record_encryption_level_t level, const void* rx, const void* tx,
              std::size_t size) {
    return impl_of(s)->on_secret(level, rx, tx, size);
}
int read_cb(gnutls_session_t s, gnutls_record_encryption_level_t level, gnutls_handshake_description_t type,
            const void* data, std::size_t size) {
    return impl_of(s)->on_handshake_message(level, type, data, size);
}
// GnuTLS reports the alerts it would send here (in QUIC they become
// CONNECTION_CLOSE, RFC 9001 §4.8); the first one is the reason.
int alert_cb(gnutls_session_t s, gnutls_record_encryption_level_t, gnutls_alert_level_t, gnutls_alert_description_t d) {
    auto* impl = impl_of(s);
    if (!impl->sent_alert) impl->sent_alert = static_cast<std::uint8_t>(d);
    return 0;
}
int hook_cb(gnutls_session_t s, unsigned type, unsigned when, unsigned incoming, const gnutls_datum_t*) {
    if (when != GNUTLS_HOOK_POST) return 0;
    auto* impl = impl_of(s);
    if (incoming && type == GNUTLS_HANDSHAKE_NEW_SESSION_TICKET && impl->config.role == Role::client) {
        impl->on_ticket();
        return 0;
    }
    return impl->on_hook(type, incoming);
}
int verify_cb(gnutls_session_t s) { return impl_of(s)->on_verify(); }
int keylog_cb(gnutls_session_t s, const char* label, const gnutls_datum_t* secret) {
    impl_of(s)->on_keylog(label, secret);
    return 0;
}
int tp_recv_cb(gnutls_session_t s, const unsigned char* data, std::size_t size) {
    impl_of(s)->peer_params.emplace(data, data + size);
    return 0;
}
int tp_send_cb(gnutls_session_t s, gnutls_buffer_t buf) {
    const auto& tp = impl_of(s)->config.transport_parameters;
    const int rc = gnutls_buffer_append_data(buf, tp.data(), tp.size());
    return rc < 0 ? rc : static_cast<int>(tp.size());
}
// No records, no socket: GnuTLS never needs to read or write one in QUIC
// mode; should it try, it sees "would block" / an error, not a file descriptor.
ssize_t pull_cb(gnutls_transport_ptr_t p, void*, std::size_t) {
    gnutls_transport_set_errno(static_cast<gnutls_session_t>(p), EAGAIN);
    return -1;
}
ssize_t push_cb(gnutls_transport_ptr_t p, const void*, std::size_t size) {
    const auto session = static_cast<gnutls_session_t>(p);
    // The one record GnuTLS writes itself in QUIC mode: the early data byte
    // that makes it offer 0-RTT (configure_resumption). QUIC carries early
    // data in 0-RTT packets, so the record goes nowhere.
    if (impl_of(session)->early_offer_pending) {
        impl_of(session)->early_offer_pending = false;
        return static_cast<ssize_t>(size);
    }
    gnutls_transport_set_errno(session, EPIPE);
    return -1;
}
int pull_timeout_cb(gnutls_transport_ptr_t, unsigned) { return 0; }

}  // namespace

TlsSession::Impl::Impl(TlsConfig c) : config(std::move(c)) {
    validate(config);
    // RFC 9001 §8.3: no EndOfEarlyData. A server sends its ticket itself once
    // the handshake is complete (on_complete), as a 1-RTT CRYPTO message.
    unsigned flags = (config.role == Role::client ? GNUTLS_CLIENT : GNUTLS_SERVER) | GNUTLS_NO_END_OF_EARLY_DATA |
                     GNUTLS_NONBLOCK;
    if (config.role == Role::server) flags |= config.session_tickets ? GNUTLS_NO_AUTO_SEND_TICKET : GNUTLS_NO_TICKETS;
    if (config.early_data && (config.role == Role::server || !config.resume_session.empty()))
        flags |= GNUTLS_ENABLE_EARLY_DATA;
    if (const int rc = gnutls_init(&session, flags); rc < 0)
        throw TlsSetupError("TLS: gnutls_init: " + gnutls_error(rc));
    gnutls_session_set_ptr(session, this);
    const std::string priority = priority_string(config);
    const char* where = nullptr;
    if (const int rc = gnutls_priority_set_direct(session, priority.c_str(), &where); rc < 0)
        throw TlsSetupError(fmt::format("TLS: priority \"{}\" at \"{}\": {}", priority, where ? where : "", gnutls_error(rc)));
    configure_callbacks();
    configure_peer();
    configure_resumption();
}

// Server: tickets sealed under the credentials' key, and with early data
// the anti-replay record and RFC 9001 §4.6.1's max_early_data_size. Client:
// the session to resume.
void TlsSession::Impl::configure_resumption() {
    if (config.role == Role::server) {
        auto& state = *config.server_credentials->state();
        if (config.session_tickets || config.early_data) {
            if (const int rc = gnutls_session_ticket_enable_server(session, &state.ticket_key); rc < 0)
                throw TlsSetupError("TLS: session tickets: " + gnutls_error(rc));
        }
        if (config.early_data) {
            state.anti_replay.enable(session, config.anti_replay_window);
            if (const int rc = gnutls_record_set_max_early_data_size(session, 0xffffffffu); rc < 0)
                throw TlsSetupError("TLS: max_early_data_size: " + gnutls_error(rc));
        }
        return;
    }
    if (config.resume_session.empty()) return;
    if (const int rc = gnutls_session_set_data(session, config.resume_session.data(), config.resume_session.size());
        rc < 0)
        throw TlsSetupError("TLS: the session to resume is not usable: " + gnutls_error(rc));
    // GnuTLS offers early_data (and makes the early secret) only with early
    // data queued, which in QUIC travels in 0-RTT packets instead: one byte
    // marks the offer. A ticket that allows none refuses it, and no 0-RTT
    // is attempted.
    static constexpr std::uint8_t kOffer = 0;
    if (config.early_data) {
        if (gnutls_record_send_early_data(session, &kOffer, 1) < 0) spdlog::debug("ndm: the ticket allows no 0-RTT");
        else early_offer_pending = true;
    }
}

void TlsSession::Impl::configure_callbacks() {
    gnutls_transport_set_ptr(session, session);
    gnutls_transport_set_pull_function(session, pull_cb);
    gnutls_transport_set_push_function(session, push_cb);
    gnutls_transport_set_pull_timeout_function(session, pull_timeout_cb);
    gnutls_handshake_set_secret_function(session, secret_cb);
    gnutls_handshake_set_read_function(session, read_cb);
    gnutls_alert_set_read_function(session, alert_cb);
    gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_ANY, GNUTLS_HOOK_POST, hook_cb);
    // Always ours, so GnuTLS's built-in SSLKEYLOGFILE writer never also runs.
    gnutls_session_set_keylog_function(session, keylog_cb);
    // RFC 9001 §8.2: in the ClientHello and the EncryptedExtensions only.
    const int rc = gnutls_session_ext_register(session, "quic_transport_parameters", kTransportParametersExtension,
                                               GNUTLS_EXT_TLS, tp_recv_cb, tp_send_cb, nullptr, nullptr, nullptr,
                                               GNUTLS_EXT_FLAG_TLS | GNUTLS_EXT_FLAG_CLIENT_HELLO | GNUTLS_EXT_FLAG_EE);
    if (rc < 0) throw TlsSetupError("TLS: registering quic_transport_parameters: " + gnutls_error(rc));
}

void TlsSession::Impl::configure_peer() {
    std::vector<gnutls_datum_t> protocols;
    for (const auto& p : config.alpn)
        protocols.push_back({reinterpret_cast<unsigned char*>(const_cast<char*>(p.data())), static_cast<unsigned>(p.size())});
    // RFC 9001 §8.1: no agreed protocol ends the handshake.
    int rc = gnutls_alpn_set_protocols(session, protocols.data(), static_cast<unsigned>(protocols.size()),
                                       GNUTLS_ALPN_MANDATORY);
    if (rc < 0) throw TlsSetupError("TLS: ALPN: " + gnutls_error(rc));
    gnutls_certificate_credentials_t cred =
        config.role == Role::server ? config.server_credentials->state()->cred : config.client_credentials->state()->cred;
    if (rc = gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, cred); rc < 0)
        throw TlsSetupError("TLS: credentials: " + gnutls_error(rc));
    if (config.role == Role::client) {
        if (!config.server_name.empty() && !is_ip_literal(config.server_name)) {
            rc = gnutls_server_name_set(session, GNUTLS_NAME_DNS, config.server_name.data(), config.server_name.size());
            if (rc < 0) throw TlsSetupError("TLS: server name: " + gnutls_error(rc));
        }
        gnutls_session_set_verify_function(session, verify_cb);
    }
}

void TlsSession::Impl::fail(std::uint64_t code, std::string alert_name, std::string message) {
    if (error) return;
    error = TlsError{code, std::move(alert_name), std::move(message), false};
    // Nothing more goes out in CRYPTO frames; the connection closes instead.
    for (auto& o : out) o.clear();
    partial.clear();
}

void TlsSession::Impl::fail_alert(Alert alert, std::string message) {
    const auto code = static_cast<std::uint8_t>(alert);
    fail(crypto_error(code), std::string(alert_name(code)), std::move(message));
}

// A fatal GnuTLS error: the reason a callback recorded, else the alert GnuTLS
// chose, else the one it maps the error to.
void TlsSession::Impl::fail_gnutls(int rc) {
    if (pending) {
        const VerifyFailure f = std::move(*pending);
        pending.reset();
        fail_alert(f.alert, f.message);
        return;
    }
    std::uint8_t alert = static_cast<std::uint8_t>(Alert::internal_error);
    int level = 0;
    if (sent_alert) {
        alert = *sent_alert;
    } else if (const int a = gnutls_error_to_alert(rc, &level); a >= 0) {
        alert = static_cast<std::uint8_t>(a);
    }
    std::string message = fmt::format("TLS handshake failed: {}", gnutls_error(rc));
    if (rc == GNUTLS_E_NO_APPLICATION_PROTOCOL)
        message = fmt::format("no common ALPN protocol ({} {})",
                              config.role == Role::client ? "offered" : "accepted", fmt::join(config.alpn, ", "));
    fail(crypto_error(alert), std::string(alert_name(alert)), message);
}

void TlsSession::Impl::handshake() {
    if (complete || error) return;
    const int rc = gnutls_handshake(session);
    if (rc == 0) {
        on_complete();
    } else if (gnutls_error_is_fatal(rc) || pending) {
        fail_gnutls(rc);
    }
    // GNUTLS_E_AGAIN: waiting for the peer's next flight.
}

void TlsSession::Impl::process_message(EncryptionLevel level, std::span<const std::uint8_t> msg) {
    // RFC 9001 §8.3 and §6: QUIC has neither EndOfEarlyData nor KeyUpdate.
    if (msg[0] == kEndOfEarlyData || msg[0] == kKeyUpdate) {
        fail_alert(Alert::unexpected_message,
                   fmt::format("peer sent a TLS {} message, which QUIC forbids",
                               msg[0] == kKeyUpdate ? "KeyUpdate" : "EndOfEarlyData"));
        return;
    }
    if (msg[0] == kNewSessionTicket && config.role == Role::client) ticket_early_data = ticket_allows_early_data(msg);
    const int rc = gnutls_handshake_write(session, to_gnutls(level), msg.data(), msg.size());
    if (rc < 0 && (gnutls_error_is_fatal(rc) || pending)) {
        fail_gnutls(rc);
        return;
    }
    handshake();
}

std::optional<VerifyFailure> TlsSession::Impl::check_peer_extensions() const {
    // RFC 9001 §8.2: a peer without quic_transport_parameters is refused.
    if (!peer_params)
        return VerifyFailure{Alert::missing_extension,
                             fmt::format("{} sent no quic_transport_parameters extension",
                                         config.role == Role::client ? "server" : "client")};
    // RFC 9001 §8.1: GnuTLS's ALPN_MANDATORY, checked here too.
    gnutls_datum_t selected{nullptr, 0};
    if (gnutls_alpn_get_selected_protocol(session, &selected) < 0 || selected.size == 0)
        return VerifyFailure{Alert::no_application_protocol,
                             fmt::format("no common ALPN protocol ({} {})",
                                         config.role == Role::client ? "offered" : "accepted", fmt::join(config.alpn, ", "))};
    return std::nullopt;
}

void TlsSession::Impl::on_complete() {
    if (auto f = check_peer_extensions()) {
        fail_alert(f->alert, f->message);
        return;
    }
    complete = true;
    reading = EncryptionLevel::one_rtt;  // post-handshake messages (RFC 9001 §4.1.3)
    if (config.role == Role::server && config.session_tickets) {
        // A ticket that cannot be made costs the client its next resumption only.
        if (const int rc = gnutls_session_ticket_send(session, 1, 0); rc < 0)
            spdlog::debug("ndm: no session ticket sent: {}", gnutls_error(rc));
    }
}

int TlsSession::Impl::on_secret(gnutls_record_encryption_level_t gl, const void* rx, const void* tx, std::size_t size) {
    const EncryptionLevel level = from_gnutls(gl);
    // The 0-RTT secret's suite is the resumed session's (RFC 8446 §4.2.10),
    // which gnutls_early_cipher_get reports before any ServerHello.
    const auto s = suite_of(level == EncryptionLevel::zero_rtt ? gnutls_early_cipher_get(session)
                                                               : gnutls_cipher_get(session));
    if (!s || size == 0 || size > crypto::kMaxSecretSize) {
        pending = VerifyFailure{Alert::internal_error, fmt::format("TLS negotiated an unsupported suite or a {}-byte secret", size)};
        return GNUTLS_E_INTERNAL_ERROR;
    }
    if (level != EncryptionLevel::zero_rtt) suite = s;
    auto add = [&](const void* bytes, Direction dir) {
        if (bytes == nullptr) return;
        SecretEvent e{level, dir, *s, {}};
        std::memcpy(e.secret.bytes.data(), bytes, size);
        e.secret.size = static_cast<std::uint8_t>(size);
        secrets.push_back(e);
    };
    add(rx, Direction::read);
    add(tx, Direction::write);
    if (rx != nullptr && level == EncryptionLevel::handshake) reading = EncryptionLevel::handshake;
    return 0;
}

int TlsSession::Impl::on_handshake_message(gnutls_record_encryption_level_t level, gnutls_handshake_description_t type,
                                           const void* data, std::size_t size) {
    if (type == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC) return 0;  // never in QUIC (RFC 9001 §8.4)
    auto& o = out[static_cast<std::size_t>(from_gnutls(level))];
    const auto* p = static_cast<const std::uint8_t*>(data);
    o.insert(o.end(), p, p + size);
    return 0;
}

// Checked as soon as the message carrying them was parsed (RFC 9001 §8.1,
// §8.2). The server's ClientHello POST hook runs after its extensions are
// parsed; the client's EncryptedExtensions POST hook runs before (GnuTLS
// 3.7.9), so the client checks at the next message it reads (Certificate,
// or Finished), before it sends anything of its own.
int TlsSession::Impl::on_hook(unsigned type, unsigned incoming) {
    if (!incoming || extensions_checked) return 0;
    const bool after = config.role == Role::server ? type == GNUTLS_HANDSHAKE_CLIENT_HELLO
                                                   : type != GNUTLS_HANDSHAKE_SERVER_HELLO &&
                                                         type != GNUTLS_HANDSHAKE_ENCRYPTED_EXTENSIONS;
    if (!after) return 0;
    extensions_checked = true;
    if (auto f = check_peer_extensions()) {
        const bool alpn_failed = f->alert == Alert::no_application_protocol;
        pending = std::move(f);
        return alpn_failed ? GNUTLS_E_NO_APPLICATION_PROTOCOL : GNUTLS_E_MISSING_EXTENSION;
    }
    gnutls_datum_t selected{nullptr, 0};
    if (gnutls_alpn_get_selected_protocol(session, &selected) >= 0)
        alpn.assign(reinterpret_cast<const char*>(selected.data), selected.size);
    return 0;
}

// A NewSessionTicket was read (RFC 8446 §4.6.1): the session as GnuTLS
// would resume it. A ticket GnuTLS cannot export is skipped, not an error:
// the connection goes on, only the next one cannot resume.
void TlsSession::Impl::on_ticket() {
    gnutls_datum_t data{nullptr, 0};
    if (gnutls_session_get_data2(session, &data) < 0 || data.size == 0) return;
    Ticket t;
    t.session.assign(data.data, data.data + data.size);
    gnutls_free(data.data);
    // RFC 9001 §4.6.1: a server that allows 0-RTT says so in the ticket's
    // early_data extension with max_early_data_size 0xffffffff; GnuTLS keeps
    // the value without an accessor for the client, so process_message read
    // it from the message.
    t.early_data = ticket_early_data;
    tickets.push_back(std::move(t));
}

int TlsSession::Impl::on_verify() {
    auto f = verify_peer(session, *config.client_credentials->state(), config.server_name, config.now);
    if (!f) return 0;
    pending = std::move(f);
    return GNUTLS_E_CERTIFICATE_ERROR;
}

void TlsSession::Impl::on_keylog(const char* label, const gnutls_datum_t* secret) const {
    if (!config.keylog) return;
    gnutls_datum_t client_random{nullptr, 0}, server_random{nullptr, 0};
    gnutls_session_get_random(session, &client_random, &server_random);
    config.keylog(keylog_line(label, {client_random.data, client_random.size}, {secret->data, secret->size}));
}

TlsSession::TlsSession(TlsConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
TlsSession::~TlsSession() = default;
TlsSession::TlsSession(TlsSession&&) noexcept = default;
TlsSession& TlsSession::operator=(TlsSession&&) noexcept = default;

Role TlsSession::role() const { return impl_->config.role; }

void TlsSession::start() {
    if (impl_->started) return;
    impl_->started = true;
    if (impl_->config.role == Role::client) impl_->handshake();
}

void TlsSession::provide(EncryptionLevel level, std::span<const std::uint8_t> bytes) {
    Impl& s = *impl_;
    if (s.error || bytes.empty()) return;  // after a failure nothing is read
    if (!s.started) {
        if (s.config.role == Role::client) {
            s.fail(kInternalError, "", "TLS: CRYPTO data before the client started");
            return;
        }
        s.started = true;
    }
    if (level != s.reading) {  // RFC 9001 §4.1.3
        s.fail(kProtocolViolation, "",
               fmt::format("CRYPTO data at the {} level while reading {}", crypto::to_string(level),
                           crypto::to_string(s.reading)));
        return;
    }
    s.partial.insert(s.partial.end(), bytes.begin(), bytes.end());
    std::size_t at = 0;
    while (!s.error && s.partial.size() - at >= kMessageHeader) {
        const std::uint8_t* h = s.partial.data() + at;
        const std::size_t length = kMessageHeader + (std::size_t{h[1]} << 16 | std::size_t{h[2]} << 8 | h[3]);
        if (length > s.config.max_crypto_buffer) {  // RFC 9000 §7.5
            s.fail(kCryptoBufferExceeded, "",
                   fmt::format("a {}-byte handshake message exceeds the {}-byte CRYPTO buffer", length,
                               s.config.max_crypto_buffer));
            return;
        }
        if (s.partial.size() - at < length) break;
        const EncryptionLevel before = s.reading;
        s.process_message(level, {h, length});
        at += length;
        // RFC 8446 §5.1: a message must not span a key change.
        if (!s.error && s.reading != before && at != s.partial.size())
            s.fail_alert(Alert::unexpected_message,
                         fmt::format("CRYPTO data at the {} level continues past the key change",
                                     crypto::to_string(before)));
    }
    if (!s.error) s.partial.erase(s.partial.begin(), s.partial.begin() + static_cast<std::ptrdiff_t>(at));
}

void TlsSession::on_peer_error(std::uint64_t code) {
    Impl& s = *impl_;
    if (s.error) return;
    std::string name, message;
    const char* peer = s.config.role == Role::client ? "server" : "client";
    if (is_crypto_error(code)) {
        const auto alert = static_cast<std::uint8_t>(code - kCryptoErrorBase);
        name = alert_name(alert);
        if (alert == static_cast<std::uint8_t>(Alert::no_application_protocol))
            message = fmt::format("{} accepts none of the ALPN protocols {} ({})", peer,
                                  s.config.role == Role::client ? "offered" : "accepted", fmt::join(s.config.alpn, ", "));
        else
            message = fmt::format("{} ended the handshake with TLS alert {}", peer, name);
    } else {
        message = fmt::format("{} closed the connection with error {:#x}", peer, code);
    }
    s.fail(code, std::move(name), std::move(message));
    s.error->from_peer = true;
}

std::vector<std::uint8_t> TlsSession::take_output(EncryptionLevel level) {
    return std::exchange(impl_->out[static_cast<std::size_t>(level)], {});
}

bool TlsSession::has_output() const {
    return std::any_of(impl_->out.begin(), impl_->out.end(), [](const auto& o) { return !o.empty(); });
}

std::vector<SecretEvent> TlsSession::take_secrets() { return std::exchange(impl_->secrets, {}); }
std::vector<TlsSession::Ticket> TlsSession::take_tickets() { return std::exchange(impl_->tickets, {}); }
bool TlsSession::resumed() const { return impl_->complete && gnutls_session_is_resumed(impl_->session) != 0; }
bool TlsSession::early_data_accepted() const {
    return impl_->complete && (gnutls_session_get_flags(impl_->session) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
}
bool TlsSession::handshake_complete() const { return impl_->complete; }
const std::optional<TlsError>& TlsSession::error() const { return impl_->error; }
std::optional<CipherSuite> TlsSession::suite() const { return impl_->suite; }
const std::string& TlsSession::alpn() const { return impl_->alpn; }
const std::optional<std::vector<std::uint8_t>>& TlsSession::peer_transport_parameters() const {
    return impl_->peer_params;
}

}  // namespace ndm::tls
