// The flags that tune a tool's connections, in one place for every tool that
// runs them (ndm-send, ndm-recv, ndm-sim, ndm-compare): a tool adds the ones
// it has, where its --help lists them, each bound to its field of one
// ConnectionFlags, and apply() copies what they chose into the connections'
// configuration. Each refuses a bad value as parse_command_line says (one
// line, exit 2).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ndm/connection.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/loss_detection.hpp"
#include "ndm/time.hpp"

namespace ndm::tools {

// The idle timeout (RFC 9000 §10.1) is the only limit on how long a
// connection survives an outage: while the path is dead the sender keeps
// probing (its probe timeout backs off up to ConnectionConfig::max_pto_backoff)
// and the connection ends only when nothing has been heard from the peer for
// this long. Each side advertises its own; the smaller of the two applies.
// The tools' default is iperf3's own receive timeout (--rcv-timeout, 120 s):
// long enough for what kernel TCP rides out in a test (its RTO backs off to
// 120 s and it retries for ~15 min), including a Gilbert–Elliott burst that
// swallows 66 ACKs in a row, which at one ACK per probe period takes 45-60 s
// to cross (tests/test_sim_outage.cpp); a vanished peer still ends a run
// within minutes. The library's own default, for embedding applications,
// stays 30 s (docs/architecture.md, "Bounded PTO backoff").
inline constexpr double kDefaultIdleTimeoutSeconds = 120;
inline constexpr double kMinIdleTimeoutSeconds = 1;
inline constexpr double kMaxIdleTimeoutSeconds = 86400;

struct ConnectionFlags {
    double idle_timeout_s = kDefaultIdleTimeoutSeconds;      // --idle-timeout
    LossDetection loss_detection = LossDetection::adaptive;  // --loss-detection
    std::size_t ack_ranges = 32;                             // --ack-ranges
    // --ack-frequency (ndm-send asks for the extension); ndm-recv sets it
    // before parsing and --no-ack-frequency clears it, so that the extension is
    // in use exactly when the client asks for it (both directions, -R too).
    bool ack_frequency = false;
    std::string receive_budget;         // --receive-budget; empty: EndpointConfig's default
    std::vector<std::string> plugins;   // --cc-plugin
    std::uint32_t version = kProtocolVersion;  // --quic-version (a client's)
};

// --idle-timeout SECONDS (1..86400).
CLI::Option* add_idle_timeout_option(CLI::App& app, ConnectionFlags& flags);
// --loss-detection MODE: which thresholds tell a lost packet from a
// reordered one (ndm/loss_detection.hpp).
CLI::Option* add_loss_detection_option(CLI::App& app, ConnectionFlags& flags);
// --ack-ranges N, for the tools whose side sends ACKs: how many ACK ranges
// each ACK frame carries (ConnectionConfig::max_ack_ranges).
CLI::Option* add_ack_ranges_option(CLI::App& app, ConnectionFlags& flags);
// --ack-frequency / --no-ack-frequency: the ACK frequency extension
// (ConnectionConfig::ack_frequency, draft-ietf-quic-ack-frequency-14).
// ndm-send decides: ndm-recv runs the extension unless told not to.
CLI::Option* add_ack_frequency_flag(CLI::App& app, ConnectionFlags& flags);
CLI::Option* add_no_ack_frequency_flag(CLI::App& app, ConnectionFlags& flags);
// --receive-budget SIZE: EndpointConfig::receive_budget, the flow-control
// credit all of one side's connections share (each gets an equal part as
// its receive window cap). Both ndm-recv (a normal test) and ndm-send (-R)
// receive.
CLI::Option* add_receive_budget_option(CLI::App& app, ConnectionFlags& flags);
// --quic-version 1|2: the QUIC version a client starts with (RFC 9000 or
// RFC 9369); servers answer in either.
CLI::Option* add_quic_version_option(CLI::App& app, ConnectionFlags& flags);
// --cc-plugin FILE.so, the same in every tool that runs a controller.
CLI::Option* add_cc_plugin_option(CLI::App& app, ConnectionFlags& flags);

// The flags both ends of an ndm-send / ndm-recv test have, in this order:
// --loss-detection, --ack-ranges, --ack-frequency and --quic-version (the
// client, which decides) or --no-ack-frequency (the server), --receive-budget,
// --cc-plugin.
enum class TestSide { client, server };
void add_test_connection_flags(CLI::App& app, ConnectionFlags& flags, TestSide side);

// Loads each --cc-plugin (ndm/cc_plugin.hpp) before any controller name is
// checked, so its controllers are named, listed (--list-cc) and run like the
// built-in ones. Throws std::invalid_argument (a bad-input error) naming the
// file and the problem.
void load_cc_plugins(const ConnectionFlags& flags);

inline Duration idle_timeout_duration(double seconds) { return from_seconds(seconds); }

// The idle timeout, loss detection, ACK ranges, ACK frequency and QUIC version the flags chose.
void apply(const ConnectionFlags& flags, ConnectionConfig& cfg);
// The same for the endpoint's connections, and its receive budget (unset: the default stays).
void apply(const ConnectionFlags& flags, EndpointConfig& cfg);

}  // namespace ndm::tools
