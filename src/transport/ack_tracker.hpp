// Receiver side of acknowledgement (RFC 9000 §13.2): remembers which packet
// numbers arrived, detects duplicates, decides when an ACK is due and builds
// the ACK frame, with the space's ECN counts (§13.4.1) once any is non-zero.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ndm/ecn.hpp"
#include "ndm/time.hpp"
#include "wire/frame.hpp"
#include "transport/range_set.hpp"

namespace ndm::transport {

class AckTracker {
public:
    struct Config {
        Duration max_ack_delay = std::chrono::milliseconds{25};  // our transport parameter
        unsigned ack_eliciting_threshold = 2;  // RFC 9000 §13.2.2: ACK every 2nd packet
        std::size_t max_ranges = wire::kMaxAckRanges;
        // Received ranges remembered (ConnectionLimits::ack_ranges_tracked);
        // at least 4 x max_ranges, so an ACK never lacks ranges to report.
        std::size_t max_intervals = 256;
    };

    explicit AckTracker(Config cfg);

    // What the peer asked for in an ACK_FREQUENCY frame
    // (draft-ietf-quic-ack-frequency-14 §4, §6).
    struct Frequency {
        std::uint64_t ack_eliciting_threshold = 1;  // packets left unacknowledged: ACK after more than this
        Duration max_ack_delay = std::chrono::milliseconds{25};
        std::uint64_t reordering_threshold = 1;     // 0: none elicits an immediate ACK; 1: RFC 9000 §13.2.1
    };
    // Applies a request unless its sequence number is not above every one
    // applied before (§4: obsolete, reordered). Thresholds above
    // kMaxFrequencyThreshold are taken as it (a receiver may acknowledge
    // more often than asked). Returns whether it was applied.
    bool set_frequency(std::uint64_t sequence, const Frequency& f);
    static constexpr std::uint64_t kMaxFrequencyThreshold = 1024;
    // IMMEDIATE_ACK (§5) in a packet just recorded: acknowledge now.
    void request_immediate_ack(Instant now) {
        if (pending_) deadline_ = now;
    }

    // Records a packet that decrypted successfully. Returns false for a
    // duplicate (already received, or below the duplicate floor): the caller
    // drops it without processing. `ecn` is the codepoint of the datagram
    // that carried the packet: counted once per packet, duplicates not
    // (RFC 9000 §13.4.1).
    bool on_packet_received(std::uint64_t pn, bool ack_eliciting, Instant now, Ecn ecn = Ecn::not_ect);

    // When an ACK must be sent; kNever when no ack-eliciting packet awaits one.
    [[nodiscard]] Instant ack_deadline() const { return deadline_; }
    // Some packet (ack-eliciting or not) arrived since the last ACK: an ACK
    // frame may be bundled into an outgoing packet.
    [[nodiscard]] bool ack_pending() const { return pending_; }

    // Ranges descending, at most max_ranges (the highest ones), ack_delay =
    // now − arrival of the largest (RFC 9000 §13.2.5), and the ECN counts
    // when any packet arrived marked (an ACK_ECN frame, §19.3.2). Requires
    // has_received().
    [[nodiscard]] wire::AckFrame build_ack(Instant now) const;
    void on_ack_sent(Instant now);
    // A packet carrying our ACK frame with this Largest Acknowledged was itself
    // acknowledged: packet numbers at or below it need not be reported again
    // (RFC 9000 §13.2.4). Duplicates are still detected.
    void on_ack_acknowledged(std::uint64_t largest_acked_in_that_ack);

    [[nodiscard]] bool has_received() const { return has_received_; }
    [[nodiscard]] std::uint64_t largest_received() const { return largest_; }
    // Packet numbers below this are treated as duplicates (state was discarded).
    [[nodiscard]] std::uint64_t duplicate_floor() const { return dup_floor_; }
    [[nodiscard]] const RangeSet& received() const { return received_; }
    [[nodiscard]] const Config& config() const { return cfg_; }
    // Packets received per ECN codepoint, not-ECT aside (RFC 9000 §13.4.1).
    [[nodiscard]] const wire::EcnCounts& ecn_counts() const { return ecn_; }

private:
    [[nodiscard]] bool missing_between(std::uint64_t a, std::uint64_t b) const;
    // Whether an ack-eliciting packet pn calls for an immediate ACK for
    // reordering: RFC 9000 §13.2.1's rule (out_of_order), or the requested
    // reordering threshold's (ack-frequency-14 §6.2) once one was received.
    [[nodiscard]] bool reordering_elicits_ack(std::uint64_t pn, bool out_of_order) const;
    // ack-frequency-14 §6.3: with a threshold above 1, only the first CE
    // after non-CE packets is acknowledged at once.
    [[nodiscard]] bool ce_elicits_ack(Ecn ecn) const;

    Config cfg_;
    std::size_t max_intervals_;
    RangeSet received_;             // every packet number >= dup_floor_ that arrived
    std::uint64_t dup_floor_ = 0;
    std::uint64_t report_floor_ = 0;  // ACK frames omit packet numbers below this
    bool has_received_ = false;
    std::uint64_t largest_ = 0;
    Instant largest_time_{};        // arrival of largest_
    bool has_eliciting_ = false;
    std::uint64_t largest_eliciting_ = 0;
    bool pending_ = false;
    unsigned eliciting_since_ack_ = 0;
    Instant deadline_ = kNever;
    wire::EcnCounts ecn_;
    // ACK frequency (set_frequency): the request in force, if any, and what
    // its reordering rule needs.
    std::optional<Frequency> frequency_;
    std::uint64_t frequency_sequence_ = 0;
    bool ack_sent_ = false;
    std::uint64_t largest_acked_sent_ = 0;  // Largest Acknowledged of the last ACK sent
    bool last_ce_ = false;                  // the previous packet arrived CE-marked
};

}  // namespace ndm::transport
