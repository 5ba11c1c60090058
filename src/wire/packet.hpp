// Connection IDs and packet numbers (RFC 9000 §5.1, §17.1, Appendix A.2,
// A.3): what every QUIC v1 header (quic_header.hpp) carries, and the packet
// types the connection and its traces name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ndm::wire {

inline constexpr std::size_t kMaxCidLength = 20;    // RFC 9000 §17.2: v1 connection IDs
inline constexpr std::size_t kShortCidLength = 8;  // the CIDs we issue

struct ConnectionId {
    std::uint8_t length = 0;
    std::array<std::uint8_t, kMaxCidLength> bytes{};

    static ConnectionId from(std::span<const std::uint8_t> b);  // b.size() <= 20
    [[nodiscard]] std::span<const std::uint8_t> span() const { return {bytes.data(), length}; }
    bool operator==(const ConnectionId& o) const;
};

// The packet types of the connection's packet number spaces and traces.
enum class PacketType : std::uint8_t { initial = 0, handshake = 2, one_rtt = 4, version_negotiation = 5 };

// Smallest packet-number length that lets the peer recover pn given the
// largest packet number it acknowledged (RFC 9000 §A.2).
std::size_t packet_number_length(std::uint64_t pn, std::uint64_t largest_acked, bool has_acked);
// Full packet number from its truncated form (RFC 9000 §A.3).
std::uint64_t decode_packet_number(std::uint64_t largest_received, bool has_received,
                                   std::uint64_t truncated, std::size_t pn_length);

}  // namespace ndm::wire
