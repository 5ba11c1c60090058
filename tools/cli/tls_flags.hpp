// The tools' TLS flags, shared by ndm-recv (--cert/--key, or a self-signed
// certificate whose fingerprint it prints) and ndm-send (--ca, --pin,
// --insecure, --server-name), and what inspecting a test with Wireshark
// takes: SSLKEYLOGFILE, which both honour, and --no-gso (docs/tls.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ndm/tls.hpp"

namespace ndm::tools {

struct ServerTlsFlags {
    std::string cert, key;  // PEM files; both or neither
    std::vector<std::string> ciphers;  // --cipher
    bool early_data = false;           // --early-data, where the tool offers it
};
void add_server_tls_flags(CLI::App& app, ServerTlsFlags& flags);
// --early-data: accept 0-RTT from resuming clients (TlsOptions::early_data).
void add_early_data_flag(CLI::App& app, ServerTlsFlags& flags);

struct ServerTls {
    TlsOptions options;
    // Set when the certificate was made here: the line that tells a person
    // how a client can trust it ("... fingerprint <hex>; ndm-send --pin <hex>").
    std::string self_signed_note;
};
// Adds --cert, --key and --cipher.
// The server sends a session ticket after each handshake (TlsOptions::
// session_tickets), so that clients can resume; it accepts 0-RTT with --early-data.
// Loads --cert/--key, or makes a self-signed certificate for localhost, the
// loopback addresses, this host's name and `bind` (unless a wildcard); adds
// SSLKEYLOGFILE. Throws (tls::CredentialError, tls::KeylogError,
// std::invalid_argument) with a one-line message naming the problem.
ServerTls server_tls(const ServerTlsFlags& flags, const std::string& bind);

struct ClientTlsFlags {
    std::string ca, pin, server_name;
    bool insecure = false;
    std::vector<std::string> ciphers;  // --cipher
};
void add_client_tls_flags(CLI::App& app, ClientTlsFlags& flags);
// The trust the flags ask for (the system store when none), the server name
// and SSLKEYLOGFILE; throws with a one-line message (a bad --pin, an
// unreadable --ca).
TlsOptions client_tls(const ClientTlsFlags& flags);

// For a server and a client in one process: experiment::loopback_tls(),
// with SSLKEYLOGFILE's sink.
TlsOptions in_process_tls();

// --cipher LIST: the TLS 1.3 cipher suites allowed, in preference order
// (TlsOptions::cipher_suites: aes128-gcm, aes256-gcm, chacha20).
void add_cipher_flag(CLI::App& app, std::vector<std::string>& suites);

// --no-gso: one datagram per system call, no UDP GSO/GRO, so that a packet
// capture on loopback (tcpdump, Wireshark) sees each datagram on its own.
void add_no_gso_flag(CLI::App& app, bool& no_gso);

// --no-ecn: this side sends every datagram not-ECT (ConnectionConfig::ecn
// off); what it receives is still counted and reported (RFC 9000 §13.4.1).
void add_no_ecn_flag(CLI::App& app, bool& no_ecn);

// --retry auto|always|never: when a server answers a client's first
// Initial with a Retry (EndpointConfig::retry, RFC 9000 §8.1.2).
void add_retry_option(CLI::App& app, std::string& retry);

// SSLKEYLOGFILE's sink when the variable names a file, else an empty one.
tls::KeylogSink keylog_from_environment();

}  // namespace ndm::tools
