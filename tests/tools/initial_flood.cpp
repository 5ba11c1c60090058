// initial_flood: a flood of valid QUIC v1 client Initials at a fixed rate,
// as a spoofing attacker would send them (tests/cli/ndm_retry_flood_test.sh).
//
//   initial_flood --to ADDR:PORT --rate PER_SECOND --seconds S [--distinct N]
//
// N distinct Initials (1200 bytes, each a real ClientHello of the library's
// own client, so a server that accepts one starts a full TLS handshake) are
// made up front and sent round robin. As root they go out of a raw UDP
// socket with a random source port each, to ports nobody answers (RFC 9000
// §8.1's spoofed client); otherwise out of a pool of 256 UDP sockets that
// never read. Prints one line: what was sent, how, and at what rate.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ipv4_endpoint.hpp"
#include "ndm/connection.hpp"
#include "ndm/tls.hpp"

using namespace ndm;

namespace {

[[noreturn]] void usage(const std::string& msg) {
    std::fprintf(stderr, "initial_flood: %s\n", msg.c_str());
    std::exit(2);
}

sockaddr_in parse_addr(const std::string& s) {
    std::string error;
    const auto a = test::parse_ipv4_endpoint(s, error);
    if (!a) usage(error);
    return *a;
}

std::vector<std::vector<std::uint8_t>> make_initials(std::size_t n) {
    std::vector<std::vector<std::uint8_t>> out;
    std::vector<std::uint8_t> buf(kMaxDatagramSize);
    std::mt19937_64 seeds{std::random_device{}()};
    for (std::size_t i = 0; i < n; ++i) {
        ConnectionConfig c;
        c.tls.trust = tls::ClientCredentials::insecure();
        c.tls.server_name = "localhost";
        // Connection IDs come from the seed: one each, or every Initial would
        // carry the same Destination Connection ID and reach one connection.
        c.seed = seeds();
        const auto conn = Connection::connect(c, Instant{});
        const std::size_t len = conn->poll_datagram(buf, Instant{});
        out.emplace_back(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
    }
    return out;
}

// Sends one datagram; false when the socket refuses (a full buffer: counted, not fatal).
class Sender {
public:
    explicit Sender(const sockaddr_in& to) : to_(to) {
        raw_ = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
        if (raw_ >= 0) return;
        for (int i = 0; i < 256; ++i) {
            const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
            if (fd < 0) usage(std::string("socket: ") + std::strerror(errno));
            pool_.push_back(fd);
        }
    }
    ~Sender() {
        if (raw_ >= 0) close(raw_);
        for (int fd : pool_) close(fd);
    }
    [[nodiscard]] bool spoofed() const { return raw_ >= 0; }

    bool send(const std::vector<std::uint8_t>& d) {
        const auto* to = reinterpret_cast<const sockaddr*>(&to_);
        if (raw_ < 0) {
            const int fd = pool_[next_++ % pool_.size()];
            return sendto(fd, d.data(), d.size(), MSG_DONTWAIT, to, sizeof to_) == static_cast<ssize_t>(d.size());
        }
        // The UDP header ourselves: a random source port, checksum 0 (none, IPv4).
        packet_.resize(sizeof(udphdr) + d.size());
        udphdr h{};
        h.source = htons(static_cast<std::uint16_t>(20000 + rng_() % 40000));
        h.dest = to_.sin_port;
        h.len = htons(static_cast<std::uint16_t>(packet_.size()));
        std::memcpy(packet_.data(), &h, sizeof h);
        std::memcpy(packet_.data() + sizeof h, d.data(), d.size());
        return sendto(raw_, packet_.data(), packet_.size(), MSG_DONTWAIT, to, sizeof to_) ==
               static_cast<ssize_t>(packet_.size());
    }

private:
    sockaddr_in to_;
    int raw_ = -1;
    std::vector<int> pool_;
    std::size_t next_ = 0;
    std::vector<std::uint8_t> packet_;
    std::mt19937 rng_{std::random_device{}()};
};

}  // namespace

int main(int argc, char** argv) {
    std::string addr;
    double rate = 0, seconds = 0;
    std::size_t distinct = 1024;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage("missing value for " + a);
            return argv[++i];
        };
        if (a == "--to") addr = value();
        else if (a == "--rate") rate = std::atof(value().c_str());
        else if (a == "--seconds") seconds = std::atof(value().c_str());
        else if (a == "--distinct") distinct = static_cast<std::size_t>(std::atol(value().c_str()));
        else usage("unknown argument " + a);
    }
    if (addr.empty() || rate <= 0 || seconds <= 0 || distinct == 0)
        usage("usage: initial_flood --to ADDR:PORT --rate PER_SECOND --seconds S [--distinct N]");
    Sender sender(parse_addr(addr));
    const auto initials = make_initials(distinct);

    std::fprintf(stderr, "initial_flood: flooding %s at %.0f Initials/s for %.1f s\n", addr.c_str(), rate, seconds);
    // Paced in 1 ms steps: each step sends what the rate allows by then.
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    std::uint64_t sent = 0, refused = 0, bytes = 0;
    for (auto now = start; now < end; now = clock::now()) {
        const auto due = static_cast<std::uint64_t>(std::chrono::duration<double>(now - start).count() * rate);
        // At most a burst per step, so that a rate above what the machine can
        // send (the highest rate: bench/load_check.sh) still ends on time.
        for (unsigned burst = 0; sent + refused < due && burst < 4096; ++burst) {
            const auto& d = initials[(sent + refused) % initials.size()];
            if (sender.send(d)) {
                ++sent;
                bytes += d.size();
            } else {
                ++refused;
            }
        }
        std::this_thread::sleep_until(now + std::chrono::milliseconds(1));
    }
    const double took = std::chrono::duration<double>(clock::now() - start).count();
    std::printf("flood: %llu Initials (%llu bytes, %zu distinct) in %.2f s = %.0f/s from %s; %llu refused by the socket\n",
                static_cast<unsigned long long>(sent), static_cast<unsigned long long>(bytes), initials.size(), took,
                static_cast<double>(sent) / took, sender.spoofed() ? "spoofed random ports" : "a pool of 256 sockets",
                static_cast<unsigned long long>(refused));
    return 0;
}
