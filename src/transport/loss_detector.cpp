#include "transport/loss_detector.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace ndm::transport {

namespace {

// Lost packets are remembered this many PTO periods after they were sent, to
// recognize late acknowledgements (spurious losses)...
constexpr int kLostRetentionPtos = 3;
// ...but never more than this many.
constexpr std::size_t kMaxLostRetained = std::size_t{1} << 16;

// t + d, saturating at kNever.
Instant add_saturating(Instant t, Duration d) {
    if (t == kNever) return kNever;
    if (t.time_since_epoch() >= Duration{0} && d >= kNever - t) return kNever;
    return t + d;
}

}  // namespace

LossDetector::LossDetector(Config cfg) : cfg_(cfg) {}

void LossDetector::on_packet_sent(SentPacket p) {
    assert(p.pn == next_pn_ && "packet numbers come from next_packet_number()");
    if (p.pn < next_pn_) return;  // contract violation: cannot be tracked
    if (sent_.empty()) base_ = next_pn_;
    while (next_pn_ < p.pn) {  // contract violation: track the skipped numbers as done
        Slot& gap = sent_.push_back();
        gap = Slot{};
        gap.p.pn = next_pn_++;
        gap.state = State::acked;
    }
    // RFC 9002 §A.5 OnPacketSent.
    if (p.in_flight) {
        bytes_in_flight_ += p.bytes;
        if (p.ack_eliciting) {
            ++eliciting_in_flight_;
            last_ack_eliciting_time_ = p.time_sent;
        }
    }
    next_pn_ = p.pn + 1;
    Slot& s = sent_.push_back();
    s.p = std::move(p);
    s.state = State::outstanding;
    s.event = 0;
}

void LossDetector::remove_from_flight(const SentPacket& p) {
    if (!p.in_flight) return;
    bytes_in_flight_ -= std::min<std::uint64_t>(bytes_in_flight_, p.bytes);
    if (p.ack_eliciting && eliciting_in_flight_ > 0) --eliciting_in_flight_;
}

void LossDetector::late_ack(Slot& s, AckOutcome& out) {
    // A packet we declared lost was delivered after all: the path reorders
    // more than the thresholds allow. Widen them so that the same reordering
    // is not mistaken for loss again (jittery paths such as netem's i.i.d.
    // jitter reorder by tens of packets).
    if (has_largest_acked_ && largest_acked_ > s.p.pn) {
        packet_threshold_ = std::clamp(largest_acked_ - s.p.pn + 1, packet_threshold_, kMaxPacketThreshold);
    }
    time_threshold_num_ = std::min(time_threshold_num_ + 1, kMaxTimeThresholdNum);
    // When that completes the most recent congestion event, the event was spurious.
    if (s.event != 0 && s.event == current_event_ && event_unacked_ > 0 && --event_unacked_ == 0) {
        out.spurious_congestion = true;
        current_event_ = 0;  // report each event once
    }
    s.state = State::acked;
    out.late_acked.push_back(std::move(s.p));
}

AckOutcome LossDetector::on_ack_received(const wire::AckFrame& ack, Instant now,
                                         bool handshake_confirmed) {
    AckOutcome out;
    on_ack_received(ack, now, handshake_confirmed, out);
    return out;
}

void LossDetector::on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed,
                                   AckOutcome& out) {
    out.acked.clear();
    out.lost.clear();
    out.late_acked.clear();
    out.invalid = out.rtt_sample = out.persistent_congestion = out.spurious_congestion = false;
    out.prior_bytes_in_flight = 0;
    out.largest_acked_time_sent = out.largest_lost_time_sent = Instant{};
    // Validate everything before changing any state. RFC 9000 §13.1: an ACK
    // of a packet never sent MAY be treated as PROTOCOL_VIOLATION.
    if (ack.ranges.empty() || ack.largest() >= next_pn_) {
        out.invalid = true;
        return;
    }
    for (std::size_t i = 0; i < ack.ranges.size(); ++i) {
        const auto& r = ack.ranges[i];
        if (r.smallest > r.largest || (i > 0 && r.largest >= ack.ranges[i - 1].smallest)) {
            out.invalid = true;
            return;
        }
    }

    out.prior_bytes_in_flight = bytes_in_flight_;
    forget_old_losses(now);
    if (!has_largest_acked_ || ack.largest() > largest_acked_) {
        largest_acked_ = ack.largest();
        has_largest_acked_ = true;
    }

    // RFC 9002 §A.7 DetectAndRemoveAckedPackets, ascending pn. Packet numbers
    // below everything remembered were acked (or lost and forgotten) long ago.
    for (auto r = ack.ranges.rbegin(); r != ack.ranges.rend(); ++r) {
        if (r->smallest < base_ && !lost_.empty()) {
            for (auto it = lost_.lower_bound(r->smallest);
                 it != lost_.end() && it->first <= r->largest && it->first < base_;) {
                late_ack(it->second, out);
                it = lost_.erase(it);
            }
        }
        if (sent_.empty()) continue;
        const std::uint64_t end = base_ + sent_.size();  // == next_pn_
        for (std::uint64_t pn = std::max(r->smallest, base_); pn <= r->largest && pn < end; ++pn) {
            Slot& s = slot(pn);
            if (s.state == State::outstanding) {
                s.state = State::acked;
                remove_from_flight(s.p);
                out.acked.push_back(std::move(s.p));
            } else if (s.state == State::lost) {
                late_ack(s, out);
            }
        }
    }

    if (out.acked.empty()) {
        // RFC 9002 §A.7: nothing newly acknowledged, nothing more to do.
        cleanup(now);
        return;
    }

    const SentPacket& largest = out.acked.back();
    out.largest_acked_time_sent = largest.time_sent;

    // RFC 9002 §5.1: a sample only when the largest acknowledged packet is
    // newly acknowledged and at least one newly acked packet was ack-eliciting.
    const bool any_eliciting = std::any_of(out.acked.begin(), out.acked.end(),
                                           [](const SentPacket& p) { return p.ack_eliciting; });
    if (largest.pn == ack.largest() && any_eliciting) {
        rtt_.update(now - largest.time_sent, ack.ack_delay, handshake_confirmed, cfg_.max_ack_delay);
        out.rtt_sample = true;
        if (!has_first_rtt_sample_) {
            has_first_rtt_sample_ = true;
            first_rtt_sample_time_ = now;
        }
    }

    LossBatch batch = detect_lost(now, out.lost);
    out.persistent_congestion = batch.persistent;
    out.largest_lost_time_sent = batch.largest_lost_time_sent;

    // RFC 9002 §A.7: reset the PTO backoff (no client address-validation
    // exception: a single packet-number space).
    pto_count_ = 0;
    cleanup(now);
    return;
}

Duration LossDetector::loss_delay() const {
    // RFC 9002 §6.1.2: kTimeThreshold · max(smoothed_rtt, latest_rtt), at least kGranularity.
    const Duration rtt = std::max(rtt_.smoothed(), rtt_.latest());
    return std::max(rtt * time_threshold_num_ / kTimeThresholdDen, kGranularity);
}

LossDetector::LossBatch LossDetector::detect_lost(Instant now, std::vector<SentPacket>& lost) {
    LossBatch batch;
    loss_time_ = kNever;
    if (!has_largest_acked_ || sent_.empty()) return batch;

    const Duration delay = loss_delay();
    const Instant lost_send_time = now - delay;
    const std::uint64_t end = std::min(largest_acked_ + 1, base_ + sent_.size());
    const std::uint64_t event = event_counter_ + 1;  // taken if in-flight packets are lost
    const std::size_t lost_before = lost.size();
    std::size_t in_flight_lost = 0;
    std::size_t first_idx = 0, last_idx = 0;

    for (std::uint64_t pn = base_; pn < end; ++pn) {
        Slot& s = slot(pn);
        if (s.state != State::outstanding) continue;
        // RFC 9002 §6.1: lost when sent kPacketThreshold before an acked
        // packet, or long enough before now.
        if (s.p.time_sent <= lost_send_time || largest_acked_ >= pn + packet_threshold_) {
            s.state = State::lost;
            remove_from_flight(s.p);
            if (s.p.in_flight) {
                s.event = event;
                ++in_flight_lost;
                batch.largest_lost_time_sent = std::max(batch.largest_lost_time_sent, s.p.time_sent);
            }
            if (lost.size() == lost_before) first_idx = pn - base_;
            last_idx = pn - base_;
            lost.push_back(s.p);  // a copy: the slot keeps its frames for late_acked
        } else {
            loss_time_ = std::min(loss_time_, add_saturating(s.p.time_sent, delay));
        }
    }

    if (in_flight_lost > 0) {
        // RFC 9002 §B.8 OnPacketsLost: one congestion event per batch.
        event_counter_ = event;
        current_event_ = event;
        event_unacked_ = in_flight_lost;
        batch.persistent = in_persistent_congestion(first_idx, last_idx, event);
        if (batch.persistent) rtt_.reset_min_rtt();  // RFC 9002 §5.2
    }
    return batch;
}

// RFC 9002 §7.6.2: two ack-eliciting packets of this loss batch, both sent
// after the first RTT sample, more than the persistent congestion duration
// apart, with no packet sent between them acknowledged. Slots
// [first, last] of sent_ hold every packet sent in that span.
bool LossDetector::in_persistent_congestion(std::size_t first, std::size_t last,
                                            std::uint64_t event) const {
    if (!has_first_rtt_sample_) return false;  // §7.6.2: needs a prior RTT sample
    const Duration duration = rtt_.pto_period(cfg_.max_ack_delay) * kPersistentCongestionThreshold;
    bool in_span = false;
    Instant start{};
    for (std::size_t i = first; i <= last; ++i) {
        const Slot& s = sent_[i];
        if (s.state == State::acked) {
            in_span = false;  // an acknowledgement in between breaks the span
            continue;
        }
        if (s.state != State::lost || s.event != event || !s.p.ack_eliciting ||
            s.p.time_sent <= first_rtt_sample_time_) {
            continue;
        }
        if (!in_span) {
            in_span = true;
            start = s.p.time_sent;
        } else if (s.p.time_sent - start > duration) {
            return true;
        }
    }
    return false;
}

void LossDetector::cleanup(Instant now) {
    // Retire acked slots from the front; lost ones move to lost_.
    while (!sent_.empty() && sent_.front().state != State::outstanding) {
        Slot& s = sent_.front();
        if (s.state == State::lost) {
            const std::uint64_t pn = s.p.pn;
            lost_.emplace_hint(lost_.end(), pn, std::move(s));
        }
        sent_.pop_front();
        ++base_;
    }
    if (sent_.empty()) base_ = next_pn_;

    forget_old_losses(now);
}

void LossDetector::forget_old_losses(Instant now) {
    // Lost packets old enough that no acknowledgement is expected any more.
    if (lost_.empty()) return;
    const Duration keep = rtt_.pto_period(cfg_.max_ack_delay) * kLostRetentionPtos;
    while (!lost_.empty()) {
        const Slot& s = lost_.begin()->second;
        if (lost_.size() <= kMaxLostRetained && add_saturating(s.p.time_sent, keep) >= now) break;
        // This event can no longer be shown spurious.
        if (s.event != 0 && s.event == current_event_) current_event_ = 0;
        lost_.erase(lost_.begin());
    }
}

Instant LossDetector::timer() const {
    // RFC 9002 §A.8 SetLossDetectionTimer.
    if (loss_time_ != kNever) return loss_time_;
    if (eliciting_in_flight_ == 0) return kNever;
    // RFC 9002 §6.2.1: PTO = last ack-eliciting send + pto_period · 2^pto_count.
    return add_saturating(last_ack_eliciting_time_, pto_backoff_period());
}

Duration LossDetector::pto_backoff_period() const {
    const Duration base = rtt_.pto_period(cfg_.max_ack_delay);
    const Duration cap = cfg_.max_pto_backoff > Duration::zero() ? std::max(cfg_.max_pto_backoff, base) : Duration::max();
    Duration d = base;
    // Doubling stops at the cap (or where it would overflow: then the timer
    // lies beyond any deadline anyway).
    for (unsigned i = 0; i < pto_count_ && d < cap; ++i) d = d > Duration::max() / 2 ? Duration::max() : 2 * d;
    return std::min(d, cap);
}

TimeoutOutcome LossDetector::on_timeout(Instant now) {
    TimeoutOutcome out;
    const Instant t = timer();
    if (t == kNever || now < t) return out;  // spurious wake-up

    if (loss_time_ != kNever) {
        // RFC 9002 §A.9: time-threshold loss detection; not a PTO.
        LossBatch batch = detect_lost(now, out.lost);
        out.persistent_congestion = batch.persistent;
        out.largest_lost_time_sent = batch.largest_lost_time_sent;
        cleanup(now);
        return out;
    }
    // RFC 9002 §6.2.4: the PTO expired: send probes (nothing is declared lost)
    // and back off.
    out.pto = true;
    out.probes = 2;
    ++pto_count_;
    return out;
}

void LossDetector::discard_all() {
    sent_.clear();
    lost_.clear();
    base_ = next_pn_;
    bytes_in_flight_ = 0;
    eliciting_in_flight_ = 0;
    loss_time_ = kNever;
    pto_count_ = 0;
    current_event_ = 0;
    event_unacked_ = 0;
}

}  // namespace ndm::transport
