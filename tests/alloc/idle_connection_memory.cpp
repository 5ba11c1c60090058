// Memory per idle connection (docs/security.md, "Memory per idle
// connection"): this program interposes the allocator (for GnuTLS and nettle
// too, by ELF symbol interposition), keeps the live heap bytes, and measures
// what N established, idle connection pairs hold, client and server side,
// after a warm-up pair has built the process-wide state (certificates,
// GnuTLS's caches), and what a half-open server connection holds (a flood's
// cost per Initial). It prints the figures and fails if one exceeds the
// bound docs/security.md states. Its own executable, as crypto_no_alloc:
// a counting allocator has no place in ndm_tests, nor under the sanitizers.
#include <malloc.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "../support/connection_pair.hpp"

extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
extern "C" void* __libc_memalign(std::size_t, std::size_t);
extern "C" void __libc_free(void*);

namespace {
long long g_live = 0;  // bytes, by malloc_usable_size
void* counted(void* p) {
    if (p) g_live += static_cast<long long>(malloc_usable_size(p));
    return p;
}
}  // namespace

extern "C" void* malloc(std::size_t n) { return counted(__libc_malloc(n)); }
extern "C" void* calloc(std::size_t a, std::size_t b) { return counted(__libc_calloc(a, b)); }
extern "C" void free(void* p) {
    if (p) g_live -= static_cast<long long>(malloc_usable_size(p));
    __libc_free(p);
}
extern "C" void* realloc(void* p, std::size_t n) {
    const long long before = p ? static_cast<long long>(malloc_usable_size(p)) : 0;
    void* q = __libc_realloc(p, n);
    if (q || n == 0) g_live -= before;
    return counted(q);
}
extern "C" void* memalign(std::size_t a, std::size_t n) { return counted(__libc_memalign(a, n)); }
extern "C" void* aligned_alloc(std::size_t a, std::size_t n) { return counted(__libc_memalign(a, n)); }
extern "C" int posix_memalign(void** out, std::size_t a, std::size_t n) {
    void* p = counted(__libc_memalign(a, n));
    if (!p) return 12;  // ENOMEM
    *out = p;
    return 0;
}

namespace {

struct Idle {
    std::unique_ptr<ndm::Connection> client, server;
};

// An established pair, its handshake's last ACKs delivered, nothing in flight.
Idle make_idle_pair(std::uint64_t seed) {
    ndm::test::ConnectionPair p;
    p.client_cfg.seed = seed;
    p.server_cfg.seed = seed + 1;
    if (!p.handshake()) {
        std::fprintf(stderr, "handshake failed\n");
        std::exit(1);
    }
    p.run_until([&] { return false; }, std::chrono::seconds(1));
    return {std::move(p.client), std::move(p.server)};
}

// A server connection for a client's first datagram, its first flight sent
// (and held for retransmission), the client never heard from again: what
// each Initial of a flood costs until the handshake timeout.
std::unique_ptr<ndm::Connection> make_half_open(std::uint64_t seed) {
    ndm::test::ConnectionPair p;
    p.client_cfg.seed = seed;
    p.server_cfg.seed = seed + 1;
    p.start();
    std::vector<std::uint8_t> hello(ndm::kMaxDatagramSize);
    hello.resize(p.client->poll_datagram(hello, p.now));
    auto server = ndm::Connection::accept(p.server_cfg, hello, p.now);
    if (!server) {
        std::fprintf(stderr, "accept failed\n");
        std::exit(1);
    }
    while (server->poll_datagram(p.buf, p.now)) {
    }
    return server;
}

}  // namespace

int main() {
    constexpr int kPairs = 200;
    // Bound per side, as docs/security.md states it.
    constexpr long long kMaxPerConnection = 96 * 1024;
    make_idle_pair(1);  // warm-up: process-wide TLS state
    std::vector<Idle> pairs;
    pairs.reserve(kPairs);
    const long long base = g_live;
    for (int i = 0; i < kPairs; ++i) pairs.push_back(make_idle_pair(100 + 2 * static_cast<std::uint64_t>(i)));
    const long long both = g_live - base;
    for (Idle& p : pairs) p.client.reset();
    const long long servers = g_live - base;
    const long long per_server = servers / kPairs;
    const long long per_client = (both - servers) / kPairs;
    std::printf("idle connection, live heap bytes: client %lld, server %lld (mean over %d pairs; "
                "Connection::Impl itself %zu)\n",
                per_client, per_server, kPairs, sizeof(ndm::Connection::Impl));
    pairs.clear();
    const long long before_half_open = g_live;
    std::vector<std::unique_ptr<ndm::Connection>> half_open;
    half_open.reserve(kPairs);
    for (int i = 0; i < kPairs; ++i) half_open.push_back(make_half_open(1000 + 2 * static_cast<std::uint64_t>(i)));
    const long long per_half_open = (g_live - before_half_open) / kPairs;
    std::printf("half-open server connection (first flight sent, client silent): %lld bytes\n", per_half_open);
    if (per_client > kMaxPerConnection || per_server > kMaxPerConnection || per_half_open > kMaxPerConnection) {
        std::fprintf(stderr, "FAIL: above the %lld bytes per connection docs/security.md states\n", kMaxPerConnection);
        return 1;
    }
    return 0;
}
