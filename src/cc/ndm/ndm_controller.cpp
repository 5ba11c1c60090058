#include "cc/ndm/ndm_controller.hpp"

#include <algorithm>
#include <cmath>

#include "cc/ndm/model_choice.hpp"
#include "cc/option_values.hpp"
#include "ndm/ndm_model.hpp"

namespace ndm::cc::ndm {
namespace {

// The Cubic underneath takes only its own keys.
Options cubic_options(const Options& o) {
    Options c;
    for (const auto* key : {"beta", "hystart"}) {
        if (auto it = o.find(key); it != o.end()) c.emplace(it->first, it->second);
    }
    return c;
}

void bump(std::uint16_t& c) noexcept {
    if (c != UINT16_MAX) ++c;
}

// A window this many times what the path delivers per round trip, at a
// steady delivery rate, marks a saturated bottleneck (rule 3b).
constexpr float kUndelivered = 1.25F;

}  // namespace

NdmController::NdmController(const Params& params, const Options& options)
    : cubic_(params, cubic_options(options)),
      model_(pick_model(options, default_model().get(), kName, kMaxState)),
      kernels_(pick_kernels(options, kName)),
      standing_(static_cast<float>(get_double(options, "standing", kDefaultStanding, 0.05, 10, kName))),
      forgive_(static_cast<std::uint8_t>(get_uint(options, "forgive", kDefaultForgive, 0, 64, kName))) {
    reject_unknown(options, {"model", "simd", "forgive", "standing", "beta", "hystart"},
                   kName);
}

float NdmController::run_model(const FeatureVector& f, float* h) const noexcept {
    return classify(*kernels_, *model_, f, h);
}

bool NdmController::rate_follows_window() const noexcept {
    const float cwnd = static_cast<float>(cubic_.cwnd());
    const float rate = features_.round_rate();
    if (snap_rate_ <= 0 || snap_cwnd_ <= 0 || cwnd < 1.1F * snap_cwnd_) return false;
    // Elasticity of rate to window: ~1 without a bottleneck, ~0 at one.
    return std::log(rate / snap_rate_) >= 0.5F * std::log(cwnd / snap_cwnd_);
}

void NdmController::on_ack(const AckEvent& ev) {
    if (features_.on_ack(ev)) {
        // One GRU step per round trip: the recurrent state sees the sequence
        // of rounds, and the per-ACK cost stays at the feature updates.
        last_p_ = run_model(features_.round(), h_.data());
        forgiven_in_round_ = 0;
        const float rate = features_.round_rate();
        const bool steady = prev_rate_ > 0 && rate > 0 && std::fabs(std::log(rate / prev_rate_)) <= kSteadyRate;
        steady_rounds_ = steady ? static_cast<std::uint8_t>(std::min(steady_rounds_ + 1, 255)) : 0;
        prev_rate_ = rate;
        if (++rounds_since_snapshot_ >= kSnapshotRounds || snap_rate_ <= 0) {
            snap_rate_ = rate;
            snap_cwnd_ = static_cast<float>(cubic_.cwnd());
            rounds_since_snapshot_ = 0;
        }
    }
    cubic_.on_ack(ev);
}

void NdmController::on_congestion_event(const CongestionEvent& ev) {
    if (ev.ecn_ce > 0) {
        // CE marks (RFC 9002 §7.1): a router said the queue is building, so
        // there is nothing to classify as random or congestive, and no loss
        // for the features. Cubic's reduction, once per round as for losses.
        cubic_.on_congestion_event(ev);
        return;
    }
    features_.on_loss(ev);
    if (ev.persistent) {
        // RFC 9002 §7.6: always congestive, whatever the model says.
        bump(counters_.persistent);
        cubic_.on_congestion_event(ev);
        return;
    }
    // Losses of packets sent before the current recovery period began belong
    // to the decision already taken (RFC 9002 §7.3.2).
    if (cubic_.recovery().in_recovery(ev.largest_lost_sent_time)) return;

    std::array<float, kMaxState> h = h_;  // a look-ahead step, not committed
    const float p = features_.has_min_rtt() ? run_model(features_.at_loss(ev), h.data()) : 1.0F;
    last_p_ = p;
    // A standing queue is a queue at a saturated bottleneck: it never drained
    // for a round trip (the round's smallest q) *and* the bottleneck serves
    // at its constant rate. An order-preserving jittery link raises the
    // round's RTT floor too — each packet waits behind its predecessors —
    // but its delivery rate swings from round to round and follows the
    // window instead of staying flat.
    // After kLongSteadyRounds steady rounds 0.4 of the threshold will do:
    // when a queue never drains (a 4-BDP buffer), the 10 s min_rtt window
    // forgets the base RTT and the queue looks smaller than it is.
    const float q_floor = features_.standing_queue();
    const bool saturated = steady_rate();
    const float threshold = steady_rounds_ >= kLongSteadyRounds ? kLongSteadyFraction * standing_ : standing_;
    const bool standing = saturated && !rate_follows_window() && q_floor >= threshold;
    // A saturated bottleneck that does not deliver the window: a steady
    // delivery rate, and a window more than kUndelivered times what the
    // path delivers per round trip (rate × min_rtt × (1 + q_p90), BBR's
    // inflight-versus-BDP). A tiny buffer (a few packets) overflows with
    // almost no queueing delay, so queue evidence reads its drops as random
    // and the forgive budget of 3 per round is most of a few-packet window
    // (ndm lost 30 % of its packets at a 3-packet buffer, Cubic 5 %). Without
    // a bottleneck a random-loss path delivers about the window; a jittery
    // one has no steady rate.
    const float delivered = features_.round_rate() * static_cast<float>(to_seconds(features_.min_rtt())) *
                            (1.0F + features_.round()[kQueueP90]);
    const bool undelivered =
        saturated && delivered > 0 && static_cast<float>(cubic_.cwnd()) > kUndelivered * delivered;
    const bool forced = forgiven_in_round_ >= forgive_ || standing || undelivered;
    if (!forced && p < 0.5F) {
        ++forgiven_in_round_;
        bump(counters_.forgiven);
        return;
    }
    // The reduction grows with the confidence beyond the threshold, weight
    // 2P − 1: none at P = 0.5, where a forgiven loss (P just below) has none
    // either, Cubic's at P = 1. A verdict the model is unsure of costs little
    // on a lossy path (order-preserving jitter makes q look consistent and
    // fools a queue-evidence model at times). It is Cubic's full reduction
    // when the evidence is of a bottleneck anyway (a steady rate over a
    // queue) and in slow start, whose doubling overshoots the bottleneck by
    // up to a window: a scaled-down reduction there leaves the queue
    // overflowing (more loss than Cubic).
    const bool full = forced || (saturated && q_floor >= kSteadyQueue) ||
                      cubic_.cwnd() < cubic_.ssthresh();
    const float weight = full ? 1.0F : 2.0F * p - 1.0F;
    bump(forced ? counters_.forced : counters_.congestive);
    cubic_.on_congestion_event_scaled(ev, 1.0 - (1.0 - cubic_.beta()) * weight);
}

}  // namespace ndm::cc::ndm
