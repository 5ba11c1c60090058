// udp_probe: a UDP echo server and a paced probe client for the emulator's
// integration tests (tests/cli/ndm_emu_*.sh), so they need no python or nc.
//
//   udp_probe echo  --bind ADDR:PORT [--idle-exit SECONDS]
//   udp_probe probe --to ADDR:PORT [--count N] [--interval-ms MS] [--size BYTES] [--linger-ms MS]
//
// The probe sends N datagrams MS apart, each carrying its sequence number and
// its CLOCK_MONOTONIC send time, collects the echoes until MS_linger after
// the last send, and prints one line of key=value results:
//   sent=N received=M loss=F rtt_min_ms=.. rtt_median_ms=.. rtt_p90_ms=.. rtt_max_ms=..
// (received counts distinct sequence numbers; loss = 1 - received/sent).
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr, "udp_probe: %s\n", msg);
    std::exit(2);
}

bool resolve(const std::string& text, bool passive, sockaddr_storage& out, socklen_t& len) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.empty() ? nullptr : host.c_str(), text.substr(colon + 1).c_str(), &hints, &res) != 0)
        return false;
    std::memcpy(&out, res->ai_addr, res->ai_addrlen);
    len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

int echo(const std::string& bind_to, double idle_exit) {
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!resolve(bind_to, true, addr, len)) usage(("cannot resolve " + bind_to).c_str());
    const int fd = socket(addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        std::fprintf(stderr, "udp_probe: cannot bind %s: %s\n", bind_to.c_str(), std::strerror(errno));
        return 1;
    }
    std::vector<char> buf(65536);
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const int rc = poll(&p, 1, static_cast<int>(idle_exit * 1000));
        if (rc == 0) return 0;  // idle: the test is over (or gone)
        if (rc < 0) continue;
        sockaddr_storage from{};
        socklen_t from_len = sizeof from;
        const ssize_t n = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n > 0) sendto(fd, buf.data(), static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
}

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

int probe(const std::string& to, long count, double interval_ms, long size, double linger_ms) {
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!resolve(to, false, addr, len)) usage(("cannot resolve " + to).c_str());
    const int fd = socket(addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        std::fprintf(stderr, "udp_probe: cannot connect to %s: %s\n", to.c_str(), std::strerror(errno));
        return 1;
    }
    std::vector<char> out(static_cast<std::size_t>(std::max(16L, size))), in(65536);
    std::vector<bool> seen(static_cast<std::size_t>(count));
    std::vector<double> rtt_ms;
    const auto spacing = static_cast<std::int64_t>(interval_ms * 1e6);
    const std::int64_t start = now_ns();
    const std::int64_t end = start + spacing * (count - 1) + static_cast<std::int64_t>(linger_ms * 1e6);
    long sent = 0;
    for (;;) {
        const std::int64_t t = now_ns();
        while (sent < count && t >= start + spacing * sent) {
            const std::int64_t seq = sent, stamp = now_ns();
            std::memcpy(out.data(), &seq, 8);
            std::memcpy(out.data() + 8, &stamp, 8);
            send(fd, out.data(), out.size(), 0);  // a refused send counts as lost
            ++sent;
        }
        if (t >= end) break;
        const std::int64_t next = sent < count ? start + spacing * sent : end;
        pollfd p{fd, POLLIN, 0};
        const std::int64_t wait_ns = std::max<std::int64_t>(0, next - t);
        const timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
        if (ppoll(&p, 1, &ts, nullptr) <= 0) continue;
        for (;;) {
            const ssize_t n = recv(fd, in.data(), in.size(), 0);
            if (n < 0) break;
            if (n < 16) continue;
            std::int64_t seq = 0, stamp = 0;
            std::memcpy(&seq, in.data(), 8);
            std::memcpy(&stamp, in.data() + 8, 8);
            if (seq < 0 || seq >= count || seen[static_cast<std::size_t>(seq)]) continue;
            seen[static_cast<std::size_t>(seq)] = true;
            rtt_ms.push_back(static_cast<double>(now_ns() - stamp) / 1e6);
        }
    }
    const auto received = static_cast<long>(rtt_ms.size());
    std::printf("sent=%ld received=%ld loss=%.4f rtt_min_ms=%.3f rtt_median_ms=%.3f rtt_p90_ms=%.3f rtt_max_ms=%.3f\n",
                sent, received, 1.0 - static_cast<double>(received) / static_cast<double>(sent), quantile(rtt_ms, 0),
                quantile(rtt_ms, 0.5), quantile(rtt_ms, 0.9), quantile(rtt_ms, 1));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage("usage: udp_probe echo --bind ADDR:PORT | probe --to ADDR:PORT [options]");
    const std::string mode = argv[1];
    std::string bind_to, to;
    long count = 400, size = 64;
    double interval_ms = 5, linger_ms = 1000, idle_exit = 30;
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc) usage(("missing value for " + k).c_str());
        const char* v = argv[++i];
        char* endp = nullptr;
        const double num = std::strtod(v, &endp);
        const bool numeric = endp && *endp == '\0' && num >= 0;
        if (k == "--bind") bind_to = v;
        else if (k == "--to") to = v;
        else if (!numeric) usage((k + ": '" + v + "' is not a non-negative number").c_str());
        else if (k == "--count") count = static_cast<long>(num);
        else if (k == "--size") size = static_cast<long>(num);
        else if (k == "--interval-ms") interval_ms = num;
        else if (k == "--linger-ms") linger_ms = num;
        else if (k == "--idle-exit") idle_exit = num;
        else usage(("unknown option " + k).c_str());
    }
    if (mode == "echo") {
        if (bind_to.empty()) usage("echo needs --bind ADDR:PORT");
        return echo(bind_to, idle_exit);
    }
    if (mode == "probe") {
        if (to.empty()) usage("probe needs --to ADDR:PORT");
        if (count < 1) usage("--count must be at least 1");
        return probe(to, count, interval_ms, size, linger_ms);
    }
    usage(("unknown mode '" + mode + "' (echo or probe)").c_str());
}
