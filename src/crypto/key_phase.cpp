#include "crypto/key_phase.hpp"

#include <algorithm>

namespace ndm::crypto {

namespace {

constexpr std::uint8_t kKeyPhaseBit = 0x04;  // RFC 9000 §17.3.1

Aead next_aead(const PacketKeys& keys, const Secret& secret, QuicVersion version) {
    return Aead(updated_keys(keys, next_secret(keys.suite, secret, version), version));
}

}  // namespace

OneRttKeys::OneRttKeys(CipherSuite suite, QuicVersion version, const Secret& read_secret, const Secret& write_secret)
    : OneRttKeys(suite, version, read_secret, write_secret, AeadUsage(suite)) {}

OneRttKeys::OneRttKeys(CipherSuite suite, QuicVersion version, const Secret& read_secret, const Secret& write_secret,
                       AeadUsage usage)
    : suite_(suite),
      version_(version),
      read_keys_(derive_packet_keys(suite, read_secret, version)),
      write_keys_(derive_packet_keys(suite, write_secret, version)),
      read_hp_(read_keys_),
      write_hp_(write_keys_),
      read_secret_(read_secret),
      write_secret_(write_secret),
      read_(read_keys_),
      next_read_(next_aead(read_keys_, read_secret_, version)),
      write_(write_keys_),
      usage_(usage) {}

bool OneRttKeys::protect(std::span<std::uint8_t> packet, std::size_t pn_offset, std::size_t pn_length,
                         std::uint64_t pn) {
    if (packet.empty() || usage_.confidentiality_exhausted()) return false;
    const std::uint8_t saved = packet[0];
    packet[0] = static_cast<std::uint8_t>((packet[0] & ~kKeyPhaseBit) | (write_phase_ ? kKeyPhaseBit : 0));
    if (!crypto::protect(packet, pn_offset, pn_length, pn, write_, write_hp_)) {
        packet[0] = saved;
        return false;
    }
    usage_.on_sealed();
    if (!first_write_pn_) first_write_pn_ = pn;
    answered_unsent_ = false;
    return true;
}

void OneRttKeys::on_packet_acked(std::uint64_t pn) {
    if (first_write_pn_ && pn >= *first_write_pn_) current_write_acked_ = true;
}

bool OneRttKeys::can_initiate_update() const { return write_phase_ == read_phase_ && current_write_acked_; }

bool OneRttKeys::initiate_update() {
    if (!can_initiate_update()) return false;
    rotate_write();
    return true;
}

void OneRttKeys::rotate_write() {
    write_secret_ = next_secret(suite_, write_secret_, version_);
    write_keys_ = updated_keys(write_keys_, write_secret_, version_);
    write_ = Aead(write_keys_);
    write_phase_ = !write_phase_;
    first_write_pn_.reset();
    current_write_acked_ = false;
    usage_.on_key_updated();
    ++updates_;
}

void OneRttKeys::rotate_read(Instant now, Duration pto) {
    previous_ = std::move(read_);
    discard_at_ = now + 3 * pto;
    read_secret_ = next_secret(suite_, read_secret_, version_);
    read_keys_ = updated_keys(read_keys_, read_secret_, version_);
    read_ = std::move(next_read_);
    next_read_ = next_aead(read_keys_, read_secret_, version_);
    read_phase_ = !read_phase_;
    largest_read_pn_.reset();
    lowest_read_pn_.reset();
}

void OneRttKeys::discard_expired(Instant now) {
    if (previous_ && now >= discard_at_) previous_.reset();
}

OneRttKeys::Opened OneRttKeys::open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                    std::size_t header_length, bool key_phase_bit, std::uint64_t pn, Instant now,
                                    Duration pto) {
    discard_expired(now);
    const bool current = key_phase_bit == read_phase_;
    // §6.5: a packet of the other phase numbered below this phase's first
    // is a late one of the previous phase; anything else there is the next.
    const bool old = !current && previous_ && lowest_read_pn_ && pn < *lowest_read_pn_;
    Aead& aead = current ? read_ : old ? *previous_ : next_read_;
    const auto plaintext = open_payload(in, out, header_length, pn, aead);
    if (!plaintext) {
        usage_.on_open_failed();
        return {};
    }
    if (!current && !old) {
        if ((largest_read_pn_ && pn < *largest_read_pn_) || answered_unsent_) return {Open::key_update_error, {}};
        rotate_read(now, pto);
        if (write_phase_ != read_phase_) {  // §6.2: answer the peer's update
            rotate_write();
            answered_unsent_ = true;
        }
    }
    if (!old) {
        largest_read_pn_ = std::max(largest_read_pn_.value_or(pn), pn);
        lowest_read_pn_ = std::min(lowest_read_pn_.value_or(pn), pn);
    }
    return {Open::ok, *plaintext};
}

}  // namespace ndm::crypto
