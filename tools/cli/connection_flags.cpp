#include "tools/cli/connection_flags.hpp"

#include <cstdint>

#include "tools/cli/command_line.hpp"
#include "tools/cli/units.hpp"
#include "ndm/cc_plugin.hpp"

namespace ndm::tools {

namespace {

// An option whose value its validator checks, shown as `type_name` in --help
// (none: CLI11's) with its default when `show_default`.
template <typename T>
CLI::Option* add_checked(CLI::App& app, const std::string& name, T& value, const std::string& help,
                         const CLI::Validator& validator, const std::string& type_name = {}, bool show_default = true) {
    CLI::Option* opt = app.add_option(name, value, help);
    if (!type_name.empty()) opt->type_name(type_name);
    if (show_default) opt->capture_default_str();
    return opt->check(validator);
}

}  // namespace

CLI::Option* add_idle_timeout_option(CLI::App& app, ConnectionFlags& flags) {
    return add_checked(app, "--idle-timeout", flags.idle_timeout_s,
                       "seconds without any packet from the peer before a connection is given up (1..86400); the "
                       "smaller of both sides' values applies, and probes continue until then, so outages shorter "
                       "than this are survived",
                       number_in(kMinIdleTimeoutSeconds, kMaxIdleTimeoutSeconds, "seconds"));
}

CLI::Option* add_loss_detection_option(CLI::App& app, ConnectionFlags& flags) {
    return app
        .add_option_function<std::string>(
            "--loss-detection",
            [&flags](const std::string& s) {
                if (auto m = parse_loss_detection(s)) flags.loss_detection = *m;
            },
            "how the sender tells loss from reordering: adaptive = RFC 9002's thresholds, widened when a loss "
            "proves spurious (default); rfc9002 = its fixed 3 packets and 9/8 RTT; rack = RFC 8985's reordering "
            "window as Linux TCP uses it (for comparisons with kernel TCP on reordering paths)")
        ->type_name("MODE")
        ->check(one_of({"adaptive", "rfc9002", "rack"}));
}

CLI::Option* add_ack_ranges_option(CLI::App& app, ConnectionFlags& flags) {
    return add_checked(app, "--ack-ranges", flags.ack_ranges,
                       "ACK ranges per ACK frame this side sends when it receives (1..32, default 32, which reports "
                       "a loss burst in one ACK); 3 or 4 gives the sender the loss signal TCP's SACK option carries, "
                       "for comparisons with kernel TCP",
                       integer_in(1, 32), "N");
}

CLI::Option* add_ack_frequency_flag(CLI::App& app, ConnectionFlags& flags) {
    return app.add_flag("--ack-frequency", flags.ack_frequency,
                        "the data sender asks the receiver for one ACK per cwnd/8 packets (at most 32) instead of "
                        "one per 2 (draft-ietf-quic-ack-frequency); losses are still reported at once. Far fewer "
                        "ACKs to send and process at high rates and with many connections (-P); ACK clocking no "
                        "longer as RFC 9000 and kernel TCP have it (default: off)");
}

CLI::Option* add_no_ack_frequency_flag(CLI::App& app, ConnectionFlags& flags) {
    return app.add_flag_callback(
        "--no-ack-frequency", [&flags] { flags.ack_frequency = false; },
        "do not take part in the ACK frequency extension that a client's --ack-frequency asks for "
        "(draft-ietf-quic-ack-frequency): acknowledge every second packet as RFC 9000 has it");
}

CLI::Option* add_receive_budget_option(CLI::App& app, ConnectionFlags& flags) {
    return add_checked(app, "--receive-budget", flags.receive_budget,
                       "flow-control credit this side's connections share (K/M/G binary; 0 = no budget): each "
                       "connection's receive window, -w's included, is capped at an equal part, never below 64K. "
                       "Bounds what peers can make this side buffer, and keeps many connections (-P) from together "
                       "overrunning the socket's receive buffer, which also caps it (default: 64M)",
                       size_in(0, std::uint64_t{1} << 40), {}, false);
}

CLI::Option* add_quic_version_option(CLI::App& app, ConnectionFlags& flags) {
    return app
        .add_option_function<std::string>(
            "--quic-version",
            [&flags](const std::string& s) { flags.version = s == "2" ? kQuicVersion2 : kQuicVersion1; },
            "the QUIC version this client starts with: 1 (RFC 9000, default) or 2 (RFC 9369, same protocol, "
            "other wire image); an ndm server answers either. A server that speaks only version 1 answers 2 with "
            "Version Negotiation, and the run fails naming the versions it offers")
        ->type_name("1|2")
        ->check(one_of({"1", "2"}));
}

CLI::Option* add_cc_plugin_option(CLI::App& app, ConnectionFlags& flags) {
    return app
        .add_option("--cc-plugin", flags.plugins,
                    "load congestion controllers from a plugin (a shared object built against ndm's headers, "
                    "ndm/cc_plugin.hpp); repeatable")
        ->type_name("FILE.so");
}

void add_test_connection_flags(CLI::App& app, ConnectionFlags& flags, TestSide side) {
    add_loss_detection_option(app, flags);
    add_ack_ranges_option(app, flags);
    if (side == TestSide::client) {
        add_ack_frequency_flag(app, flags);
        add_quic_version_option(app, flags);
    } else
        add_no_ack_frequency_flag(app, flags);
    add_receive_budget_option(app, flags);
    // Both ends: the server checks the client's controller name, and in -R runs it.
    add_cc_plugin_option(app, flags);
}

void load_cc_plugins(const ConnectionFlags& flags) {
    for (const std::string& p : flags.plugins) (void)cc::load_plugin(p);
}

void apply(const ConnectionFlags& flags, ConnectionConfig& cfg) {
    cfg.idle_timeout = idle_timeout_duration(flags.idle_timeout_s);
    cfg.loss_detection = flags.loss_detection;
    cfg.max_ack_ranges = flags.ack_ranges;
    cfg.ack_frequency = flags.ack_frequency;
    cfg.version = flags.version;
}

void apply(const ConnectionFlags& flags, EndpointConfig& cfg) {
    apply(flags, cfg.connection);
    if (!flags.receive_budget.empty()) cfg.receive_budget = parse_size(flags.receive_budget);
}

}  // namespace ndm::tools
