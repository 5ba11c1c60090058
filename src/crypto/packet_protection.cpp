#include "crypto/packet_protection.hpp"

namespace ndm::crypto {

namespace {

// RFC 9001 §5.4.1: first byte and packet number bytes XOR the mask.
void apply_mask(std::span<std::uint8_t> packet, std::size_t pn_offset, std::size_t pn_length, const HpMask& mask) {
    packet[0] ^= static_cast<std::uint8_t>(mask[0] & first_byte_mask_bits(packet[0]));
    for (std::size_t i = 0; i < pn_length; ++i) packet[pn_offset + i] ^= mask[1 + i];
}

// §5.4.2: the sample starts 4 bytes after the start of the packet number
// field, whatever its length; the caller has checked that it fits.
std::span<const std::uint8_t, kHpSampleSize> sample_of(std::span<const std::uint8_t> packet, std::size_t pn_offset) {
    return packet.subspan(pn_offset + kMaxPacketNumberLength).first<kHpSampleSize>();
}

bool fits_sample(std::size_t packet_size, std::size_t pn_offset) {
    return pn_offset >= 1 && pn_offset <= packet_size && packet_size - pn_offset >= kMinBytesAfterPnOffset;
}

}  // namespace

LevelKeys initial_keys(std::span<const std::uint8_t> client_dcid, bool is_server, QuicVersion version) {
    const InitialSecrets secrets = initial_secrets(client_dcid, version);
    constexpr CipherSuite suite = CipherSuite::aes128_gcm_sha256;
    const PacketKeys client = derive_packet_keys(suite, secrets.client, version);
    const PacketKeys server = derive_packet_keys(suite, secrets.server, version);
    return is_server ? LevelKeys(client, server) : LevelKeys(server, client);
}

bool protect(std::span<std::uint8_t> packet, std::size_t pn_offset, std::size_t pn_length, std::uint64_t pn,
             Aead& aead, const HeaderProtection& hp) {
    if (pn_length < 1 || pn_length > kMaxPacketNumberLength || !fits_sample(packet.size(), pn_offset)) return false;
    const std::size_t header_length = pn_offset + pn_length;
    if (packet.size() - header_length < kAeadTagSize) return false;
    if (static_cast<std::size_t>(packet[0] & 0x03) + 1 != pn_length) return false;
    aead.seal(pn, packet.first(header_length), packet.subspan(header_length));
    apply_mask(packet, pn_offset, pn_length, hp.mask(sample_of(packet, pn_offset)));
    return true;
}

std::optional<UnprotectedHeader> remove_header_protection(std::span<std::uint8_t> packet, std::size_t pn_offset,
                                                          const HeaderProtection& hp) {
    if (!fits_sample(packet.size(), pn_offset)) return std::nullopt;
    const HpMask mask = hp.mask(sample_of(packet, pn_offset));
    UnprotectedHeader out;
    out.first_byte = static_cast<std::uint8_t>(packet[0] ^ (mask[0] & first_byte_mask_bits(packet[0])));
    out.pn_length = static_cast<std::size_t>(out.first_byte & 0x03) + 1;
    packet[0] = out.first_byte;
    for (std::size_t i = 0; i < out.pn_length; ++i) {
        packet[pn_offset + i] ^= mask[1 + i];
        out.truncated_pn = (out.truncated_pn << 8) | packet[pn_offset + i];
    }
    return out;
}

std::optional<std::span<std::uint8_t>> open_payload(std::span<std::uint8_t> packet, std::size_t header_length,
                                                    std::uint64_t pn, Aead& aead) {
    return open_payload(packet, packet, header_length, pn, aead);
}

std::optional<std::span<std::uint8_t>> open_payload(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                                    std::size_t header_length, std::uint64_t pn, Aead& aead) {
    if (out.size() != in.size() || header_length > in.size() || in.size() - header_length < kAeadTagSize)
        return std::nullopt;
    const auto plaintext = out.subspan(header_length, in.size() - header_length - kAeadTagSize);
    if (!aead.open(pn, out.first(header_length), in.subspan(header_length), plaintext)) return std::nullopt;
    return plaintext;
}

}  // namespace ndm::crypto
