// A peer's UDP address as the sans-I/O router sees it (src/transport/router.hpp):
// an IPv4 or IPv6 address, its port and (IPv6) scope, with no socket type
// behind it. The socket driver converts its own addresses (src/io) to it;
// tests and the fuzz target make them from numbers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ndm::transport {

struct PeerAddress {
    std::array<std::uint8_t, 16> ip{};  // IPv4: the first 4 bytes, the rest zero
    std::uint16_t port = 0;
    std::uint32_t scope = 0;  // IPv6 scope ID
    bool v6 = false;

    bool operator==(const PeerAddress&) const = default;
    // The same host with port 0: the key of per-host bookkeeping.
    [[nodiscard]] PeerAddress host() const {
        PeerAddress h = *this;
        h.port = 0;
        return h;
    }
    // What an address token binds (RFC 9000 §8.1.3: the address the Initial
    // came from, port included): the port, big-endian, then the 4 or 16
    // address bytes. Returns the size written into `out`.
    std::size_t token_bytes(std::span<std::uint8_t, 18> out) const {
        out[0] = static_cast<std::uint8_t>(port >> 8);
        out[1] = static_cast<std::uint8_t>(port);
        const std::size_t n = v6 ? 16 : 4;
        for (std::size_t i = 0; i < n; ++i) out[2 + i] = ip[i];
        return 2 + n;
    }

    static PeerAddress ipv4(std::uint32_t host_order, std::uint16_t port) {
        PeerAddress a;
        a.ip = {static_cast<std::uint8_t>(host_order >> 24), static_cast<std::uint8_t>(host_order >> 16),
                static_cast<std::uint8_t>(host_order >> 8), static_cast<std::uint8_t>(host_order)};
        a.port = port;
        return a;
    }
};

struct PeerAddressHash {
    std::size_t operator()(const PeerAddress& a) const {
        std::uint64_t h = 1469598103934665603ull;  // FNV-1a
        for (const std::uint8_t b : a.ip) h = (h ^ b) * 1099511628211ull;
        h = (h ^ a.port) * 1099511628211ull;
        h = (h ^ a.scope) * 1099511628211ull;
        return static_cast<std::size_t>(h ^ (a.v6 ? 0x9e3779b97f4a7c15ull : 0));
    }
};

}  // namespace ndm::transport
