// ndm-emu: the network emulator as a command (issue 4).
//   ndm-emu relay --listen ADDR:PORT --to ADDR:PORT --profile P
// forwards UDP both ways through the emulator (src/emu), so any UDP program
// can be measured under the same conditions as ndm. A plain ppoll() loop with
// CLOCK_MONOTONIC timestamps drives the same model the simulator uses.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ndm/emu.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

[[noreturn]] void die(const std::string& msg) { throw std::runtime_error(msg); }

ndm::Instant monotonic_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ndm::Instant{ndm::Duration{static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec}};
}

// "ADDR:PORT", "[v6]:PORT" or ":PORT" (any address).
sockaddr_storage resolve(const std::string& what, const std::string& text, bool passive, socklen_t& len) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon + 1 == text.size())
        die(what + ": '" + text + "' is not ADDR:PORT");
    std::string host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0)
        die(what + ": cannot resolve '" + text + "': " + gai_strerror(rc));
    sockaddr_storage out{};
    std::memcpy(&out, res->ai_addr, res->ai_addrlen);
    len = res->ai_addrlen;
    freeaddrinfo(res);
    return out;
}

int udp_socket(int family, const std::string& what) {
    const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die(what + ": socket: " + std::strerror(errno));
    const int buf = 8 << 20;  // absorb bursts: the emulator, not the kernel, decides what is dropped
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    return fd;
}

struct RelayOptions {
    std::string listen, to, profile = "none";
    std::uint64_t seed = 1;
    double stats_interval = 0;
};

void print_stats(const ndm::emu::EmulatedLink& up, const ndm::emu::EmulatedLink& down) {
    std::cerr << "up (client -> server):\n" << ndm::emu::format_stats(up.emu_stats()) << "\n"
              << "down (server -> client):\n" << ndm::emu::format_stats(down.emu_stats()) << "\n";
}

int relay(const RelayOptions& o) {
    const ndm::emu::Profile profile = ndm::emu::parse_profile(o.profile);
    socklen_t listen_len = 0, to_len = 0;
    const sockaddr_storage listen_addr = resolve("--listen", o.listen, true, listen_len);
    const sockaddr_storage to_addr = resolve("--to", o.to, false, to_len);

    const int lfd = udp_socket(listen_addr.ss_family, "--listen");
    if (bind(lfd, reinterpret_cast<const sockaddr*>(&listen_addr), listen_len) != 0)
        die("--listen: cannot bind " + o.listen + ": " + std::strerror(errno));
    const int ufd = udp_socket(to_addr.ss_family, "--to");
    if (connect(ufd, reinterpret_cast<const sockaddr*>(&to_addr), to_len) != 0)
        die("--to: cannot connect to " + o.to + ": " + std::strerror(errno));

    auto up = ndm::emu::make_link(profile, ndm::emu::Direction::up, o.seed);
    auto down = ndm::emu::make_link(profile, ndm::emu::Direction::down, o.seed);
    std::cerr << "ndm-emu relay: " << o.listen << " <-> " << o.to << ", profile " << profile.name << "\n  up:   "
              << ndm::emu::describe(profile.up) << "\n  down: " << ndm::emu::describe(profile.down) << "\n";

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    sockaddr_storage client{};
    socklen_t client_len = 0;  // the latest sender on --listen gets the replies
    std::vector<std::uint8_t> buf(65536), out;
    std::uint64_t send_errors = 0;
    const ndm::Duration stats_every = ndm::from_seconds(o.stats_interval);
    ndm::Instant next_stats = o.stats_interval > 0 ? monotonic_now() + stats_every : ndm::kNever;

    while (!g_stop) {
        ndm::Instant now = monotonic_now();
        // A failed send (full socket, server not up yet) drops the datagram, like a router would.
        while (up->next_delivery() <= now)
            if (up->deliver(now, out) && send(ufd, out.data(), out.size(), 0) < 0) ++send_errors;
        while (down->next_delivery() <= now)
            if (down->deliver(now, out) &&
                (client_len == 0 ||
                 sendto(lfd, out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&client), client_len) < 0))
                ++send_errors;
        if (now >= next_stats) {
            print_stats(*up, *down);
            next_stats = now + stats_every;
        }
        const ndm::Instant wake = std::min({up->next_delivery(), down->next_delivery(), next_stats});
        timespec ts{};
        timespec* timeout = nullptr;
        if (wake != ndm::kNever) {
            const auto ns = std::max<std::int64_t>(0, (wake - now).count());
            ts.tv_sec = ns / 1'000'000'000;
            ts.tv_nsec = ns % 1'000'000'000;
            timeout = &ts;
        }
        pollfd fds[2] = {{lfd, POLLIN, 0}, {ufd, POLLIN, 0}};
        if (ppoll(fds, 2, timeout, nullptr) < 0) {
            if (errno == EINTR) continue;
            die(std::string("ppoll: ") + std::strerror(errno));
        }
        if (fds[0].revents & POLLIN) {
            for (;;) {
                sockaddr_storage from{};
                socklen_t from_len = sizeof from;
                const ssize_t n = recvfrom(lfd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
                if (n < 0) break;
                client = from;
                client_len = from_len;
                up->send({buf.data(), static_cast<std::size_t>(n)}, monotonic_now());
            }
        }
        if (fds[1].revents & POLLIN) {
            for (;;) {
                const ssize_t n = recv(ufd, buf.data(), buf.size(), 0);
                if (n < 0) break;  // EAGAIN, or ECONNREFUSED while the server is not up yet
                down->send({buf.data(), static_cast<std::size_t>(n)}, monotonic_now());
            }
        }
    }
    print_stats(*up, *down);
    std::cerr << "datagrams the relay could not send on: " << send_errors << "\n";
    close(lfd);
    close(ufd);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "ndm-emu: the ndm network emulator (delay, jitter, loss, rate, queues, Mahimahi traces).\n"
        "Profiles: a preset name (see `ndm-emu presets`), optionally with overrides\n"
        "(`urban-lte,loss=1%`), a key=value list (`delay=50ms,jitter=20ms,loss=5%,rate=20mbit,queue=100pkt`;\n"
        "prefix a key with up. or down. for one direction), or a .json file with the same keys."};
    app.require_subcommand(1);

    RelayOptions ro;
    auto* relay_cmd = app.add_subcommand(
        "relay",
        "Forward UDP both ways through the emulator: datagrams arriving on --listen go to --to through the\n"
        "'up' direction; replies from --to go back to the latest sender through 'down'. Ctrl-C prints statistics.");
    relay_cmd->add_option("--listen", ro.listen, "local ADDR:PORT that clients send to (e.g. 127.0.0.1:9000)")->required();
    relay_cmd->add_option("--to", ro.to, "server ADDR:PORT to forward to (e.g. 127.0.0.1:9001)")->required();
    relay_cmd->add_option("--profile", ro.profile, "emulator profile (default: none)");
    relay_cmd->add_option("--seed", ro.seed, "random seed; the same seed repeats the same decisions for the same traffic");
    relay_cmd->add_option("--stats-interval", ro.stats_interval, "print statistics every S seconds (0 = only at exit)")
        ->check(CLI::NonNegativeNumber);

    auto* presets_cmd = app.add_subcommand("presets", "List the named profiles and what they model");
    std::string describe_profile;
    auto* describe_cmd = app.add_subcommand("describe", "Parse a profile and print both directions");
    describe_cmd->add_option("profile", describe_profile, "profile to parse")->required();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return ndm::tools::exit_on_parse_error(app, e, "ndm-emu");
    }
    try {
        if (relay_cmd->parsed()) return relay(ro);
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
    } catch (const std::exception& e) {
        std::cerr << "ndm-emu: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
