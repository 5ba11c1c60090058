// ndm-emu: the network emulator as a command (docs/emulator.md).
//   ndm-emu relay --listen HOST:PORT --to HOST:PORT --profile P
// forwards UDP both ways through the emulator (src/emu), so any UDP program
// can be measured under the same conditions as ndm (tools/emu/relay).
//   ndm-emu shell --profile P [--seed N] [--quiet] -- CMD [ARGS...]
// runs CMD in a network namespace whose traffic crosses the emulator through
// TUN devices, like Mahimahi's shells (tools/emu/netns_shell).
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/emu.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/logging.hpp"
#include "tools/emu/netns_shell.hpp"
#include "tools/emu/relay.hpp"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

struct RelayOptions {
    std::string listen, to, profile = "none";
    std::uint64_t seed = 1;
    double stats_interval = 0;
    bool no_gso = false;
    std::vector<std::uint64_t> drop_up, drop_down;
    std::string rebind;  // DUR[@START]
};

// --rebind DUR[@START]: durations as a profile's outage=DUR@START reads them
// (src/emu/profile.cpp); START defaults to DUR.
void parse_rebind(const std::string& text, ndm::Duration& every, ndm::Duration& start) {
    const auto at = text.find('@');
    const std::string dur = text.substr(0, at), from = at == std::string::npos ? dur : text.substr(at + 1);
    try {
        const auto p = ndm::emu::parse_profile("outage=" + dur + "@" + from);
        every = p.up.outages.at(0).duration;
        start = p.up.outages.at(0).start;
    } catch (const std::exception&) {
        throw std::invalid_argument("--rebind: '" + text +
                                    "' is not DUR[@START] (e.g. 2s, or 2s@500ms: every 2 s from 0.5 s in; DUR > 0)");
    }
}

int relay(const RelayOptions& o) {
    const ndm::emu::Profile profile = ndm::emu::parse_profile(o.profile);
    ndm::Duration every{0}, start{0};
    if (!o.rebind.empty()) parse_rebind(o.rebind, every, start);
    ndm::tools::EmuRelay relay(o.listen, o.to, profile, o.seed);
    if (o.no_gso) relay.disable_gso();
    relay.set_drop_list(ndm::emu::Direction::up, o.drop_up);
    relay.set_drop_list(ndm::emu::Direction::down, o.drop_down);
    relay.set_rebind(every, start);
    std::cerr << "ndm-emu relay: " << o.listen << " <-> " << o.to << ", profile " << profile.name << "\n  up:   "
              << ndm::emu::describe(profile.up) << "\n  down: " << ndm::emu::describe(profile.down) << std::endl;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    relay.run(g_stop, ndm::from_seconds(o.stats_interval), &std::cerr);
    relay.print_stats(std::cerr);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ndm::tools::log_to_stderr();
    CLI::App app{
        "ndm-emu: the ndm network emulator (delay, jitter, loss, rate, queues, Mahimahi traces).\n"
        "Profiles: a preset name (see `ndm-emu presets`), optionally with overrides\n"
        "(`urban-lte,loss=1%`), a key=value list (`delay=50ms,jitter=20ms,loss=5%,rate=20mbit,queue=100pkt`;\n"
        "prefix a key with up. or down. for one direction; outage=DUR@START adds a blackhole phase, e.g.\n"
        "outage=10s@5s), or a .json file with the same keys (docs/emulator.md lists them all)."};
    app.require_subcommand(1);

    RelayOptions ro;
    auto* relay_cmd = app.add_subcommand(
        "relay",
        "Forward UDP both ways through the emulator: datagrams arriving on --listen go to --to through the\n"
        "'up' direction; replies from --to go back through 'down' to the client that caused them (each\n"
        "client gets its own upstream socket; all share one emulated path). Ctrl-C prints statistics.");
    relay_cmd
        ->add_option("--listen", ro.listen,
                     "local HOST:PORT that clients send to (e.g. 127.0.0.1:9000; [::1]:9000; :9000 for any address; "
                     "port 0: any free port)")
        ->required();
    relay_cmd
        ->add_option("--to", ro.to,
                     "server HOST:PORT to forward to (e.g. 127.0.0.1:9001 or localhost:9001; port 1..65535); a host "
                     "name is looked up once, its first address used; one that does not resolve exits 1")
        ->required();
    relay_cmd->add_option("--profile", ro.profile, "emulator profile (default: none)");
    relay_cmd->add_option("--seed", ro.seed, "random seed; the same seed repeats the same decisions for the same traffic");
    relay_cmd
        ->add_option("--stats-interval", ro.stats_interval,
                     "print statistics every S seconds (0 = only at exit; at most 86400)")
        ->check(ndm::tools::number_in(0, 86400, "seconds"));
    relay_cmd->add_flag("--no-gso", ro.no_gso,
                        "send every datagram on its own, never as a UDP GSO super-datagram: a capture on loopback "
                        "(tcpdump, tshark) then shows one datagram per packet, which Wireshark's QUIC dissector needs");
    relay_cmd
        ->add_option("--drop-up", ro.drop_up,
                     "drop the client's datagrams with these numbers (1 = the first to arrive, comma-separated, "
                     "e.g. 2,3,4,5,6,7 as the QUIC Interop Runner's amplificationlimit case), before the emulator")
        ->delimiter(',')
        ->check(ndm::tools::integer_in(1, 1'000'000'000));
    relay_cmd
        ->add_option("--drop-down", ro.drop_down, "the same for the server's datagrams, numbered as they arrive")
        ->delimiter(',')
        ->check(ndm::tools::integer_in(1, 1'000'000'000));
    relay_cmd->add_option(
        "--rebind", ro.rebind,
        "DUR[@START]: a NAT rebinding at START (default DUR) and every DUR after: each client's upstream\n"
        "socket is replaced, so the server sees a new source port (RFC 9000 §9.3); what it still sends to the\n"
        "old port is dropped, as by a NAT (no ICMP error). Durations as in a profile: 2s, 500ms");

    std::string shell_profile = "none";
    ndm::tools::ShellOptions so;
    auto* shell_cmd = app.add_subcommand(
        "shell",
        "Run CMD in a new network namespace whose only route crosses the emulator (TUN devices on both\n"
        "sides, a private /30): uplink = packets leaving the shell, downlink = entering it. CMD reaches the\n"
        "host at $NDM_EMU_HOST_ADDR; the shell's own address is $NDM_EMU_SHELL_ADDR. Exits with CMD's status;\n"
        "everything is removed on exit or Ctrl-C. Needs root (CAP_NET_ADMIN).");
    shell_cmd->add_option("--profile", shell_profile, "emulator profile (default: none)");
    shell_cmd->add_option("--seed", so.seed, "random seed (uplink and downlink draw independent streams from it)");
    shell_cmd->add_flag("--quiet", so.quiet, "print no banner and no statistics");
    shell_cmd->add_option("command", so.command, "CMD [ARGS...] to run inside (put it after --)")->required();

    auto* presets_cmd = app.add_subcommand("presets", "List the named profiles and what they model");
    std::string describe_profile;
    auto* describe_cmd = app.add_subcommand("describe", "Parse a profile and print both directions");
    describe_cmd->add_option("profile", describe_profile, "profile to parse")->required();
    ndm::tools::add_version_flag(app, "ndm-emu");
    if (const auto rc = ndm::tools::parse_command_line(app, argc, argv, "ndm-emu")) return *rc;
    try {
        if (relay_cmd->parsed()) return relay(ro);
        if (shell_cmd->parsed()) {
            so.profile = ndm::emu::parse_profile(shell_profile);  // bad profiles fail before the privilege check
            if (const std::string why = ndm::tools::shell_privilege_problem(); !why.empty()) {
                std::cerr << "ndm-emu shell: needs root (CAP_NET_ADMIN) to create a network namespace and TUN devices ("
                          << why << ")\n";
                return 1;
            }
            try {
                return ndm::tools::run_shell(so, std::cerr);
            } catch (const std::runtime_error& e) {  // its messages already say "ndm-emu shell: "
                std::cerr << e.what() << "\n";
                return 1;
            }
        }
        if (presets_cmd->parsed()) {
            for (const auto& p : ndm::emu::presets())
                std::cout << p.name << "\n  " << p.description << "\n  " << (p.spec.empty() ? "(no impairment)" : p.spec)
                          << "\n";
            return 0;
        }
        if (describe_cmd->parsed()) {
            const auto p = ndm::emu::parse_profile(describe_profile);
            std::cout << "up:   " << ndm::emu::describe(p.up) << "\ndown: " << ndm::emu::describe(p.down) << "\n";
            return 0;
        }
    } catch (const std::exception& e) {  // a bad profile or address: 2; sockets, I/O: 1
        return ndm::tools::report_failure("ndm-emu", e);
    }
    return 0;
}
