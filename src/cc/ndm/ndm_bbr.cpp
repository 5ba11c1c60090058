#include "cc/ndm/ndm_bbr.hpp"

#include <algorithm>

#include "cc/ndm/model_choice.hpp"
#include "cc/option_values.hpp"

namespace ndm::cc::ndm {
namespace {

// The Bbr underneath takes only its own keys.
Options bbr_options(const Options& o) {
    Options b;
    for (const auto* key : {"loss_thresh", "beta", "headroom"}) {
        if (auto it = o.find(key); it != o.end()) b.emplace(it->first, it->second);
    }
    return b;
}

}  // namespace

NdmBbr::NdmBbr(const Params& params, const Options& options)
    : bbr_(params, bbr_options(options)),
      disc_(static_cast<float>(get_double(options, "cap", LossDiscriminator::kDefaultCap, 0.01, 0.5, kName)),
            static_cast<float>(get_double(options, "queue", LossDiscriminator::kDefaultQueue, 0.05, 10, kName)),
            static_cast<float>(get_double(options, "threshold", LossDiscriminator::kDefaultThreshold, 0, 1, kName))),
      queue_(static_cast<float>(get_double(options, "qprobe", QueueResponse::kDefaultProbe, 0, 10, kName)),
             static_cast<float>(get_double(options, "qcruise", QueueResponse::kDefaultCruise, 0, 10, kName)),
             static_cast<float>(get_double(options, "qnoise", QueueResponse::kDefaultNoise, 0, 100, kName)),
             get_bool(options, "stall", true, kName)),
      model_(pick_model(options, ndm_bbr_model().get(), kName, kMaxState)),
      kernels_(pick_kernels(options, kName)),
      probe_rule_(get_bool(options, "probe", true, kName)) {
    reject_unknown(options,
                   {"model", "simd", "cap", "queue", "threshold", "probe", "qprobe", "qcruise", "qnoise", "stall",
                    "loss_thresh", "beta", "headroom"},
                   kName);
    pending_.reserve(64);
}

void NdmBbr::on_packet_lost(const PacketLost& p) {
    ledger_.on_lost(p.bytes);
    PacketLost q = p;
    q.lost = ledger_.congestive(p.lost);
    pending_.push_back(q);
}

void NdmBbr::on_ack(const AckEvent& ev) {
    last_ack_ = ev.now;
    acked_ = true;
    pto_ = ev.smoothed_rtt + std::max<Duration>(4 * ev.rttvar, std::chrono::milliseconds(1));
    disc_.on_acked(ev.packets_acked);
    const bool round_end = features_.on_ack(ev);
    if (round_end) {
        const Bbr::State st = bbr_.state_id();
        disc_.on_round_end(st == Bbr::State::probe_bw_cruise || st == Bbr::State::probe_bw_refill);
        p_valid_ = false;
        // A recurrent model sees the sequence of rounds (one committed step
        // per round trip); a feed-forward one is run only at losses.
        if (model_->state_dim() > 0) (void)classify(*kernels_, *model_, features_.round(), h_.data());
    }
    if (ev.rate.lost == 0 || ledger_.forgiven() == 0) {
        bbr_.on_ack(ev);
    } else {
        AckEvent e = ev;
        e.rate.lost = ledger_.congestive(ev.rate.lost);
        bbr_.on_ack(e);
    }
    track_probe(round_end);
    if (round_end) answer_queue(ev);
}

void NdmBbr::answer_queue(const AckEvent& ev) {
    QueueRound r;
    r.now = ev.now;
    r.has_queue = features_.has_min_rtt();
    r.standing = features_.standing_queue();
    r.forgiving = disc_.forgiven_share() > 0.0F;
    r.cruising = bbr_.state_id() == Bbr::State::probe_bw_cruise;
    r.stalled_probe = stalled_probe(1);
    const QueueDecision d = queue_.on_round_end(r);
    if (d.action == QueueAction::cut_short_term) {
        bbr_.cut_short_term(d.factor);
    } else if (d.action == QueueAction::end_probe) {
        // As bbr answers a CE mark (its §3.7 response, Bbr::on_ce_marks).
        CongestionEvent ce;
        ce.now = ev.now;
        ce.ecn_ce = 1;
        ce.largest_lost_sent_time = ev.largest_acked_sent_time;
        ce.bytes_in_flight = ev.bytes_in_flight;
        bbr_.on_congestion_event(ce);
    } else if (d.action == QueueAction::stop_probe) {
        bbr_.stop_probe(ev.now);
    }
}

void NdmBbr::track_probe(bool round_end) {
    const bool up = bbr_.state_id() == Bbr::State::probe_bw_up;
    if (up && !in_up_) {
        up_start_bw_ = static_cast<float>(bbr_.max_bw());
        queue_.on_probe_start(features_.standing_queue());
        up_rounds_ = 0;
    } else if (up && round_end && up_rounds_ < UINT8_MAX) {
        ++up_rounds_;
    }
    in_up_ = up;
}

bool NdmBbr::stalled_probe(unsigned rounds) const {
    // bbr's max_bw takes every sample of the probe: a probe that found bandwidth raised it.
    return in_up_ && up_rounds_ >= rounds && bbr_.max_bw() < 1.1 * up_start_bw_;
}

bool NdmBbr::saturated_probe() const {
    if (!probe_rule_) return false;
    if (in_up_) return stalled_probe(2);
    if (bbr_.state_id() == Bbr::State::startup) return bbr_.full_bw_count() >= 1;
    return false;
}

float NdmBbr::round_p(const CongestionEvent& ev) {
    if (!p_valid_) {
        std::array<float, kMaxState> h = h_;  // a look-ahead step, not committed
        p_ = features_.has_min_rtt() ? classify(*kernels_, *model_, features_.at_loss(ev), h.data()) : 1.0F;
        p_valid_ = true;
    }
    return p_;
}

void NdmBbr::on_congestion_event(const CongestionEvent& ev) {
    LossEvidence e;
    e.ecn_ce = ev.ecn_ce > 0 && ev.bytes_lost == 0;
    if (!e.ecn_ce) {
        features_.on_loss(ev);
        e.packets_lost = ev.packets_lost;
        e.persistent = ev.persistent;
        e.after_silence = acked_ && ev.now - last_ack_ > pto_;
        e.p = round_p(ev);
        e.standing_queue = features_.standing_queue();
        e.saturated_probe = saturated_probe();
    }
    const Verdict v = disc_.judge(e);
    auto& c = counters_[static_cast<std::size_t>(v)];
    if (c != UINT32_MAX) ++c;
    if (e.ecn_ce) {  // no lost packets: nothing to forgive or to record
        bbr_.on_congestion_event(ev);
        return;
    }
    if (congestive(v)) {
        ledger_.close_event(0);
        for (const PacketLost& p : pending_) bbr_.on_packet_lost(p);
        bbr_.on_congestion_event(ev);
    } else {
        ledger_.close_event(ev.bytes_lost);
    }
    last_forwarded_ = congestive(v);
    pending_.clear();
}

void NdmBbr::on_spurious_congestion(const SpuriousEvent& ev) {
    if (last_forwarded_) bbr_.on_spurious_congestion(ev);
}

}  // namespace ndm::cc::ndm
