// The three packet number spaces (RFC 9000 §12.3): Initial, Handshake and
// application data (0-RTT and 1-RTT share the last). Each numbers its packets
// from 0 and is acknowledged only by ACK frames carried in the same space.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ndm::transport {

enum class PacketSpace : std::uint8_t { initial = 0, handshake = 1, application = 2 };
inline constexpr std::size_t kPacketSpaces = 3;

// Calls f(PacketSpace) for each space whose bit is set in `mask` (bit i for
// PacketSpace i), in order, reading nothing of the others.
template <typename F>
void for_each_space(unsigned mask, F&& f) {
    for (; mask != 0; mask &= mask - 1) f(static_cast<PacketSpace>(std::countr_zero(mask)));
}

// Names as qlog spells them (draft-ietf-quic-qlog-quic-events, PacketNumberSpace).
inline const char* space_name(PacketSpace s) {
    switch (s) {
    case PacketSpace::initial: return "initial";
    case PacketSpace::handshake: return "handshake";
    case PacketSpace::application: return "application_data";
    }
    return "unknown";
}

}  // namespace ndm::transport
