// Protected QUIC v1 packets: quic_header's layout with src/crypto's
// protection. Every size comes from the header just written or parsed and is
// checked against the datagram before a byte is touched.
#include "wire/packet_codec.hpp"

#include <algorithm>

namespace ndm::wire::quic {

namespace {

// The packet `view` describes in `datagram` (empty unless the view lies
// inside it: it must come from parsing this very buffer), and where it opens
// in `opened` (`datagram` itself, or a buffer at least as large).
struct PacketBytes {
    std::span<const std::uint8_t> in;
    std::span<std::uint8_t> out;
    [[nodiscard]] bool empty() const { return in.empty(); }
};
PacketBytes packet_in(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> opened, const PacketView& view) {
    if (view.offset > datagram.size() || view.packet.size() > datagram.size() - view.offset ||
        view.packet.data() != datagram.data() + view.offset || opened.size() < datagram.size())
        return {};
    return {datagram.subspan(view.offset, view.packet.size()), opened.subspan(view.offset, view.packet.size())};
}

// The view's header fields; the packet number and payload come later.
OpenedPacket fields_of(const PacketView& view) {
    OpenedPacket out;
    out.kind = view.kind;
    out.version = view.version;
    out.dcid = view.dcid;
    out.scid = view.scid;
    out.token = view.token;
    return out;
}

bool is_long_protected(PacketKind k) {
    return k == PacketKind::initial || k == PacketKind::zero_rtt || k == PacketKind::handshake;
}

// Header protection off, the packet number expanded: the first step of both
// open paths. The header and the sample behind it are copied to packet.out
// first (nothing when opening in place), to be unprotected there. header_length
// is set for open_payload().
OpenError unmask(const PacketBytes& packet, const PacketView& view, const crypto::HeaderProtection& hp,
                 std::optional<std::uint64_t> largest_received, OpenedPacket& out, std::size_t& header_length) {
    if (packet.empty() || !view.has_packet_number()) return OpenError::header;
    if (packet.out.data() != packet.in.data()) {
        const std::size_t n = std::min(packet.in.size(), view.pn_offset + crypto::kMinBytesAfterPnOffset);
        std::copy_n(packet.in.begin(), n, packet.out.begin());
    }
    const auto header = crypto::remove_header_protection(packet.out, view.pn_offset, hp);
    if (!header) return OpenError::header;
    header_length = header->header_length(view.pn_offset);
    out.packet_number = decode_packet_number(largest_received.value_or(0), largest_received.has_value(),
                                             header->truncated_pn, header->pn_length);
    // RFC 9000 §12.3: packet numbers end at 2^62-1 (a sender must close
    // before); past the last one the expansion names no packet, and an ACK
    // of it could not be encoded. Unauthenticated as yet: dropped.
    if (out.packet_number > kVarintMax) return OpenError::packet_number;
    out.spin = (header->first_byte & kSpinBit) != 0 && view.kind == PacketKind::one_rtt;
    out.key_phase = (header->first_byte & kKeyPhaseBit) != 0 && view.kind == PacketKind::one_rtt;
    return OpenError::none;
}

// §17.2/§17.3.1: checked only after the AEAD authenticated the header, so a
// forged packet is a silent drop, not a connection error.
OpenError check_reserved(std::uint8_t first_byte) {
    const std::uint8_t reserved = (first_byte & kLongForm) != 0 ? kLongReservedBits : kShortReservedBits;
    return (first_byte & reserved) != 0 ? OpenError::reserved_bits : OpenError::none;
}

}  // namespace

std::size_t packet_overhead(const LongHeader& h) {
    std::size_t n = 1 + 4 + 1 + h.dcid.length + 1 + h.scid.length + h.length_bytes + h.pn_length;
    if (h.type == LongType::initial) n += varint_size(h.token.size()) + h.token.size();
    return n + crypto::kAeadTagSize;
}

std::size_t packet_overhead(const ShortHeader& h) { return 1 + h.dcid.length + h.pn_length + crypto::kAeadTagSize; }

PacketBuilder::PacketBuilder(std::span<std::uint8_t> datagram, std::size_t pos, const LongHeader& h)
    : datagram_(datagram), pos_(pos), packet_number_(h.packet_number), long_header_(true) {
    if (pos > datagram.size()) return;
    Writer w(datagram.subspan(pos));
    ok_ = write_long_header(w, h, layout_);
}

PacketBuilder::PacketBuilder(std::span<std::uint8_t> datagram, std::size_t pos, const ShortHeader& h)
    : datagram_(datagram), pos_(pos), packet_number_(h.packet_number) {
    if (pos > datagram.size()) return;
    Writer w(datagram.subspan(pos));
    ok_ = write_short_header(w, h, layout_);
}

std::span<std::uint8_t> PacketBuilder::payload_space() const {
    if (!ok_) return {};
    const std::size_t start = pos_ + layout_.payload_offset;
    const std::size_t room = datagram_.size() - start;
    return room < crypto::kAeadTagSize ? std::span<std::uint8_t>{} : datagram_.subspan(start, room - crypto::kAeadTagSize);
}

std::span<std::uint8_t> PacketBuilder::close(std::size_t payload_len, std::size_t pad_to) {
    const auto space = payload_space();
    ok_ = false;  // one finish(), whatever its outcome
    if (payload_len > space.size()) return {};
    std::size_t padded = std::max(payload_len, min_payload_length(layout_.pn_length));
    const std::size_t size = layout_.payload_offset + padded + crypto::kAeadTagSize;
    if (pad_to > pos_ + size) padded += pad_to - (pos_ + size);
    if (padded > space.size()) return {};
    std::fill(space.begin() + static_cast<std::ptrdiff_t>(payload_len),
              space.begin() + static_cast<std::ptrdiff_t>(padded), std::uint8_t{0});
    const auto packet = datagram_.subspan(pos_, layout_.payload_offset + padded + crypto::kAeadTagSize);
    if (long_header_ && !finish_long_header(packet, layout_)) return {};
    return packet;
}

std::size_t PacketBuilder::finish(std::size_t payload_len, crypto::DirectionKeys& keys, std::size_t pad_to) {
    const auto packet = close(payload_len, pad_to);
    if (packet.empty() ||
        !crypto::protect(packet, layout_.pn_offset, layout_.pn_length, packet_number_, keys.aead, keys.hp))
        return 0;
    return packet.size();
}

std::size_t PacketBuilder::finish(std::size_t payload_len, crypto::OneRttKeys& keys, std::size_t pad_to) {
    if (long_header_) {
        ok_ = false;
        return 0;
    }
    const auto packet = close(payload_len, pad_to);
    if (packet.empty() || !keys.protect(packet, layout_.pn_offset, layout_.pn_length, packet_number_)) return 0;
    return packet.size();
}

const char* describe(OpenError e) {
    switch (e) {
        case OpenError::none: return "no error";
        case OpenError::no_keys: return "no keys for the packet's level";
        case OpenError::header: return "no packet number or header protection sample";
        case OpenError::decrypt: return "packet failed authentication";
        case OpenError::reserved_bits: return "reserved bits set";
        case OpenError::key_update_error: return "invalid key update";
        case OpenError::packet_number: return "packet number beyond 2^62-1";
    }
    return "unknown open error";
}

OpenError open_packet(std::span<std::uint8_t> datagram, const PacketView& view, crypto::DirectionKeys* keys,
                      std::optional<std::uint64_t> largest_received, OpenedPacket& out) {
    return open_packet(datagram, datagram, view, keys, largest_received, out);
}

OpenError open_packet(std::span<std::uint8_t> datagram, const PacketView& view, crypto::OneRttKeys* keys,
                      std::optional<std::uint64_t> largest_received, Instant now, Duration pto,
                      OpenedPacket& out) {
    return open_packet(datagram, datagram, view, keys, largest_received, now, pto, out);
}

OpenError open_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> opened, const PacketView& view,
                      crypto::DirectionKeys* keys, std::optional<std::uint64_t> largest_received, OpenedPacket& out) {
    out = fields_of(view);
    if (keys == nullptr || (view.has_packet_number() && !is_long_protected(view.kind))) return OpenError::no_keys;
    const auto packet = packet_in(datagram, opened, view);
    std::size_t header_length = 0;
    if (const OpenError e = unmask(packet, view, keys->hp, largest_received, out, header_length);
        e != OpenError::none)
        return e;
    const auto plaintext = crypto::open_payload(packet.in, packet.out, header_length, out.packet_number, keys->aead);
    if (!plaintext) return OpenError::decrypt;
    out.payload = *plaintext;
    return check_reserved(packet.out[0]);
}

OpenError open_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> opened, const PacketView& view,
                      crypto::OneRttKeys* keys, std::optional<std::uint64_t> largest_received, Instant now,
                      Duration pto, OpenedPacket& out) {
    out = fields_of(view);
    if (keys == nullptr || (view.has_packet_number() && view.kind != PacketKind::one_rtt)) return OpenError::no_keys;
    const auto packet = packet_in(datagram, opened, view);
    std::size_t header_length = 0;
    if (const OpenError e = unmask(packet, view, keys->read_hp(), largest_received, out, header_length);
        e != OpenError::none)
        return e;
    const auto result =
        keys->open(packet.in, packet.out, header_length, out.key_phase, out.packet_number, now, pto);
    if (result.result == crypto::OneRttKeys::Open::failed) return OpenError::decrypt;
    if (result.result == crypto::OneRttKeys::Open::key_update_error) return OpenError::key_update_error;
    out.payload = result.plaintext;
    return check_reserved(packet.out[0]);
}

}  // namespace ndm::wire::quic
