// Packet protection allocates nothing per packet (docs/packet-protection.md):
// this program interposes malloc/calloc/realloc (for GnuTLS, nettle and
// OpenSSL too, by ELF symbol interposition), counts the calls made while 1000
// packets per suite and backend are protected and opened, and fails if there
// is any. The count is checked to work by a key setup inside the counted
// region of a first pass (gnutls_aead_cipher_init and EVP_CIPHER_CTX_new
// allocate). Its own executable: a counting malloc
// has no place in ndm_tests, nor under ASan (not built with NDM_SANITIZE).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "crypto/packet_protection.hpp"

using ndm::crypto::QuicVersion;

extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);

namespace {
long g_allocations = 0;
bool g_counting = false;
}  // namespace

extern "C" void* malloc(std::size_t n) {
    if (g_counting) ++g_allocations;
    return __libc_malloc(n);
}
extern "C" void* calloc(std::size_t a, std::size_t b) {
    if (g_counting) ++g_allocations;
    return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, std::size_t n) {
    if (g_counting) ++g_allocations;
    return __libc_realloc(p, n);
}

namespace {

using namespace ndm::crypto;

// Protects and opens `packets` short header packets in pkt; false if any fails.
bool round_trips(DirectionKeys& tx, DirectionKeys& rx, std::vector<std::uint8_t>& pkt, int packets) {
    bool ok = true;
    for (int i = 0; i < packets; ++i) {
        pkt[0] = 0x41;
        pkt[9] = static_cast<std::uint8_t>(i >> 8);
        pkt[10] = static_cast<std::uint8_t>(i);
        ok = ok && protect(pkt, 9, 2, static_cast<std::uint64_t>(i), tx.aead, tx.hp);
        const auto header = remove_header_protection(pkt, 9, rx.hp);
        ok = ok && header && open_payload(pkt, 11, static_cast<std::uint64_t>(i), rx.aead);
    }
    return ok;
}

}  // namespace

int main() {
    int failures = 0;
    for (const auto suite : {CipherSuite::aes128_gcm_sha256, CipherSuite::aes256_gcm_sha384,
                             CipherSuite::chacha20_poly1305_sha256}) {
        for (const Backend backend : kBackends) {
            Secret s;
            s.size = suite == CipherSuite::aes256_gcm_sha384 ? 48 : 32;
            s.bytes.fill(7);
            const PacketKeys keys = derive_packet_keys(suite, s, QuicVersion::v1);
            DirectionKeys tx(backend, keys);
            DirectionKeys rx(backend, keys);
            g_allocations = 0;
            g_counting = true;
            { const DirectionKeys probe(backend, keys); }  // the counter sees the library's allocations
            g_counting = false;
            const long setup = g_allocations;
            std::vector<std::uint8_t> pkt(1452, 0x11);  // allocated outside the counted loop
            g_allocations = 0;
            g_counting = true;
            const bool ok = round_trips(tx, rx, pkt, 1000);
            g_counting = false;
            std::printf("%s, %s: %ld allocations for a key, %ld in 1000 protect+open, %s\n",
                        std::string(to_string(suite)).c_str(), std::string(to_string(backend)).c_str(), setup,
                        g_allocations, ok ? "all opened" : "FAILED to open");
            if (setup == 0 || g_allocations != 0 || !ok) ++failures;
        }
    }
    return failures == 0 ? 0 : 1;
}
