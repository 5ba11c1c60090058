// The labelling side of scenario generation (docs/ndm-training.md §2), private
// to src/train and exposed for tests: it assigns a congestion event's lost
// packets to the emulator's drops. The pipeline API is include/ndm/train.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "ndm/emu.hpp"
#include "ndm/train.hpp"

namespace ndm::train {

struct SentPacket {
    Instant time;
    std::uint64_t bytes = 0;
    enum class Fate : std::uint8_t { unknown, delivered, dropped } fate = Fate::unknown;
    emu::DropReason reason = emu::DropReason::random;
};

// Ground truth for one flow: the sender's in-flight packets in send order
// (seq), their fate at the emulator, and the attribution of congestion events.
class LossLedger {
public:
    // The controller was told a packet was sent (PacketSent, in-flight only).
    void on_packet_sent(Instant time, std::uint64_t bytes);
    // The link accepted a datagram: it is the packet just announced, if any
    // (the transport announces each in-flight packet right before the
    // simulator hands it to the link), else a non-in-flight datagram (ACK).
    void on_link_send();
    // The emulator's observer.
    void on_emulator(const emu::PacketEvent& ev);
    // The rule (docs/ndm-training.md §2): the event's lost packets are the
    // oldest not yet attributed dropped packets sent at or before
    // largest_lost_sent_time, at most packets_lost of them; the rest of
    // packets_lost were delivered late (spurious).
    std::array<std::uint32_t, kCauseCount> attribute(std::uint64_t packets_lost, Instant largest_lost_sent_time);

    [[nodiscard]] const std::vector<SentPacket>& packets() const { return sent_; }
    [[nodiscard]] std::size_t unattributed_drops() const { return pending_.size(); }

private:
    std::vector<SentPacket> sent_;
    std::vector<std::int64_t> index_to_seq_;  // emulator send index → seq, −1 for non-in-flight
    std::set<std::uint64_t> pending_;         // dropped, not yet attributed seqs
    bool announced_ = false;
};

// Label of an event from its causes: congestive when any packet was a
// queue overflow, AQM (CoDel) or trace-outage drop.
int label_of(const std::array<std::uint32_t, kCauseCount>& causes);

}  // namespace ndm::train
