#include "tools/emu/netns_shell.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string_view>

#include <spdlog/spdlog.h>

#include "tools/emu/relay.hpp"  // monotonic_now

extern char** environ;

namespace ndm::tools {

namespace {

[[noreturn]] void die(const std::string& msg) { throw std::runtime_error(msg); }

std::string errno_text(int e) { return std::strerror(e); }

int g_spawn_error = 0;  // errno of the last failed posix_spawnp of ip

// Runs `ip ARGS...` (iproute2) with an argv, no shell; true on exit status 0.
// Quiet calls send ip's stderr to /dev/null (optional settings).
bool run_ip(const std::vector<std::string>& args, bool quiet = false) {
    g_spawn_error = 0;
    std::vector<std::string> full{"ip"};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (quiet) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, "ip", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        g_spawn_error = rc;
        return false;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void must_ip(const std::vector<std::string>& args) {
    if (run_ip(args)) return;
    if (g_spawn_error) die("ndm-emu shell: cannot run ip (iproute2): " + errno_text(g_spawn_error));
    std::string cmd = "ip";
    for (const auto& a : args) cmd += " " + a;
    die("ndm-emu shell: `" + cmd + "` failed");
}

// A non-persistent TUN device (IFF_NO_PI: the fd carries bare IP packets) in
// the calling thread's current network namespace. It disappears with the fd.
int open_tun(const std::string& name) {
    const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("ndm-emu shell: /dev/net/tun: " + errno_text(errno));
    ifreq ifr{};
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
        const int e = errno;
        close(fd);
        die("ndm-emu shell: cannot create TUN device " + name + ": " + errno_text(e));
    }
    return fd;
}

std::string ipv4(std::uint32_t host_order) {
    in_addr a{htonl(host_order)};
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

// The /30 for this shell inside 10.77.0.0/16: start from the pid so that
// concurrent shells spread out, skip subnets any host interface already uses
// (the caller holds the setup lock, so two shells cannot pick the same one).
std::uint32_t pick_subnet() {
    std::set<std::uint32_t> used;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
        for (auto* i = list; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
                used.insert(ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr) & ~3u);
        freeifaddrs(list);
    }
    constexpr std::uint32_t base = (10u << 24) | (77u << 16);
    constexpr std::uint32_t subnets = 1u << 14;  // /16 split into /30s
    const auto start = static_cast<std::uint32_t>(getpid()) % subnets;
    for (std::uint32_t k = 0; k < subnets; ++k) {
        const std::uint32_t net = base + ((start + k) % subnets) * 4;
        if (!used.contains(net)) return net;
    }
    die("ndm-emu shell: every /30 in 10.77.0.0/16 is in use");
}

volatile std::sig_atomic_t g_child_exited = 0;
volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_forward_int = 0;
void on_sigchld(int) { g_child_exited = 1; }
// A terminal's Ctrl-C (si_code SI_KERNEL) already reached CMD, which shares
// our process group: CMD decides (an interactive bash inside ignores it and
// keeps the session). A SIGINT sent to us alone (kill) is passed on to CMD.
// SIGTERM and SIGHUP end the session.
void on_stop(int sig, siginfo_t* info, void*) {
    if (sig == SIGINT) {
        if (info && info->si_code != SI_KERNEL) g_forward_int = 1;
        return;
    }
    g_stop_signal = sig;
}

// SIGKILLs every process whose network namespace is the one bound at
// `ns_path` (what `ip netns pids` lists: same nsfs inode).
void kill_processes_in(const std::string& ns_path) {
    struct stat ns{};
    if (stat(ns_path.c_str(), &ns) != 0) return;
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return;
    while (const dirent* e = readdir(proc)) {
        pid_t pid = 0;
        const std::string_view name = e->d_name;
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (ec != std::errc() || end != name.data() + name.size() || pid == getpid()) continue;
        struct stat st{};
        if (stat(("/proc/" + std::string(name) + "/ns/net").c_str(), &st) == 0 && st.st_dev == ns.st_dev &&
            st.st_ino == ns.st_ino)
            kill(pid, SIGKILL);
    }
    closedir(proc);
}

// Namespaces are named ndm-emu-PID after the ndm-emu that owns them. One
// whose PID no longer runs (or is ours: a killed process had our pid) was
// left by a shell killed outright (SIGKILL cannot be caught, so its
// teardown never ran): kill what still runs inside and delete it. TUN
// devices need nothing: they vanished with the dead process's fds. Called
// under the setup lock, so two starting shells do not race on one.
void remove_stale_namespaces() {
    DIR* dir = opendir("/run/netns");
    if (dir == nullptr) return;
    std::vector<std::string> stale;
    constexpr std::string_view prefix = "ndm-emu-";
    while (const dirent* e = readdir(dir)) {
        const std::string_view name = e->d_name;
        if (!name.starts_with(prefix)) continue;
        pid_t owner = 0;
        const auto [end, ec] = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), owner);
        if (ec != std::errc() || end != name.data() + name.size() || owner <= 0) continue;
        if (owner == getpid() || (kill(owner, 0) != 0 && errno == ESRCH)) stale.emplace_back(name);
    }
    closedir(dir);
    for (const auto& ns : stale) {
        kill_processes_in("/run/netns/" + ns);
        if (run_ip({"netns", "del", ns}, true))
            spdlog::warn("ndm-emu shell: removed stale namespace {} (its ndm-emu is gone)", ns);
    }
}

// Owns what setup created; the destructor undoes it in reverse order.
struct Resources {
    std::string netns;  // set once `ip netns add` succeeded
    int host_fd = -1, shell_fd = -1, ns_fd = -1, lock_fd = -1;
    ~Resources() {
        for (int fd : {host_fd, shell_fd, ns_fd, lock_fd})
            if (fd >= 0) close(fd);
        if (!netns.empty()) run_ip({"netns", "del", netns});
    }
};

// Signals: blocked except while waiting in ppoll, so a Ctrl-C during setup
// still ends in run_shell's teardown rather than killing us half-way. The
// previous handlers and mask come back when the scope ends, and in the child
// before it runs the command.
class SignalScope {
public:
    SignalScope() {
        sigset_t blocked;
        sigemptyset(&blocked);
        for (int s : kSignals) sigaddset(&blocked, s);
        sigprocmask(SIG_BLOCK, &blocked, &old_mask_);
        struct sigaction sa{};
        for (int i = 0; i < 4; ++i) {
            sigemptyset(&sa.sa_mask);
            if (kSignals[i] == SIGCHLD) {
                sa.sa_handler = on_sigchld;
                sa.sa_flags = 0;
            } else {
                sa.sa_sigaction = on_stop;
                sa.sa_flags = SA_SIGINFO;
            }
            sigaction(kSignals[i], &sa, &old_sa_[i]);
        }
    }
    ~SignalScope() { restore(); }
    SignalScope(const SignalScope&) = delete;
    SignalScope& operator=(const SignalScope&) = delete;

    void restore() const {
        for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &old_sa_[i], nullptr);
        sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    }
    // The mask ppoll waits with: the one from before, so signals arrive only there.
    [[nodiscard]] const sigset_t* old_mask() const { return &old_mask_; }

private:
    static constexpr int kSignals[4] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    sigset_t old_mask_{};
    struct sigaction old_sa_[4]{};
};

// The shell's namespace and the two ends of its TUN pair.
struct ShellNet {
    std::string ns, host_dev, shell_dev, host_addr, shell_addr;
};

// Creates the namespace, one TUN device on each side of it and their /30
// addresses; what exists is recorded in `r`, so its destructor tears it down
// on any failure.
ShellNet setup_namespace(Resources& r, const std::string& id) {
    ShellNet n;
    n.host_dev = "ndmh" + id;
    n.shell_dev = "ndms" + id;
    // Setup lock: subnet choice and address assignment of concurrent shells
    // must not interleave.
    r.lock_fd = open("/run/ndm-emu-shell.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (r.lock_fd >= 0) flock(r.lock_fd, LOCK_EX);

    remove_stale_namespaces();
    n.ns = "ndm-emu-" + id;
    const std::string& ns = n.ns;
    must_ip({"netns", "add", ns});
    r.netns = ns;

    r.host_fd = open_tun(n.host_dev);
    const int self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self_ns < 0) die("ndm-emu shell: /proc/self/ns/net: " + errno_text(errno));
    r.ns_fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (r.ns_fd < 0 || setns(r.ns_fd, CLONE_NEWNET) != 0) {
        const int e = errno;
        close(self_ns);
        die("ndm-emu shell: cannot enter namespace " + ns + ": " + errno_text(e));
    }
    try {
        r.shell_fd = open_tun(n.shell_dev);  // created inside the namespace
    } catch (...) {
        setns(self_ns, CLONE_NEWNET);
        close(self_ns);
        throw;
    }
    if (setns(self_ns, CLONE_NEWNET) != 0) {
        const int e = errno;
        close(self_ns);
        die("ndm-emu shell: cannot return to the host namespace: " + errno_text(e));
    }
    close(self_ns);

    const std::uint32_t net = pick_subnet();
    n.host_addr = ipv4(net + 1);
    n.shell_addr = ipv4(net + 2);
    // No IPv6 link-local addresses: their router/neighbour solicitations would
    // be the only traffic not from CMD and would consume emulator draws.
    run_ip({"link", "set", "dev", n.host_dev, "addrgenmode", "none"}, true);
    must_ip({"addr", "add", n.host_addr + "/30", "dev", n.host_dev});
    must_ip({"link", "set", "dev", n.host_dev, "up"});
    must_ip({"-n", ns, "link", "set", "dev", "lo", "up"});
    run_ip({"-n", ns, "link", "set", "dev", n.shell_dev, "addrgenmode", "none"}, true);
    must_ip({"-n", ns, "addr", "add", n.shell_addr + "/30", "dev", n.shell_dev});
    must_ip({"-n", ns, "link", "set", "dev", n.shell_dev, "up"});
    must_ip({"-n", ns, "route", "add", "default", "dev", n.shell_dev});
    if (r.lock_fd >= 0) {
        close(r.lock_fd);
        r.lock_fd = -1;
    }
    return n;
}

// The command: same process group (so a terminal's Ctrl-C reaches it too),
// default signal handling, inside the namespace.
pid_t spawn_command(const ShellOptions& o, const SignalScope& signals, int ns_fd, const ShellNet& n) {
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) die("ndm-emu shell: fork: " + errno_text(errno));
    if (child != 0) return child;
    // Die with ndm-emu: killed outright, it cannot end the command, and the
    // command would outlive it in a namespace nobody relays for. The parent
    // may have died before prctl took effect: then we are already orphaned.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    signals.restore();
    if (setns(ns_fd, CLONE_NEWNET) != 0) {
        const std::string m = "ndm-emu shell: cannot enter namespace: " + errno_text(errno) + "\n";
        (void)!write(2, m.data(), m.size());
        _exit(127);
    }
    setenv("NDM_EMU_HOST_ADDR", n.host_addr.c_str(), 1);
    setenv("NDM_EMU_SHELL_ADDR", n.shell_addr.c_str(), 1);
    setenv("NDM_EMU_NETNS", n.ns.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const std::string m = "ndm-emu shell: cannot run '" + o.command[0] + "': " + errno_text(errno) + "\n";
    (void)!write(2, m.data(), m.size());
    _exit(127);
}

// Relay loop until the command exits: read what each TUN fd has (bounded per
// wakeup so deliveries keep flowing under load), push it through the link
// with CLOCK_MONOTONIC stamps, write what is due to the other side. Forwards
// Ctrl-C; on SIGTERM/SIGHUP terminates the command, killing it after 3 s.
// Returns its wait status.
int relay(const Resources& r, pid_t child, emu::EmulatedLink& up, emu::EmulatedLink& down, const sigset_t* wait_mask,
          std::uint64_t& write_errors) {
    std::vector<std::uint8_t> buf(65536);
    Datagram out;
    int status = 0;
    Instant kill_at = kNever;
    const auto pump_in = [&](int fd, emu::EmulatedLink& link) {
        for (int i = 0; i < 64; ++i) {
            const ssize_t n = read(fd, buf.data(), buf.size());
            if (n <= 0) break;
            link.send({{buf.data(), static_cast<std::size_t>(n)}}, monotonic_now());
        }
    };
    const auto pump_out = [&](emu::EmulatedLink& link, int fd, Instant now) {
        while (link.next_delivery() <= now)
            if (link.deliver(now, out) && write(fd, out.bytes.data(), out.bytes.size()) < 0) ++write_errors;
    };
    for (;;) {
        const Instant now = monotonic_now();
        pump_out(up, r.host_fd, now);
        pump_out(down, r.shell_fd, now);
        if (g_child_exited) {
            g_child_exited = 0;
            if (waitpid(child, &status, WNOHANG) == child) return status;
        }
        if (g_forward_int) {
            g_forward_int = 0;
            kill(child, SIGINT);
        }
        if (g_stop_signal && kill_at == kNever) {
            kill(child, SIGTERM);
            kill_at = now + std::chrono::seconds(3);
        }
        if (now >= kill_at) {
            kill(child, SIGKILL);
            kill_at = now + std::chrono::hours(1);
        }
        const Instant wake = std::min({up.next_delivery(), down.next_delivery(), kill_at,
                                       now + std::chrono::milliseconds(500)});
        const auto ns_left = std::max<std::int64_t>(0, (wake - now).count());
        const timespec ts{static_cast<time_t>(ns_left / 1'000'000'000), static_cast<long>(ns_left % 1'000'000'000)};
        pollfd fds[2] = {{r.shell_fd, POLLIN, 0}, {r.host_fd, POLLIN, 0}};
        const int rc = ppoll(fds, 2, &ts, wait_mask);  // signals are delivered only here
        if (rc < 0) {
            if (errno == EINTR) continue;
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            die("ndm-emu shell: ppoll: " + errno_text(errno));
        }
        if (fds[0].revents & POLLIN) pump_in(r.shell_fd, up);
        if (fds[1].revents & POLLIN) pump_in(r.host_fd, down);
    }
}

}  // namespace

std::string shell_privilege_problem() {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (syscall(SYS_capget, &hdr, data) != 0) return "capget: " + errno_text(errno);
    const auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
    if (!has(CAP_NET_ADMIN)) return "no CAP_NET_ADMIN";
    if (!has(CAP_SYS_ADMIN)) return "no CAP_SYS_ADMIN (needed for setns)";
    const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) return "/dev/net/tun: " + errno_text(errno);
    close(fd);
    return {};
}

int run_shell(const ShellOptions& o, std::ostream& err) {
    if (o.command.empty()) die("ndm-emu shell: no command given (ndm-emu shell --profile P -- CMD [ARGS...])");
    const std::string id = std::to_string(getpid());
    const SignalScope signals;
    g_child_exited = 0;
    g_stop_signal = 0;
    g_forward_int = 0;

    Resources r;
    const ShellNet n = setup_namespace(r, id);
    auto up = emu::make_link(o.profile, emu::Direction::up, o.seed);
    auto down = emu::make_link(o.profile, emu::Direction::down, o.seed);
    if (!o.quiet)
        err << "ndm-emu shell: namespace " << n.ns << ", host " << n.host_addr << " (" << n.host_dev << ") <-> shell "
            << n.shell_addr << " (" << n.shell_dev << "), profile " << o.profile.name
            << "\n  uplink (leaving the shell):   " << emu::describe(o.profile.up)
            << "\n  downlink (entering the shell): " << emu::describe(o.profile.down) << std::endl;

    const pid_t child = spawn_command(o, signals, r.ns_fd, n);
    std::uint64_t write_errors = 0;
    const int status = relay(r, child, *up, *down, signals.old_mask(), write_errors);

    if (!o.quiet) {
        err << "uplink (leaving the shell):\n" << emu::format_stats(up->emu_stats()) << "\n"
            << "downlink (entering the shell):\n" << emu::format_stats(down->emu_stats()) << "\n";
        if (write_errors) err << "packets the relay could not write: " << write_errors << "\n";
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

}  // namespace ndm::tools
