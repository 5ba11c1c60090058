// Protected QUIC v1 packets (RFC 9000 §17, RFC 9001 §5), sans-I/O: the glue
// between quic_header (header layout, DatagramPackets) and src/crypto
// (AEAD, header protection, 1-RTT key phases). Works in the caller's
// datagram buffer, in place, several packets per datagram (§12.2).
//
// Send, per packet:  PacketBuilder b(datagram, pos, header) → frames through a
// Writer over b.payload_space() → pos += b.finish(written, keys[, pad_to]).
// Receive, per packet of DatagramPackets: open_packet(datagram, view, keys,
// largest received in the space, out) → frames in out.payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/key_phase.hpp"
#include "crypto/packet_protection.hpp"
#include "ndm/time.hpp"
#include "wire/quic_header.hpp"

namespace ndm::wire::quic {

// RFC 9000 §14.1: a client's Initial datagrams, and a server's ack-eliciting
// ones, are at least 1200 bytes.
inline constexpr std::size_t kMinInitialDatagramSize = 1200;

// Bytes a packet adds around its frames: the header through the packet
// number and the AEAD tag (RFC 9001 §5.3). The connection sizes frames with
// it; a builder's payload_space() already has it subtracted.
[[nodiscard]] std::size_t packet_overhead(const LongHeader& h);
[[nodiscard]] std::size_t packet_overhead(const ShortHeader& h);

// One packet written at datagram[pos..], sealed by finish(). ok() is false
// when the header does not fit or a field is out of range
// (write_long_header); finish() then returns 0.
class PacketBuilder {
public:
    PacketBuilder(std::span<std::uint8_t> datagram, std::size_t pos, const LongHeader& h);
    PacketBuilder(std::span<std::uint8_t> datagram, std::size_t pos, const ShortHeader& h);

    [[nodiscard]] bool ok() const { return ok_; }
    // Where the frames go: after the header, up to the datagram's end minus
    // the AEAD tag. Empty when !ok() or after finish().
    [[nodiscard]] std::span<std::uint8_t> payload_space() const;

    // Seals the packet whose first payload_len bytes of payload_space() hold
    // frames: appends zero bytes (PADDING frames, RFC 9000 §19.1) up to
    // min_payload_length() so the header protection sample exists (RFC 9001
    // §5.4.2) and until pos + size reaches pad_to (e.g.
    // kMinInitialDatagramSize, §14.1), patches Length, AEAD-seals with the
    // full packet number as the nonce (§5.3) and masks the header (§5.4).
    // Returns the packet's size, or 0 (nothing usable written) when the
    // payload or padding does not fit, Length overflows its field, or the
    // keys refuse (OneRttKeys: confidentiality limit, RFC 9001 §6.6). Once.
    std::size_t finish(std::size_t payload_len, crypto::DirectionKeys& keys, std::size_t pad_to = 0);
    // 1-RTT (short header only): the current write keys and key phase bit,
    // which replaces ShortHeader::key_phase (RFC 9001 §6).
    std::size_t finish(std::size_t payload_len, crypto::OneRttKeys& keys, std::size_t pad_to = 0);

private:
    // The sealed packet's span with padding added, or empty if it cannot be.
    std::span<std::uint8_t> close(std::size_t payload_len, std::size_t pad_to);

    std::span<std::uint8_t> datagram_;
    std::size_t pos_ = 0;
    HeaderLayout layout_;
    std::uint64_t packet_number_ = 0;
    bool long_header_ = false;
    bool ok_ = false;
};

enum class OpenError : std::uint8_t {
    none,
    no_keys,           // no keys given, or keys of another level than the packet's
    header,            // no packet number (Retry, VN, other version), the view is
                       // not inside the datagram, or the sample runs past it
    decrypt,           // AEAD open failed: drop silently (RFC 9001 §5.5, §9.5)
    reserved_bits,     // opened, but reserved bits set: PROTOCOL_VIOLATION (RFC 9000 §17.2, §17.3.1)
    key_update_error,  // OneRttKeys: KEY_UPDATE_ERROR (RFC 9001 §6.2, §6.4)
    packet_number,     // expands past 2^62-1, which no packet has (RFC 9000 §12.3): dropped
};

// A readable name of the error, for logs and drop reasons.
const char* describe(OpenError e);

// An opened packet; the spans view the caller's datagram.
struct OpenedPacket {
    PacketKind kind = PacketKind::one_rtt;
    std::uint32_t version = 0;        // long headers only
    std::uint64_t packet_number = 0;  // expanded (RFC 9000 §A.3)
    std::span<std::uint8_t> payload;  // the plaintext frames, decrypted in place
    bool key_phase = false;           // short header (RFC 9001 §6)
    bool spin = false;                // short header (RFC 9000 §17.4)
    std::span<const std::uint8_t> dcid;
    std::span<const std::uint8_t> scid;   // long headers only
    std::span<const std::uint8_t> token;  // Initial only
};

// Opens `view`, a packet DatagramPackets found in `datagram` (the caller's
// mutable copy): removes header protection, expands the packet number from
// the largest one received in its space (nullopt: none yet), opens the
// payload in place and then checks the reserved bits. Initial, 0-RTT and
// Handshake with DirectionKeys (the read keys of that level). On any error
// the packet's bytes are unspecified, the other packets untouched; nothing
// throws.
[[nodiscard]] OpenError open_packet(std::span<std::uint8_t> datagram, const PacketView& view,
                                    crypto::DirectionKeys* keys, std::optional<std::uint64_t> largest_received,
                                    OpenedPacket& out);
// 1-RTT with key update detection (RFC 9001 §6.3); now and pto time the
// previous keys' discard (§6.5). Failures count toward the integrity limit:
// the caller checks keys->integrity_limit_reached() (§6.6).
[[nodiscard]] OpenError open_packet(std::span<std::uint8_t> datagram, const PacketView& view,
                                    crypto::OneRttKeys* keys, std::optional<std::uint64_t> largest_received,
                                    Instant now, Duration pto, OpenedPacket& out);

// Both from the datagram as received into `opened`, a buffer at least as
// large, where each packet's unprotected header and plaintext land at the
// packet's own offset: the received bytes are not copied first, nor changed
// (a stateless reset is recognised by them). out.payload views `opened`; the
// connection IDs and token view `datagram`.
[[nodiscard]] OpenError open_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> opened,
                                    const PacketView& view, crypto::DirectionKeys* keys,
                                    std::optional<std::uint64_t> largest_received, OpenedPacket& out);
[[nodiscard]] OpenError open_packet(std::span<const std::uint8_t> datagram, std::span<std::uint8_t> opened,
                                    const PacketView& view, crypto::OneRttKeys* keys,
                                    std::optional<std::uint64_t> largest_received, Instant now, Duration pto,
                                    OpenedPacket& out);

}  // namespace ndm::wire::quic
