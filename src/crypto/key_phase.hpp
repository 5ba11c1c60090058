// 1-RTT keys with key update (RFC 9001 §6): the key phase bit, the current,
// next and previous read keys, initiating an update and detecting the peer's,
// and AEAD usage (§6.6). Time is a parameter: old read keys are kept for
// three PTOs after an update (§6.5) and dropped by the first call past that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/limits.hpp"
#include "crypto/packet_protection.hpp"
#include "ndm/time.hpp"

namespace ndm::crypto {

class OneRttKeys {
public:
    // The TLS session's 1-RTT secrets of this endpoint (read: the peer's).
    // RFC 9369 §3.3.2: the version picks the labels of the keys and of each update.
    OneRttKeys(CipherSuite suite, QuicVersion version, const Secret& read_secret, const Secret& write_secret);
    // With explicit AEAD limits (tests, or a stricter policy).
    OneRttKeys(CipherSuite suite, QuicVersion version, const Secret& read_secret, const Secret& write_secret,
               AeadUsage usage);

    // The backend that protects and opens (backend.hpp).
    [[nodiscard]] Backend backend() const { return write_.backend(); }

    // ---- sending
    // The key phase bit of packets protected now (§6: starts at 0).
    [[nodiscard]] bool key_phase() const { return write_phase_; }
    // protect() of packet_protection.hpp with the current write keys, after
    // setting the short header's key phase bit (0x04) to key_phase(); counts
    // the packet for the confidentiality limit. False as protect(), or when
    // that limit is reached (the caller must close: §6.6).
    [[nodiscard]] bool protect(std::span<std::uint8_t> packet, std::size_t pn_offset, std::size_t pn_length,
                               std::uint64_t pn);
    // §6.1: the caller tells which of its packets were acknowledged; an ack
    // of one sent with the current write keys permits the next update.
    void on_packet_acked(std::uint64_t pn);
    // §6.1: an update may start once the handshake is confirmed (the
    // caller's part), the peer has answered the previous one and a packet of
    // the current phase has been acknowledged.
    [[nodiscard]] bool can_initiate_update() const;
    // Starts sending with the next keys; false (nothing changes) if
    // can_initiate_update() is false.
    bool initiate_update();
    // §6.6: time to initiate an update (close to the confidentiality limit).
    [[nodiscard]] bool wants_update() const { return usage_.should_update(); }

    // ---- receiving
    [[nodiscard]] const HeaderProtection& read_hp() const { return read_hp_; }
    enum class Open : std::uint8_t { ok, failed, key_update_error };
    struct Opened {
        Open result = Open::failed;
        std::span<std::uint8_t> plaintext;
    };
    // open_payload() with the keys the header's key phase bit and the packet
    // number select (§6.3, §6.5): the current ones, the previous ones for a
    // late packet of the old phase, or the next ones, which on success make
    // them current (and answer the peer's update, §6.2). key_update_error
    // (close with KEY_UPDATE_ERROR, nothing changes): a new-phase packet
    // numbered below one of the current phase (§6.4: higher packet numbers
    // never use older keys), or the peer's second update before this
    // endpoint sent anything with the keys answering its first (§6.2).
    // Failures count for the integrity limit (integrity_limit_reached()).
    Opened open(std::span<std::uint8_t> packet, std::size_t header_length, bool key_phase_bit, std::uint64_t pn,
                Instant now, Duration pto) {
        return open(packet, packet, header_length, key_phase_bit, pn, now, pto);
    }
    // The same from the packet as received into `out` (open_payload's in and out).
    Opened open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out, std::size_t header_length,
                bool key_phase_bit, std::uint64_t pn, Instant now, Duration pto);
    // When the previous read keys go (kNever if there are none).
    [[nodiscard]] Instant previous_keys_discard_at() const { return previous_ ? discard_at_ : kNever; }
    void discard_expired(Instant now);

    [[nodiscard]] bool integrity_limit_reached() const { return usage_.integrity_exceeded(); }
    [[nodiscard]] const AeadUsage& usage() const { return usage_; }
    [[nodiscard]] std::uint64_t updates() const { return updates_; }

private:
    void rotate_read(Instant now, Duration pto);
    void rotate_write();

    CipherSuite suite_;
    QuicVersion version_;
    PacketKeys read_keys_;  // current phase, kept for deriving the next
    PacketKeys write_keys_;
    HeaderProtection read_hp_;  // §6.1: the same in every key phase
    HeaderProtection write_hp_;
    Secret read_secret_;    // secret of the current read phase
    Secret write_secret_;
    Aead read_;
    Aead next_read_;        // precomputed (§6.3: no timing signal on arrival)
    std::optional<Aead> previous_;
    Aead write_;
    Instant discard_at_{};
    bool read_phase_ = false;
    bool write_phase_ = false;
    std::optional<std::uint64_t> largest_read_pn_;   // in the current read phase
    std::optional<std::uint64_t> lowest_read_pn_;
    std::optional<std::uint64_t> first_write_pn_;    // first sent in the current write phase
    bool current_write_acked_ = false;
    bool answered_unsent_ = false;  // answered the peer's update, sent nothing since
    AeadUsage usage_;
    std::uint64_t updates_ = 0;  // write-side updates, initiated or answered
};

}  // namespace ndm::crypto
