// The mechanics behind `ndm-emu shell` (Mahimahi's mm-link/mm-delay model; a
// substitute for tc netem where the kernel has no sch_netem): a network
// namespace whose only route leads through a TUN device, a second TUN device
// on the host side, a private /30 between them, IP packets relayed between
// the two TUN fds through the emulator (uplink = leaving the namespace,
// downlink = entering it), and a command run inside the namespace.
//
// Everything created here is torn down on every way out: the command's exit,
// Ctrl-C/SIGTERM/SIGHUP, a setup error. TUN devices are non-persistent, so
// they vanish with their fds even if this process is killed outright; the
// named namespace (`ip netns`) is deleted explicitly. Killed outright
// (SIGKILL), ndm-emu takes the command with it (PR_SET_PDEATHSIG), and the
// next shell to start deletes the namespace it left (named ndm-emu-PID, PID
// no longer running) after killing whatever still runs inside.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "ndm/emu.hpp"

namespace ndm::tools {

struct ShellOptions {
    emu::Profile profile;
    std::uint64_t seed = 1;
    bool quiet = false;
    std::vector<std::string> command;  // argv, run with execvp
};

// Empty when this process may create namespaces and TUN devices, else why
// not (missing CAP_NET_ADMIN/CAP_SYS_ADMIN, no /dev/net/tun).
std::string shell_privilege_problem();

// Sets everything up, runs the command, relays until it exits (SIGTERM or
// SIGHUP to us: SIGTERM to the command, SIGKILL after 3 s; a SIGINT sent to
// us alone is passed on; a terminal's Ctrl-C reaches the command directly,
// as it shares our process group), prints statistics to
// `err` unless quiet, tears down. Returns the command's exit status
// (128 + signal number if it was killed; 127 if it could not be started).
// Throws std::runtime_error with one line on setup failures (after cleanup).
int run_shell(const ShellOptions& options, std::ostream& err);

}  // namespace ndm::tools
