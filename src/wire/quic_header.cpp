// QUIC v1 headers (RFC 9000 §17) and coalesced packets (§12.2). Every length
// from the peer is compared with what is left of the datagram before it is
// used; Reader refuses reads past its end, so a truncation anywhere is
// HeaderError::truncated.
#include "wire/quic_header.hpp"

#include <algorithm>
#include <optional>

#include "crypto/retry.hpp"

namespace ndm::wire::quic {

namespace {


std::uint8_t pn_length_bits(std::size_t pn_length) { return static_cast<std::uint8_t>(pn_length - 1); }

bool valid_pn_length(std::size_t n) { return n >= 1 && n <= crypto::kMaxPacketNumberLength; }

// A length-prefixed CID (RFC 8999 §5.1: u8 length, up to 255 bytes; v1
// caps it at 20, §17.2).
HeaderError read_cid(Reader& r, std::size_t max_length, std::span<const std::uint8_t>& cid) {
    const auto len = r.u8();
    if (!len) return HeaderError::truncated;
    if (*len > max_length) return HeaderError::cid_too_long;
    const auto b = r.bytes(*len);
    if (!b) return HeaderError::truncated;
    cid = *b;
    return HeaderError::none;
}

// §17.2.1: after the CIDs, the supported versions up to the end.
HeaderError parse_version_negotiation(Reader& r, PacketView& out) {
    out.kind = PacketKind::version_negotiation;
    out.versions = r.rest();
    if (out.versions.empty() || out.versions.size() % 4 != 0) return HeaderError::bad_version_list;
    return HeaderError::none;
}

// §17.2.5: token up to the 16-byte integrity tag at the end.
HeaderError parse_retry(Reader& r, PacketView& out) {
    out.kind = PacketKind::retry;
    if (r.remaining() < crypto::kAeadTagSize) return HeaderError::truncated;
    out.token = r.rest().first(r.remaining() - crypto::kAeadTagSize);
    return HeaderError::none;
}

// Initial, 0-RTT, Handshake: [token] Length pn payload. The packet ends
// Length bytes after the packet number offset (§12.2).
HeaderError parse_protected_long(Reader& r, std::span<const std::uint8_t> data, PacketView& out) {
    if (out.kind == PacketKind::initial) {
        const auto token_length = r.varint();
        if (!token_length) return HeaderError::truncated;
        if (*token_length > r.remaining()) return HeaderError::truncated;
        out.token = *r.bytes(static_cast<std::size_t>(*token_length));
    }
    const auto length = r.varint();
    if (!length) return HeaderError::truncated;
    out.pn_offset = r.position();
    if (*length > r.remaining()) return HeaderError::length_past_datagram;
    if (*length < crypto::kMinBytesAfterPnOffset) return HeaderError::length_too_short;
    out.packet = data.first(out.pn_offset + static_cast<std::size_t>(*length));
    return HeaderError::none;
}

HeaderError parse_long(std::span<const std::uint8_t> data, PacketView& out) {
    Reader r(data);
    r.u8();  // the first byte, already read by the caller
    const auto version = r.u32();
    if (!version) return HeaderError::truncated;
    out.version = *version;
    const std::optional<crypto::QuicVersion> known = crypto::known_version(*version);
    // RFC 8999 §5.1: CIDs of versions ndm does not speak may be up to 255 bytes.
    const std::size_t max_cid = known ? kMaxCidLength : kMaxInvariantCidLength;
    if (const HeaderError e = read_cid(r, max_cid, out.dcid); e != HeaderError::none) return e;
    if (const HeaderError e = read_cid(r, max_cid, out.scid); e != HeaderError::none) return e;
    out.packet = data;
    if (*version == 0) return parse_version_negotiation(r, out);
    if (!known) {
        out.kind = PacketKind::unknown_version;
        return HeaderError::none;
    }
    // §17.2: the fixed bit is a v1 (and v2) property; VN and other versions may clear it.
    if ((out.first_byte & kFixedBit) == 0) return HeaderError::fixed_bit_zero;
    out.kind = long_packet_kind(*known, out.first_byte);
    if (out.kind == PacketKind::retry) return parse_retry(r, out);
    return parse_protected_long(r, data, out);
}

// §17.3: first byte, DCID of the length this endpoint issues, pn.
HeaderError parse_short(std::span<const std::uint8_t> data, std::size_t dcid_length, PacketView& out) {
    out.kind = PacketKind::one_rtt;
    if ((out.first_byte & kFixedBit) == 0) return HeaderError::fixed_bit_zero;
    if (dcid_length > kMaxCidLength) return HeaderError::cid_too_long;
    if (data.size() - 1 < dcid_length) return HeaderError::truncated;
    out.dcid = data.subspan(1, dcid_length);
    out.pn_offset = 1 + dcid_length;
    if (data.size() - out.pn_offset < crypto::kMinBytesAfterPnOffset) return HeaderError::length_too_short;
    out.packet = data;
    return HeaderError::none;
}

}  // namespace

const char* describe(HeaderError e) {
    switch (e) {
        case HeaderError::none: return "no error";
        case HeaderError::truncated: return "header truncated";
        case HeaderError::fixed_bit_zero: return "fixed bit is 0";
        case HeaderError::cid_too_long: return "connection ID longer than 20 bytes";
        case HeaderError::length_past_datagram: return "Length runs past the datagram";
        case HeaderError::length_too_short: return "packet too short for the header protection sample";
        case HeaderError::bad_version_list: return "version negotiation list empty or not whole versions";
        case HeaderError::chose_listed_version: return "version negotiation lists the chosen version";
        case HeaderError::bad_retry: return "Retry with an empty token or not version 1";
        case HeaderError::retry_integrity: return "Retry integrity tag mismatch";
    }
    return "unknown header error";
}

HeaderError parse_packet_header(std::span<const std::uint8_t> data, std::size_t short_dcid_length,
                                PacketView& out) {
    out = PacketView{};
    if (data.empty()) return HeaderError::truncated;
    out.first_byte = data[0];
    if ((data[0] & kLongForm) != 0) return parse_long(data, out);
    return parse_short(data, short_dcid_length, out);
}

bool DatagramPackets::next(PacketView& out) {
    while (error_ == HeaderError::none && pos_ < datagram_.size()) {
        const HeaderError e = parse_packet_header(datagram_.subspan(pos_), short_dcid_length_, out);
        if (e != HeaderError::none) {
            error_ = e;
            return false;
        }
        out.offset = pos_;
        pos_ += out.packet.size();
        if (!have_first_) {
            have_first_ = true;
            first_dcid_ = out.dcid;
            return true;
        }
        // §12.2: receivers SHOULD ignore coalesced packets with another DCID.
        if (std::ranges::equal(out.dcid, first_dcid_)) return true;
        ++dropped_;
    }
    return false;
}

bool write_long_header(Writer& w, const LongHeader& h, HeaderLayout& layout) {
    if (!valid_pn_length(h.pn_length) || (h.length_bytes != 2 && h.length_bytes != 4)) return false;
    if (h.type != LongType::initial && !h.token.empty()) return false;
    const std::optional<crypto::QuicVersion> version = crypto::known_version(h.version);
    if (!version) return false;
    const std::size_t start = w.position();
    const auto type = long_type_bits(*version, static_cast<PacketKind>(h.type));
    const auto first = static_cast<std::uint8_t>(kLongForm | kFixedBit | type << 4 | pn_length_bits(h.pn_length));
    bool ok = w.u8(first) && w.u32(h.version) && w.u8(h.dcid.length) && w.bytes(h.dcid.span()) &&
              w.u8(h.scid.length) && w.bytes(h.scid.span());
    if (ok && h.type == LongType::initial) ok = w.varint(h.token.size()) && w.bytes(h.token);
    layout.length_offset = w.position() - start;
    layout.length_bytes = h.length_bytes;
    // Reserve the Length field; finish_long_header() writes its value.
    ok = ok && w.varint_fixed(0, h.length_bytes);
    layout.pn_offset = w.position() - start;
    layout.pn_length = h.pn_length;
    const std::uint64_t mask = (std::uint64_t{1} << (8 * h.pn_length)) - 1;
    ok = ok && w.uint(h.packet_number & mask, h.pn_length);
    layout.payload_offset = w.position() - start;
    return ok;
}

bool write_short_header(Writer& w, const ShortHeader& h, HeaderLayout& layout) {
    if (!valid_pn_length(h.pn_length)) return false;
    const auto first = static_cast<std::uint8_t>(kFixedBit | (h.spin ? kSpinBit : 0) |
                                                 (h.key_phase ? kKeyPhaseBit : 0) | pn_length_bits(h.pn_length));
    layout = HeaderLayout{};
    layout.pn_offset = 1 + h.dcid.length;
    layout.pn_length = h.pn_length;
    layout.payload_offset = layout.pn_offset + h.pn_length;
    const std::uint64_t mask = (std::uint64_t{1} << (8 * h.pn_length)) - 1;
    return w.u8(first) && w.bytes(h.dcid.span()) && w.uint(h.packet_number & mask, h.pn_length);
}

bool finish_long_header(std::span<std::uint8_t> packet, const HeaderLayout& layout) {
    if (layout.length_bytes == 0 || packet.size() < layout.payload_offset + crypto::kAeadTagSize) return false;
    const std::size_t payload = packet.size() - layout.payload_offset - crypto::kAeadTagSize;
    if (payload < min_payload_length(layout.pn_length)) return false;
    Writer w(packet.subspan(layout.length_offset, layout.length_bytes));
    return w.varint_fixed(packet.size() - layout.pn_offset, layout.length_bytes);
}

std::size_t write_retry(std::span<std::uint8_t> out, crypto::QuicVersion version, const ConnectionId& dcid,
                        const ConnectionId& scid, std::span<const std::uint8_t> token,
                        std::span<const std::uint8_t> odcid, std::uint8_t unused_bits) {
    if (token.empty() || odcid.size() > kMaxCidLength) return 0;
    Writer w(out);
    const auto first = static_cast<std::uint8_t>(kLongForm | kFixedBit |
                                                 long_type_bits(version, PacketKind::retry) << 4 | (unused_bits & 0x0f));
    const bool ok = w.u8(first) && w.u32(crypto::version_number(version)) &&
                    w.u8(dcid.length) && w.bytes(dcid.span()) && w.u8(scid.length) && w.bytes(scid.span()) &&
                    w.bytes(token) && w.remaining() >= crypto::kAeadTagSize;
    if (!ok) return 0;
    const crypto::RetryTag tag = crypto::retry_integrity_tag(version, odcid, w.written());
    if (!w.bytes(tag)) return 0;
    return w.position();
}

HeaderError verify_retry(const PacketView& retry, std::span<const std::uint8_t> odcid) {
    const std::optional<crypto::QuicVersion> version = crypto::known_version(retry.version);
    if (retry.kind != PacketKind::retry || !version || retry.token.empty()) return HeaderError::bad_retry;
    if (odcid.size() > kMaxCidLength || !crypto::verify_retry_integrity(*version, odcid, retry.packet))
        return HeaderError::retry_integrity;
    return HeaderError::none;
}

std::size_t write_version_negotiation(std::span<std::uint8_t> out, std::span<const std::uint8_t> client_dcid,
                                      std::span<const std::uint8_t> client_scid,
                                      std::span<const std::uint32_t> versions, std::uint8_t random_bits) {
    if (versions.empty() || client_dcid.size() > kMaxInvariantCidLength ||
        client_scid.size() > kMaxInvariantCidLength)
        return 0;
    Writer w(out);
    // RFC 8999 §6: the DCID echoes the client's SCID and the SCID its DCID.
    // §17.2.1: the unused bits are arbitrary, but 0x40 SHOULD be set so the
    // packet demultiplexes like QUIC (RFC 7983).
    bool ok = w.u8(static_cast<std::uint8_t>(kLongForm | kFixedBit | (random_bits & 0x3f))) && w.u32(0) &&
              w.u8(static_cast<std::uint8_t>(client_scid.size())) && w.bytes(client_scid) &&
              w.u8(static_cast<std::uint8_t>(client_dcid.size())) && w.bytes(client_dcid);
    for (const std::uint32_t v : versions) ok = ok && w.u32(v);
    return ok ? w.position() : 0;
}

std::uint32_t listed_version(const PacketView& vn, std::size_t i) {
    return detail::load_big_endian<std::uint32_t>(vn.versions.data() + 4 * i);
}

HeaderError check_version_negotiation(const PacketView& vn, std::uint32_t chosen_version) {
    if (vn.kind != PacketKind::version_negotiation || vn.versions.empty() || vn.versions.size() % 4 != 0)
        return HeaderError::bad_version_list;
    for (std::size_t i = 0; i < vn.versions.size() / 4; ++i)
        if (listed_version(vn, i) == chosen_version) return HeaderError::chose_listed_version;
    return HeaderError::none;
}

}  // namespace ndm::wire::quic
