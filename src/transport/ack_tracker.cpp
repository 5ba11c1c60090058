#include "transport/ack_tracker.hpp"

#include <algorithm>

namespace ndm::transport {

AckTracker::AckTracker(Config cfg)
    : cfg_(cfg), max_intervals_(std::max<std::size_t>(4 * cfg.max_ranges, cfg.max_intervals)) {
    if (cfg_.max_ranges == 0) cfg_.max_ranges = 1;
    if (cfg_.ack_eliciting_threshold == 0) cfg_.ack_eliciting_threshold = 1;
}

// Whether some packet number in (a, b) has not arrived.
bool AckTracker::missing_between(std::uint64_t a, std::uint64_t b) const {
    if (b <= a + 1) return false;
    return received_.contiguous_end(a + 1) < b;
}

bool AckTracker::set_frequency(std::uint64_t sequence, const Frequency& f) {
    if (frequency_ && sequence <= frequency_sequence_) return false;
    frequency_ = f;
    frequency_->ack_eliciting_threshold = std::min(f.ack_eliciting_threshold, kMaxFrequencyThreshold);
    frequency_->reordering_threshold = std::min(f.reordering_threshold, kMaxFrequencyThreshold);
    frequency_sequence_ = sequence;
    // "More than the threshold" is the RFC 9000 counter's threshold + 1.
    cfg_.ack_eliciting_threshold = static_cast<unsigned>(frequency_->ack_eliciting_threshold) + 1;
    cfg_.max_ack_delay = f.max_ack_delay;
    if (eliciting_since_ack_ >= cfg_.ack_eliciting_threshold) deadline_ = std::min(deadline_, largest_time_);
    return true;
}

bool AckTracker::reordering_elicits_ack(std::uint64_t pn, bool out_of_order) const {
    if (!frequency_ || frequency_->reordering_threshold == 1) return out_of_order;
    const std::uint64_t r = frequency_->reordering_threshold;
    if (r == 0) return false;
    // ack-frequency-14 §6.2: a late packet the sender may already have
    // declared lost (spuriously) ...
    if (ack_sent_ && largest_acked_sent_ >= r && pn <= largest_acked_sent_ - r) return true;
    // ... or a gap, not yet reported, that the sender can now declare lost:
    // the smallest such missing packet r or more below the largest.
    std::uint64_t from = dup_floor_;
    if (ack_sent_ && largest_acked_sent_ >= r) from = std::max(from, largest_acked_sent_ - r + 1);
    const std::uint64_t missing = received_.contiguous_end(from);
    return missing < largest_eliciting_ && largest_eliciting_ - missing >= r;
}

bool AckTracker::ce_elicits_ack(Ecn ecn) const {
    if (ecn != Ecn::ce) return false;
    if (!frequency_ || frequency_->ack_eliciting_threshold <= 1) return true;  // RFC 9000 §13.2.1
    return !last_ce_;
}

bool AckTracker::on_packet_received(std::uint64_t pn, bool ack_eliciting, Instant now, Ecn ecn) {
    // pn + 1 must not overflow; real packet numbers stay below 2^62.
    if (pn == UINT64_MAX || pn < dup_floor_ || received_.contains(pn)) return false;

    // RFC 9000 §13.2.1: acknowledge at once an ack-eliciting packet that
    // arrives out of order, so that the sender's loss detection learns fast:
    // below a packet already received (reordering, or a retransmission
    // filling a hole), or above a gap.
    bool out_of_order = false;
    if (ack_eliciting) {
        if (!has_received_) {
            out_of_order = pn > 0;  // packet numbers start at 0: earlier ones are missing
        } else if (pn < largest_) {
            out_of_order = true;
        } else {
            out_of_order = pn > largest_ + 1 ||
                           (has_eliciting_ && missing_between(largest_eliciting_, pn));
        }
    }

    // RFC 9000 §13.4.1: counted per packet; a coalesced datagram's packets
    // each count its codepoint.
    if (ecn == Ecn::ect0) ++ecn_.ect0;
    if (ecn == Ecn::ect1) ++ecn_.ect1;
    if (ecn == Ecn::ce) ++ecn_.ce;

    received_.add(pn, pn + 1);
    if (!has_received_ || pn > largest_) {
        largest_ = pn;
        largest_time_ = now;
    }
    has_received_ = true;
    if (ack_eliciting && (!has_eliciting_ || pn > largest_eliciting_)) {
        largest_eliciting_ = pn;
        has_eliciting_ = true;
    }
    // A late packet below what we stopped reporting is reported again: the
    // sender learns its loss was spurious.
    report_floor_ = std::min(report_floor_, pn);
    pending_ = true;

    if (ack_eliciting) {
        ++eliciting_since_ack_;
        // RFC 9000 §13.2.1: a CE-marked packet is acknowledged at once too,
        // so the sender's controller hears of the congestion without delay.
        if (reordering_elicits_ack(pn, out_of_order) || ce_elicits_ack(ecn) ||
            eliciting_since_ack_ >= cfg_.ack_eliciting_threshold) {
            deadline_ = now;  // RFC 9000 §13.2.1, §13.2.2
        } else {
            deadline_ = std::min(deadline_, now + cfg_.max_ack_delay);
        }
    }
    last_ce_ = ecn == Ecn::ce;

    // Bound memory: forget the oldest ranges; everything up to the end of a
    // forgotten range now counts as a duplicate (RFC 9000 §13.2.3: "a
    // minimum packet number that increases as ranges are discarded").
    while (received_.interval_count() > max_intervals_) {
        dup_floor_ = received_.first().hi;
        received_.pop_first();
    }
    report_floor_ = std::max(report_floor_, dup_floor_);
    return true;
}

wire::AckFrame AckTracker::build_ack(Instant now) const {
    wire::AckFrame f;
    if (!has_received_) return f;
    for (auto it = received_.rbegin(); it != received_.rend(); ++it) {
        if (f.ranges.size() >= cfg_.max_ranges) break;  // RFC 9000 §13.2.4: keep the newest
        if (it->hi <= report_floor_) break;
        f.ranges.push_back({std::max(it->lo, report_floor_), it->hi - 1});
    }
    f.ack_delay = std::max(now - largest_time_, Duration{0});
    if (ecn_ != wire::EcnCounts{}) f.ecn = ecn_;  // RFC 9000 §13.4.1: ACK_ECN once any count is non-zero
    return f;
}

void AckTracker::on_ack_sent(Instant /*now*/) {
    if (has_received_) {
        ack_sent_ = true;
        largest_acked_sent_ = largest_;
    }
    pending_ = false;
    eliciting_since_ack_ = 0;
    deadline_ = kNever;
}

void AckTracker::on_ack_acknowledged(std::uint64_t largest_acked_in_that_ack) {
    if (!has_received_) return;
    // Never raise the floor above the largest received: an ACK frame always
    // reports the largest packet number.
    const std::uint64_t floor =
        largest_acked_in_that_ack < largest_ ? largest_acked_in_that_ack + 1 : largest_;
    report_floor_ = std::max(report_floor_, floor);
}

}  // namespace ndm::transport
