// Tests (and tests/tools/ndm_probe) that look inside or forge protected
// packets (RFC 9001 §5) do it with the connections' own keys: seal() writes
// what a peer would send, open_datagram() reads what a connection is about
// to receive. A packet that cannot be made throws std::runtime_error.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ndm/connection.hpp"
#include "transport/connection_impl.hpp"
#include "wire/frame.hpp"
#include "wire/quic_header.hpp"

namespace ndm::test {

// The encoded frames, as a payload.
inline std::vector<std::uint8_t> encode(const std::vector<wire::Frame>& frames) {
    std::vector<std::uint8_t> out(65536);
    wire::Writer w(out);
    for (const auto& f : frames)
        if (!wire::encode_frame(w, f)) throw std::runtime_error("test: frames do not fit a packet");
    out.resize(w.position());
    return out;
}

// A packet from `from` to its peer with this payload, protected with from's keys.
inline std::vector<std::uint8_t> seal(Connection& from, transport::PacketSpace space, std::uint64_t pn,
                                      const std::vector<std::uint8_t>& payload, std::size_t pad_to = 0) {
    std::vector<std::uint8_t> out(kMaxDatagramSize);
    const std::size_t n = Connection::Impl::of(from).seal_payload(out, space, pn, payload, pad_to);
    if (n == 0) throw std::runtime_error("test: no keys to seal with, or the payload does not fit");
    out.resize(n);
    return out;
}

// The packets of a datagram `to` is about to receive, opened with its keys
// on a copy (the datagram and `to` are unchanged but for 1-RTT key use).
struct OpenedDatagram {
    struct Packet {
        wire::quic::PacketKind kind;
        std::uint64_t pn;
        std::vector<wire::Frame> frames;  // views into bytes
    };
    std::vector<std::uint8_t> bytes;
    std::vector<Packet> packets;
    [[nodiscard]] bool has(wire::quic::PacketKind k) const {
        for (const auto& p : packets)
            if (p.kind == k) return true;
        return false;
    }
};

inline OpenedDatagram open_datagram(Connection& to, const std::vector<std::uint8_t>& d, Instant now) {
    auto& impl = Connection::Impl::of(to);
    OpenedDatagram out;
    out.bytes = d;
    wire::quic::DatagramPackets packets(out.bytes, wire::kShortCidLength);
    for (wire::quic::PacketView v; packets.next(v);) {
        const auto space = v.kind == wire::quic::PacketKind::initial     ? transport::PacketSpace::initial
                           : v.kind == wire::quic::PacketKind::handshake ? transport::PacketSpace::handshake
                                                                         : transport::PacketSpace::application;
        const auto& tracker = impl.acks_of(space);
        const auto largest = tracker.has_received() ? std::optional(tracker.largest_received()) : std::nullopt;
        wire::quic::OpenedPacket o;
        const auto err = space == transport::PacketSpace::application
                             ? (impl.one_rtt ? wire::quic::open_packet(out.bytes, v, &*impl.one_rtt, largest, now,
                                                                       impl.pto_period(), o)
                                             : wire::quic::OpenError::no_keys)
                             : wire::quic::open_packet(out.bytes, v, impl.read_keys_of(space), largest, o);
        if (err != wire::quic::OpenError::none) continue;
        OpenedDatagram::Packet p{v.kind, o.packet_number, {}};
        wire::Reader r(o.payload);
        wire::Error e;
        for (wire::Frame f; !r.empty() && wire::decode_frame(r, f, e, 0);) p.frames.push_back(f);
        out.packets.push_back(std::move(p));
    }
    return out;
}

}  // namespace ndm::test
