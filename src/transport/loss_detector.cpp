#include "transport/loss_detector.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>

namespace ndm::transport {

namespace {

// Lost packets are remembered this many PTO periods after they were declared
// lost, to recognize late acknowledgements (spurious losses); counting from
// the declaration rather than the send lets a delay spike longer than the
// persistent-congestion period (RFC 9002 §7.6) still prove spurious...
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

void LossDetector::on_packet_sent(SentPacket p, PacketSpace space_id) {
    if (discarded(space_id)) throw std::logic_error(std::string("packet sent in discarded space ") + space_name(space_id));
    Space& sp = space(space_id);
    assert(p.pn == sp.next_pn && "packet numbers come from next_packet_number()");
    if (p.pn < sp.next_pn) return;  // contract violation: cannot be tracked
    if (sp.sent.empty()) sp.base = sp.next_pn;
    while (sp.next_pn < p.pn) {  // contract violation: track the skipped numbers as done
        Slot& gap = sp.sent.push_back();
        gap = Slot{};
        gap.p.pn = sp.next_pn++;
        gap.state = State::acked;
    }
    // RFC 9002 §A.5 OnPacketSent.
    if (p.in_flight) {
        bytes_in_flight_ += p.bytes;
        if (p.ack_eliciting) {
            ++sp.eliciting_in_flight;
            sp.last_ack_eliciting_time = p.time_sent;
        }
        timer_anchor_ = p.time_sent;
    }
    sp.next_pn = p.pn + 1;
    Slot& s = sp.sent.push_back();
    s.p = std::move(p);
    s.state = State::outstanding;
    s.event = 0;
}

void LossDetector::skip_packet_number(PacketSpace space_id) {
    if (discarded(space_id)) return;
    Space& sp = space(space_id);
    if (sp.sent.empty()) sp.base = sp.next_pn;
    // The ring holds contiguous packet numbers: the skipped one takes a slot
    // that is never outstanding, so nothing reports it acknowledged or lost,
    // and that does not break a persistent-congestion span (§7.6.2).
    Slot& gap = sp.sent.push_back();
    gap = Slot{};
    gap.p.pn = sp.next_pn;
    gap.state = State::skipped;
    sp.skipped[sp.skipped_next] = sp.next_pn++;
    sp.skipped_next = (sp.skipped_next + 1) % kSkippedRemembered;
}

void LossDetector::remove_from_flight(Space& sp, const SentPacket& p) {
    if (!p.in_flight) return;
    bytes_in_flight_ -= std::min<std::uint64_t>(bytes_in_flight_, p.bytes);
    if (p.ack_eliciting && sp.eliciting_in_flight > 0) --sp.eliciting_in_flight;
}

void LossDetector::late_ack(Space& sp, Slot& s, AckOutcome& out) {
    // A packet we declared lost was delivered after all: the path reorders
    // more than the thresholds allow. Widen them so that the same reordering
    // is not mistaken for loss again (jittery paths such as netem's i.i.d.
    // jitter reorder by tens of packets). The thresholds describe the path,
    // so they are shared by the spaces.
    // (LossDetection::rack adapts its own window instead, rack_on_ack.)
    if (cfg_.detection == LossDetection::adaptive) {
        if (sp.has_largest_acked && sp.largest_acked > s.p.pn) {
            packet_threshold_ = std::clamp(sp.largest_acked - s.p.pn + 1, packet_threshold_, kMaxPacketThreshold);
        }
        time_threshold_num_ = std::min(time_threshold_num_ + 1, kMaxTimeThresholdNum);
    }
    // When that completes the most recent congestion event, the event was spurious.
    if (s.event != 0 && s.event == current_event_ && event_unacked_ > 0 && --event_unacked_ == 0) {
        out.spurious_congestion = true;
        current_event_ = 0;  // report each event once
    }
    s.state = State::acked;
    out.late_acked.push_back(std::move(s.p));
}

AckOutcome LossDetector::on_ack_received(const wire::AckFrame& ack, Instant now,
                                         bool handshake_confirmed, PacketSpace s) {
    AckOutcome out;
    on_ack_received(ack, now, handshake_confirmed, out, s);
    return out;
}

LossDetector::AckCheck LossDetector::check_ack(const Space& sp, const wire::AckFrame& ack) {
    // RFC 9000 §13.1: an ACK of a packet never sent MAY be treated as
    // PROTOCOL_VIOLATION.
    if (ack.ranges.empty() || ack.largest() >= sp.next_pn) return AckCheck::invalid;
    for (std::size_t i = 0; i < ack.ranges.size(); ++i) {
        const auto& r = ack.ranges[i];
        if (r.smallest > r.largest || (i > 0 && r.largest >= ack.ranges[i - 1].smallest)) return AckCheck::invalid;
    }
    // RFC 9000 §21.4: a skipped number acknowledged is a packet the peer
    // claims without having received it. Ranges run in descending order.
    for (const std::uint64_t pn : sp.skipped) {
        if (pn == kNoPn || pn > ack.largest()) continue;
        const auto r = std::partition_point(ack.ranges.begin(), ack.ranges.end(),
                                            [pn](const wire::AckRange& a) { return a.smallest > pn; });
        if (r != ack.ranges.end() && r->largest >= pn) return AckCheck::optimistic;
    }
    return AckCheck::ok;
}

void LossDetector::take_acked(Space& sp, const wire::AckFrame& ack, AckOutcome& out) {
    // Ascending pn. Packet numbers below everything remembered were acked
    // (or lost and forgotten) long ago.
    for (auto r = ack.ranges.rbegin(); r != ack.ranges.rend(); ++r) {
        if (r->smallest < sp.base && !sp.lost.empty()) {
            for (auto it = sp.lost.lower_bound(r->smallest);
                 it != sp.lost.end() && it->first <= r->largest && it->first < sp.base;) {
                late_ack(sp, it->second, out);
                it = sp.lost.erase(it);
            }
        }
        if (sp.sent.empty()) continue;
        const std::uint64_t end = sp.base + sp.sent.size();  // == sp.next_pn
        for (std::uint64_t pn = std::max(r->smallest, sp.base); pn <= r->largest && pn < end; ++pn) {
            Slot& s = sp.slot(pn);
            if (s.state == State::outstanding) {
                s.state = State::acked;
                remove_from_flight(sp, s.p);
                out.acked.push_back(std::move(s.p));
            } else if (s.state == State::lost) {
                late_ack(sp, s, out);
            }
        }
    }
}

void LossDetector::on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed,
                                   AckOutcome& out, PacketSpace space_id) {
    out.acked.clear();
    out.lost.clear();
    out.late_acked.clear();
    out.invalid = out.optimistic = out.rtt_sample = out.persistent_congestion = out.spurious_congestion = false;
    out.prior_bytes_in_flight = 0;
    out.largest_acked_time_sent = out.largest_lost_time_sent = Instant{};
    // RFC 9002 §6.4: the space's packets are gone; an ACK still in the
    // network for it is no error.
    if (discarded(space_id)) return;
    Space& sp = space(space_id);
    // Validate everything before changing any state.
    if (const AckCheck c = check_ack(sp, ack); c != AckCheck::ok) {
        out.invalid = true;
        out.optimistic = c == AckCheck::optimistic;
        return;
    }

    out.prior_bytes_in_flight = bytes_in_flight_;
    timer_anchor_ = now;
    forget_old_losses(sp, now);
    const bool had_largest = sp.has_largest_acked;
    const std::uint64_t prior_largest = sp.largest_acked;
    if (!sp.has_largest_acked || ack.largest() > sp.largest_acked) {
        sp.largest_acked = ack.largest();
        sp.has_largest_acked = true;
    }
    take_acked(sp, ack, out);
    if (cfg_.detection == LossDetection::rack) rack_on_ack(sp, out, had_largest, prior_largest, now);
    if (out.acked.empty()) {
        // RFC 9002 §A.7: nothing newly acknowledged, nothing more to do.
        cleanup(sp, now);
        return;
    }

    const SentPacket& largest = out.acked.back();
    out.largest_acked_time_sent = largest.time_sent;

    // RFC 9002 §5.1: a sample only when the largest acknowledged packet is
    // newly acknowledged and at least one newly acked packet was ack-eliciting.
    // Samples from every space feed the one estimate.
    const bool any_eliciting = std::any_of(out.acked.begin(), out.acked.end(),
                                           [](const SentPacket& p) { return p.ack_eliciting; });
    if (largest.pn == ack.largest() && any_eliciting) {
        const Duration ack_delay = space_id == PacketSpace::application ? ack.ack_delay : Duration{0};
        rtt_.update(now - largest.time_sent, ack_delay, handshake_confirmed, cfg_.max_ack_delay);
        out.rtt_sample = true;
        if (!has_first_rtt_sample_) {
            has_first_rtt_sample_ = true;
            first_rtt_sample_time_ = now;
        }
    }

    LossBatch batch = detect_lost(sp, now, out.lost);
    out.persistent_congestion = batch.persistent;
    out.largest_lost_time_sent = batch.largest_lost_time_sent;

    // RFC 9002 §A.7: reset the PTO backoff, except at a client whose
    // Initial ACKs do not yet prove the server validated its address
    // (§6.2.1: the server may be blocked by its amplification limit).
    if (peer_validated_) pto_count_ = 0;
    cleanup(sp, now);
}

Duration LossDetector::loss_delay() const {
    // RFC 9002 §6.1.2: kTimeThreshold · max(smoothed_rtt, latest_rtt), at least kGranularity.
    const Duration rtt = std::max(rtt_.smoothed(), rtt_.latest());
    return std::max(rtt * time_threshold_num_ / kTimeThresholdDen, kGranularity);
}

void LossDetector::rack_on_ack(Space& sp, const AckOutcome& out, bool had_largest, std::uint64_t prior_largest,
                               Instant now) {
    // Step 1: the latest-sent packet delivered so far (packet numbers grow
    // with send time: the largest acknowledged), and its RTT. QUIC never
    // reuses a packet number, so no sample is ambiguous.
    if (!out.acked.empty() && out.acked.back().pn == sp.largest_acked) {
        sp.rack_xmit_ts = out.acked.back().time_sent;
        sp.rack_rtt = now - sp.rack_xmit_ts;
    }
    // Step 2: delivered below what was already delivered (ascending pn).
    if (had_largest && !out.acked.empty() && out.acked.front().pn < prior_largest) rack_.on_reordering();
    // Step 4: close the round of the last increment, then count a spurious loss.
    rack_.on_largest_acked(sp.largest_acked);
    if (!out.late_acked.empty()) rack_.on_spurious_loss(sp.next_pn);
}

Instant LossDetector::loss_deadline(const Space& sp, const Slot& s, Duration delay, bool in_recovery) const {
    const std::uint64_t pn = s.p.pn;
    if (cfg_.detection == LossDetection::rack) {
        // RFC 8985 §6.2 Step 5: every packet here was sent before the latest
        // delivered one (pn < largest_acked).
        const bool dupthresh = sp.largest_acked >= pn + kPacketThreshold;
        const Duration window = rack_.window(in_recovery, dupthresh, rtt_.min(), rtt_.smoothed());
        return add_saturating(s.p.time_sent, sp.rack_rtt + window);
    }
    // RFC 9002 §6.1: lost when sent kPacketThreshold before an acked
    // packet, or long enough before now.
    if (sp.largest_acked >= pn + packet_threshold_) return Instant::min();
    return add_saturating(s.p.time_sent, delay);
}

LossDetector::LossBatch LossDetector::detect_lost(Space& sp, Instant now, std::vector<SentPacket>& lost) {
    LossBatch batch;
    sp.loss_time = kNever;
    if (!sp.has_largest_acked || sp.sent.empty()) return batch;

    const Duration delay = loss_delay();
    const bool in_recovery = in_rack_recovery(sp);
    const std::uint64_t end = std::min(sp.largest_acked + 1, sp.base + sp.sent.size());
    const std::uint64_t event = event_counter_ + 1;  // taken if in-flight packets are lost
    const std::size_t lost_before = lost.size();
    std::size_t in_flight_lost = 0;
    std::size_t first_idx = 0, last_idx = 0;

    for (std::uint64_t pn = sp.base; pn < end; ++pn) {
        Slot& s = sp.slot(pn);
        if (s.state != State::outstanding) continue;
        const Instant deadline = loss_deadline(sp, s, delay, in_recovery);
        if (deadline <= now) {
            s.state = State::lost;
            s.declared_lost = now;
            remove_from_flight(sp, s.p);
            if (s.p.in_flight) {
                s.event = event;
                ++in_flight_lost;
                batch.largest_lost_time_sent = std::max(batch.largest_lost_time_sent, s.p.time_sent);
            }
            if (lost.size() == lost_before) first_idx = pn - sp.base;
            last_idx = pn - sp.base;
            lost.push_back(s.p);  // a copy: the slot keeps its frames for late_acked
        } else {
            sp.loss_time = std::min(sp.loss_time, deadline);
        }
    }

    if (in_flight_lost > 0) {
        // RFC 9002 §B.8 OnPacketsLost: one congestion event per batch.
        event_counter_ = event;
        current_event_ = event;
        event_unacked_ = in_flight_lost;
        batch.persistent = in_persistent_congestion(sp, first_idx, last_idx, event);
        if (batch.persistent) rtt_.reset_min_rtt();  // RFC 9002 §5.2
        // RFC 9002 §7.3.2: a loss of a packet sent after the current recovery
        // period began starts a new one (tracked for rack's window only).
        if (cfg_.detection == LossDetection::rack &&
            (!rack_recovery_ || batch.largest_lost_time_sent > rack_recovery_start_)) {
            rack_recovery_ = true;
            rack_recovery_start_ = now;
            rack_.on_recovery();
        }
    }
    return batch;
}

// RFC 9002 §7.6.2: two ack-eliciting packets of this loss batch, both sent
// after the first RTT sample, more than the persistent congestion duration
// apart, with no packet sent between them acknowledged. Slots
// [first, last] of sp.sent hold every packet sent in that span. §7.6.2 looks
// "across all packet number spaces"; one batch is one space's, so a span is
// judged within a space (the handshake spaces are short-lived; a span over
// them and 1-RTT would need their send times merged).
bool LossDetector::in_persistent_congestion(const Space& sp, std::size_t first, std::size_t last,
                                            std::uint64_t event) const {
    if (!has_first_rtt_sample_) return false;  // §7.6.2: needs a prior RTT sample
    const Duration duration = rtt_.pto_period(cfg_.max_ack_delay) * kPersistentCongestionThreshold;
    bool in_span = false;
    Instant start{};
    for (std::size_t i = first; i <= last; ++i) {
        const Slot& s = sp.sent[i];
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

void LossDetector::cleanup(Space& sp, Instant now) {
    // Retire acked slots from the front; lost ones move to sp.lost.
    while (!sp.sent.empty() && sp.sent.front().state != State::outstanding) {
        Slot& s = sp.sent.front();
        if (s.state == State::lost) {
            const std::uint64_t pn = s.p.pn;
            sp.lost.emplace_hint(sp.lost.end(), pn, std::move(s));
        }
        sp.sent.pop_front();
        ++sp.base;
    }
    if (sp.sent.empty()) sp.base = sp.next_pn;

    forget_old_losses(sp, now);
}

void LossDetector::forget_old_losses(Space& sp, Instant now) {
    // Lost packets old enough that no acknowledgement is expected any more.
    if (sp.lost.empty()) return;
    const Duration keep = rtt_.pto_period(cfg_.max_ack_delay) * kLostRetentionPtos;
    while (!sp.lost.empty()) {
        const Slot& s = sp.lost.begin()->second;
        if (sp.lost.size() <= kMaxLostRetained && add_saturating(s.declared_lost, keep) >= now) break;
        // This event can no longer be shown spurious.
        if (s.event != 0 && s.event == current_event_) current_event_ = 0;
        sp.lost.erase(sp.lost.begin());
    }
}

// A discarded space has nothing in flight and no loss time
// (remove_space_from_flight), so these loops visit the live spaces only.
std::size_t LossDetector::total_eliciting_in_flight() const {
    std::size_t n = 0;
    for_each_space(live_, [&](PacketSpace s) { n += space(s).eliciting_in_flight; });
    return n;
}

LossDetector::SpaceTime LossDetector::loss_time_and_space() const {
    SpaceTime best;
    for_each_space(live_, [&](PacketSpace s) {
        if (space(s).loss_time < best.time) best = {space(s).loss_time, s};
    });
    return best;
}

LossDetector::SpaceTime LossDetector::pto_time_and_space() const {
    if (total_eliciting_in_flight() == 0) {
        // RFC 9002 §6.2.2.1: the client's anti-deadlock probe, from now.
        const PacketSpace probe = has_handshake_keys_ ? PacketSpace::handshake : PacketSpace::initial;
        return {add_saturating(timer_anchor_, pto_backoff_period(Duration{0})), probe};
    }
    SpaceTime best;
    for_each_space(live_, [&](PacketSpace id) {
        const Space& sp = space(id);
        if (sp.eliciting_in_flight == 0) return;
        Duration max_ack_delay{0};
        if (id == PacketSpace::application) {
            // RFC 9002 §6.2.1: no application PTO before confirmation (the
            // peer may not have the keys to acknowledge); only this space's
            // ACKs are delayed. (The last space: nothing follows it.)
            if (!handshake_confirmed_) return;
            max_ack_delay = cfg_.max_ack_delay;
        }
        // RFC 9002 §6.2.1: PTO = last ack-eliciting send + pto_period · 2^pto_count.
        const Instant t = add_saturating(sp.last_ack_eliciting_time, pto_backoff_period(max_ack_delay));
        if (t < best.time) best = {t, id};
    });
    return best;
}

Instant LossDetector::timer() const {
    // RFC 9002 §A.8 SetLossDetectionTimer.
    const SpaceTime loss = loss_time_and_space();
    if (loss.time != kNever) return loss.time;
    if (total_eliciting_in_flight() == 0 && peer_validated_) return kNever;
    return pto_time_and_space().time;
}

Duration LossDetector::pto_backoff_period(Duration max_ack_delay) const {
    const Duration base = rtt_.pto_period(max_ack_delay);
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
    timer_anchor_ = now;

    const SpaceTime loss = loss_time_and_space();
    if (loss.time != kNever) {
        // RFC 9002 §A.9: time-threshold loss detection; not a PTO.
        Space& sp = space(loss.space);
        out.space = loss.space;
        LossBatch batch = detect_lost(sp, now, out.lost);
        out.persistent_congestion = batch.persistent;
        out.largest_lost_time_sent = batch.largest_lost_time_sent;
        cleanup(sp, now);
        return out;
    }
    // RFC 9002 §6.2.4: the PTO expired: send probes (nothing is declared lost)
    // and back off. The anti-deadlock probe is one packet (§A.9).
    out.pto = true;
    out.probes = total_eliciting_in_flight() == 0 ? 1 : 2;
    out.space = pto_time_and_space().space;
    ++pto_count_;
    return out;
}

std::uint64_t LossDetector::discard_space(PacketSpace space_id) {
    Space& sp = space(space_id);
    const std::uint64_t removed = remove_space_from_flight(sp, nullptr);
    live_ &= ~bit(space_id);
    return removed;
}

std::vector<SentPacket> LossDetector::restart_space(PacketSpace space_id) {
    std::vector<SentPacket> outstanding;
    remove_space_from_flight(space(space_id), &outstanding);
    return outstanding;
}

// RFC 9002 §A.11: in-flight packets leave bytes_in_flight (lost ones already
// did) without a congestion event, the space's timers are cleared and
// pto_count is reset. The outstanding packets go to `outstanding` if given.
std::uint64_t LossDetector::remove_space_from_flight(Space& sp, std::vector<SentPacket>* outstanding) {
    std::uint64_t removed = 0;
    for (std::size_t i = 0; i < sp.sent.size(); ++i) {
        Slot& s = sp.sent[i];
        if (s.state == State::outstanding && s.p.in_flight) removed += s.p.bytes;
        if (s.event != 0 && s.event == current_event_) current_event_ = 0;  // can no longer be undone
        if (s.state == State::outstanding && outstanding) outstanding->push_back(std::move(s.p));
    }
    for (const auto& [pn, s] : sp.lost) {
        if (s.event != 0 && s.event == current_event_) current_event_ = 0;
    }
    removed = std::min(removed, bytes_in_flight_);
    bytes_in_flight_ -= removed;
    forget_packets(sp);
    sp.last_ack_eliciting_time = Instant{};
    pto_count_ = 0;
    return removed;
}

void LossDetector::forget_packets(Space& sp) {
    sp.sent.clear();
    sp.lost.clear();
    sp.base = sp.next_pn;
    sp.eliciting_in_flight = 0;
    sp.loss_time = kNever;
}

void LossDetector::discard_all() {
    for (Space& sp : spaces_) forget_packets(sp);
    bytes_in_flight_ = 0;
    pto_count_ = 0;
    current_event_ = 0;
    event_unacked_ = 0;
}

}  // namespace ndm::transport
