// ndm-handshake: a QUIC v1 handshake and nothing else, as `openssl s_client`
// is for TLS over TCP: connect to (or accept from) any QUIC stack, complete the
// TLS 1.3 handshake with the ALPN asked for, print what was negotiated and the
// peer's transport parameters (RFC 9000 §18.2), and close cleanly. It is how
// ndm's interoperability with other stacks is checked (tests/cli/
// ndm_interop_test.sh against ngtcp2's gtlsclient and gtlsserver).
#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/logging.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/tls_flags.hpp"

using namespace ndm;
using json = nlohmann::ordered_json;  // fields in the order RFC 9000 §18.2 lists them

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// HTTP/3's "no error" (RFC 9114 §8.1): the application close code an h3 peer
// expects; other protocols get 0.
constexpr std::uint64_t kH3NoError = 0x100;

std::string hex(const std::vector<std::uint8_t>& bytes) {
    std::string s;
    for (auto b : bytes) s += fmt::format("{:02x}", b);
    return s;
}

json params_json(const TransportParameters& p) {
    json j = {{"max_idle_timeout_ms", p.max_idle_timeout_ms},
              {"max_udp_payload_size", p.max_udp_payload_size},
              {"initial_max_data", p.initial_max_data},
              {"initial_max_stream_data_bidi_local", p.initial_max_stream_data_bidi_local},
              {"initial_max_stream_data_bidi_remote", p.initial_max_stream_data_bidi_remote},
              {"initial_max_stream_data_uni", p.initial_max_stream_data_uni},
              {"initial_max_streams_bidi", p.initial_max_streams_bidi},
              {"initial_max_streams_uni", p.initial_max_streams_uni},
              {"ack_delay_exponent", p.ack_delay_exponent},
              {"max_ack_delay_ms", p.max_ack_delay_ms},
              {"active_connection_id_limit", p.active_connection_id_limit},
              {"disable_active_migration", p.disable_active_migration},
              {"stateless_reset_token", p.stateless_reset_token},
              {"preferred_address", p.preferred_address},
              {"initial_source_connection_id", hex(p.initial_source_connection_id)}};
    if (!p.original_destination_connection_id.empty())
        j["original_destination_connection_id"] = hex(p.original_destination_connection_id);
    if (!p.retry_source_connection_id.empty()) j["retry_source_connection_id"] = hex(p.retry_source_connection_id);
    if (!p.application_params.empty()) j["ndm_application_params_bytes"] = p.application_params.size();
    return j;
}

std::string close_text(const CloseInfo& c) {
    if (!c.application && c.code == kClosePeerUnreachable)  // the Endpoint's local code, not a TLS alert
        return fmt::format("ended: the peer is unreachable ({})", tools::printable(c.reason));
    std::string code = c.application ? fmt::format("application code {:#x}{}", c.code,
                                                   c.code == kH3NoError ? " (H3_NO_ERROR when h3)" : "")
                                     : close_code_name(c.code);
    std::string s = fmt::format("closed by {}: {}", c.by_peer ? "the peer" : "us", code);
    if (!c.reason.empty()) s += " (" + tools::printable(c.reason) + ")";
    return s;
}

bool clean(const CloseInfo& c) { return c.code == 0 || (c.application && c.code == kH3NoError); }

struct Options {
    bool json_out = false;
    double timeout = 5;       // seconds for the handshake, and again for the close
    double linger = 0.2;      // seconds an established connection stays open before we close it
    std::string io = "auto";
    bool no_gso = false;
    std::vector<std::string> alpn{"ndm"};
    std::uint64_t max_streams_uni = 100;
    std::string retry = "auto";  // listen only
};

// One connection's report: the handshake's outcome, then how it closed.
struct Report {
    std::string peer;
    bool established = false;
    std::optional<double> handshake_ms;  // the client's, from its first packet
    HandshakeSummary summary;
    std::optional<CloseInfo> close;
    std::uint64_t peer_streams = 0, peer_stream_bytes = 0;

    [[nodiscard]] bool ok() const { return established && close && clean(*close); }

    // What was negotiated on standard output; a failure (no handshake, a
    // close with an error) in one line on standard error, as every tool
    // reports failures. With -J the document, failed or not ("ok": false),
    // on standard output, as iperf3 -J's.
    void print(bool json_out) const {
        if (json_out) {
            json j = {{"peer", peer}, {"ok", ok()}};
            if (established) {
                if (handshake_ms) j["handshake_ms"] = *handshake_ms;
                j["version"] = fmt::format("{:#010x}", summary.version);
                j["alpn"] = summary.alpn;
                j["cipher_suite"] = summary.cipher_suite;
                j["retry"] = summary.retry;
                j["peer_transport_parameters"] = params_json(summary.peer);
            }
            j["peer_streams"] = {{"opened", peer_streams}, {"bytes", peer_stream_bytes}};
            if (close)
                j["close"] = {{"code", close->code}, {"application", close->application},
                              {"by_peer", close->by_peer}, {"reason", tools::printable(close->reason)}};
            std::cout << j.dump(2) << '\n' << std::flush;
            return;
        }
        if (!established) {
            std::cerr << fmt::format("ndm-handshake: no handshake with {}", peer)
                      << (close ? ": " + close_text(*close) : std::string()) << std::endl;
            return;
        }
        std::cout << fmt::format("ndm-handshake: QUIC v1 handshake with {} complete", peer)
                  << (handshake_ms ? fmt::format(" in {:.1f} ms", *handshake_ms) : "") << '\n'
                  << fmt::format("  alpn           {}\n  cipher suite   {}\n  retry          {}\n", summary.alpn,
                                 summary.cipher_suite, summary.retry ? "yes (address validated by a Retry)" : "no")
                  << "  peer transport parameters:\n";
        const json params = params_json(summary.peer);
        for (const auto& [k, v] : params.items())
            std::cout << fmt::format("    {:<38} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
        std::cout << fmt::format("  peer streams   {} opened, {} bytes read\n", peer_streams, peer_stream_bytes)
                  << std::flush;
        if (close) (ok() ? std::cout : std::cerr) << "ndm-handshake: " << close_text(*close) << std::endl;
    }
};

// What the peer sent on its streams (an HTTP/3 peer opens its control and
// QPACK streams at once): counted, read and dropped.
struct PeerStreams {
    std::map<ConnectionHandle, std::pair<std::uint64_t, std::uint64_t>> seen;  // streams, bytes

    void on_event(Endpoint& ep, ConnectionHandle h, const Event& ev) {
        if (std::holds_alternative<event::StreamOpened>(ev)) ++seen[h].first;
        const auto* r = std::get_if<event::StreamReadable>(&ev);
        Connection* c = r ? ep.connection(h) : nullptr;
        if (!c) return;
        std::uint8_t buf[4096];
        while (const std::size_t n = c->read(r->id, buf)) seen[h].second += n;
    }
    void fill(ConnectionHandle h, Report& r) const;
};

// Closes an established connection the way its protocol expects and waits
// until the endpoint has let it go.
void close_and_wait(Endpoint& ep, ConnectionHandle h, Report& r, Duration timeout) {
    if (Connection* c = ep.connection(h); c && c->state() == ConnectionState::established)
        c->close(r.summary.alpn == "h3" ? kH3NoError : 0, "", steady_now());
    ep.run_until([&] { return ep.find(h) == nullptr || g_stop; }, timeout);
    if (const CloseInfo* info = ep.close_info(h)) r.close = *info;
}

void PeerStreams::fill(ConnectionHandle h, Report& r) const {
    if (auto it = seen.find(h); it != seen.end()) std::tie(r.peer_streams, r.peer_stream_bytes) = it->second;
}

EndpointConfig endpoint_config(const Options& o, TlsOptions tls) {
    EndpointConfig cfg;
    cfg.backend = parse_io_backend(o.io);
    cfg.gso = cfg.gro = !o.no_gso;
    tls.alpn = o.alpn;
    cfg.connection.tls = std::move(tls);
    cfg.connection.initial_max_streams_uni = o.max_streams_uni;
    cfg.connection.handshake_timeout = from_seconds(o.timeout);
    cfg.connection.idle_timeout = from_seconds(std::max(o.timeout, 2 * o.linger) + 1);
    return cfg;
}

int run_client(const Options& o, const std::string& host, std::uint16_t port, const tools::ClientTlsFlags& flags) {
    EndpointConfig cfg = endpoint_config(o, tools::client_tls(flags));
    Endpoint ep(cfg);
    Report r;
    r.peer = fmt::format("{}:{}", host, port);
    PeerStreams streams;
    ep.on_event([&](ConnectionHandle c, const Event& ev) { streams.on_event(ep, c, ev); });
    const Instant start = steady_now();
    const ConnectionHandle h = ep.connect(host, port);
    ep.run_until([&] {
        const Connection* c = ep.find(h);
        return c == nullptr || c->state() != ConnectionState::handshaking || g_stop;
    }, from_seconds(o.timeout) + std::chrono::milliseconds(100));
    if (const Connection* c = ep.find(h); c && c->is_established()) {
        r.established = true;
        r.handshake_ms = to_seconds(steady_now() - start) * 1e3;
        r.summary = c->handshake_summary();
        // Let the peer's post-handshake frames (HANDSHAKE_DONE, NEW_TOKEN, its
        // first streams) arrive before closing, as a short session would.
        ep.run_until([&] { return ep.find(h) == nullptr || !ep.find(h)->is_established(); }, from_seconds(o.linger));
    }
    close_and_wait(ep, h, r, from_seconds(o.timeout));
    streams.fill(h, r);
    if (!r.close && !r.established)
        r.close = CloseInfo{static_cast<std::uint64_t>(CloseCode::handshake_timeout), "no answer", false, false};
    r.print(o.json_out);
    return r.ok() ? 0 : 1;
}

int run_server(const Options& o, const std::string& bind, std::uint16_t port, const tools::ServerTlsFlags& flags,
               int count) {
    const tools::ServerTls tls = tools::server_tls(flags, bind);
    EndpointConfig cfg = endpoint_config(o, tls.options);
    cfg.bind_address = bind;
    cfg.port = port;
    cfg.accept_connections = true;
    cfg.retry = parse_retry_policy(o.retry);
    Endpoint ep(cfg);
    std::cerr << fmt::format("ndm-handshake: listening on {} (UDP), ALPN {}, Retry {}\n", ep.local_address(),
                             fmt::format("{}", fmt::join(o.alpn, ",")), to_string(cfg.retry));
    if (!tls.self_signed_note.empty()) std::cerr << tls.self_signed_note << '\n';
    int served = 0, failures = 0;
    std::set<ConnectionHandle> established;
    std::vector<ConnectionHandle> failed;  // closed before their handshake completed
    PeerStreams streams;
    ep.on_event([&](ConnectionHandle h, const Event& ev) {
        streams.on_event(ep, h, ev);
        if (std::holds_alternative<event::Established>(ev)) established.insert(h);
        else if (std::holds_alternative<event::Closed>(ev) && !established.count(h)) failed.push_back(h);
    });
    while (!g_stop && (count == 0 || served < count)) {
        ep.run_once(steady_now() + std::chrono::milliseconds(100));
        for (ConnectionHandle h : failed) {
            Report r;
            r.peer = fmt::format("client #{}", h);
            if (const CloseInfo* info = ep.close_info(h)) r.close = *info;
            r.print(o.json_out);
            ++served, ++failures;
        }
        failed.clear();
        while (const auto h = ep.next_accepted()) {
            Report r;
            r.peer = fmt::format("client #{}", *h);
            if (const Connection* c = ep.find(*h)) {
                r.summary = c->handshake_summary();
                r.established = true;
            }
            // The peer may close first (gtlsclient does once it is done); else we do.
            ep.run_until([&] { return ep.find(*h) == nullptr || !ep.find(*h)->is_established() || g_stop; },
                         from_seconds(o.linger));
            close_and_wait(ep, *h, r, from_seconds(o.timeout));
            streams.fill(*h, r);
            r.print(o.json_out);
            ++served;
            if (!r.ok()) ++failures;
        }
    }
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    tools::log_to_stderr();
    Options o;
    CLI::App app{
        "ndm-handshake: a QUIC v1 handshake with any QUIC stack, and a clean close. Prints the ALPN and cipher\n"
        "suite negotiated and the peer's transport parameters (RFC 9000 §18.2) on standard output; exits 0 when\n"
        "the handshake completed and the connection closed without error, else 1 with the failure in one line\n"
        "on standard error (with -J the document, \"ok\": false, stays on standard output); 2 for bad input.\n"
        "Examples:\n"
        "  ndm-handshake connect 127.0.0.1 4433 --alpn h3 --insecure      (against e.g. ngtcp2's gtlsserver)\n"
        "  ndm-handshake listen -p 4433 --alpn h3 --cert c.pem --key k.pem (for e.g. gtlsclient)",
        "ndm-handshake"};
    app.require_subcommand(1);
    app.fallthrough();  // --alpn and the other shared options may follow the subcommand too
    app.add_flag("-J,--json", o.json_out, "print one JSON document per connection instead of text");
    app.add_option("--alpn", o.alpn, "application protocols to offer or accept, in preference order (h3, ndm, ...)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--timeout", o.timeout, "seconds the handshake, and then the close, may take")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0.1, 3600, "seconds"));
    app.add_option("--linger", o.linger,
                   "seconds an established connection stays open before ndm closes it (unless the peer closes "
                   "first)")
        ->capture_default_str()
        ->check(ndm::tools::number_in(0, 3600, "seconds"));
    app.add_option("--max-streams-uni", o.max_streams_uni,
                   "unidirectional streams the peer may open (HTTP/3 peers insist on at least 3: control and "
                   "QPACK streams); their data is read and discarded")
        ->capture_default_str();
    app.add_option("--io", o.io, "socket backend: auto, uring or epoll")->capture_default_str();
    tools::add_no_gso_flag(app, o.no_gso);

    auto* connect = app.add_subcommand("connect", "connect to a QUIC server");
    std::string host;
    std::uint16_t port = 4433;
    connect->add_option("host", host,
                        "server: a host name (the first address the resolver gives; one that does not resolve "
                        "exits 1) or a numeric IPv4/IPv6 address")
        ->required();
    connect->add_option("port", port, "server UDP port (1..65535)")->required()->check(tools::port_number(false));
    tools::ClientTlsFlags client_flags;
    tools::add_client_tls_flags(*connect, client_flags);

    auto* listen = app.add_subcommand("listen", "accept QUIC connections");
    std::string bind = "::";
    std::uint16_t listen_port = 4433;
    int count = 1;
    listen->add_option("-p,--port", listen_port, "UDP port to listen on (0..65535; 0: any free port)")
        ->capture_default_str()
        ->check(tools::port_number(true));
    listen->add_option("-B,--bind", bind, "numeric address to bind (\"::\" = dual-stack)")->capture_default_str();
    listen->add_option("-n,--count", count, "connections to serve before exiting (0: until Ctrl-C; at most 1000000)")
        ->capture_default_str()
        ->check(ndm::tools::integer_in(0, 1000000));
    tools::ServerTlsFlags server_flags;
    tools::add_server_tls_flags(*listen, server_flags);
    tools::add_retry_option(*listen, o.retry);
    tools::add_version_flag(app, "ndm-handshake");
    if (const auto rc = tools::parse_command_line(app, argc, argv, "ndm-handshake")) return *rc;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    try {
        if (*connect) {
            check_host(host, "host");
            return run_client(o, host, port, client_flags);
        }
        check_numeric_address(bind, "--bind");
        return run_server(o, bind, listen_port, server_flags, count);
    } catch (const std::exception& e) {  // bad input: 2; network: 1
        return tools::report_failure("ndm-handshake", e);
    }
}
