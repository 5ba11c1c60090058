// The Linux host emulation of docs/ndm-lkm.md §1.1 (see lkm_host.hpp for the
// simplifications and docs/ndm-lkm.md for why).
#include "cc/ndm/lkm_host.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

namespace ndm::cc::lkm {

// ---- struct tcp_sock helpers ------------------------------------------------

void Sock::rtt_sample(std::uint32_t r_us) noexcept {
    // tcp_rtt_estimator, srtt part: srtt8 += r - srtt8/8, or 8r for the first.
    std::int64_t s = srtt8;
    if (s == 0) {
        s = 8 * static_cast<std::int64_t>(r_us);
    } else {
        s += static_cast<std::int64_t>(r_us) - (s >> 3);
    }
    srtt8 = static_cast<std::uint32_t>(
        std::clamp<std::int64_t>(s, 1, std::numeric_limits<std::uint32_t>::max()));
}

std::uint32_t Sock::slow_start(std::uint32_t acked) noexcept {
    // 64-bit sum: the u32 one cannot wrap at any window this transport uses.
    const auto c = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(static_cast<std::uint64_t>(cwnd) + acked, ssthresh));
    acked -= c - cwnd;  // u32 wrap as in Linux when c < cwnd; unused then
    cwnd = std::min(c, clamp);
    return acked;
}

void Sock::ai(std::uint32_t w, std::uint32_t acked) noexcept {
    // A whole window of credit earned earlier (w has since shrunk) counts once.
    if (cnt >= w) {
        cnt = 0;
        ++cwnd;
    }
    cnt += acked;
    if (cnt >= w) {
        const std::uint32_t delta = cnt / w;
        cnt -= delta * w;
        cwnd += delta;
    }
    cwnd = std::min(cwnd, clamp);
}

void Sock::reno(std::uint32_t acked) noexcept {
    if (!cwnd_limited) return;
    if (cwnd < ssthresh) {
        acked = slow_start(acked);
        if (acked == 0) return;
    }
    ai(cwnd, acked);
}

// ---- the kernel's event sequences -------------------------------------------

Host::Host(std::uint64_t max_datagram_size, std::uint32_t initial_window, NoiseCut cut,
           bool check_cwnd_limited)
    : module_(cut), mds_(max_datagram_size), check_cwnd_limited_(check_cwnd_limited) {
    if (mds_ == 0) {
        throw std::invalid_argument("congestion controller \"ndm-lkm\": max_datagram_size must be > 0");
    }
    if (initial_window == 0) {
        throw std::invalid_argument("congestion controller \"ndm-lkm\": initial_window must be > 0");
    }
    sock_.cwnd = initial_window;
    sock_.ssthresh = kInfiniteSsthresh;
    module_.init(sock_);
}

void Host::on_ack(const AckEvent& ev) {
    // The host's RTT estimator runs before the module sees the ACK (§1.1).
    // Karn: the core sets has_rtt_sample only when the largest acked packet
    // is newly acked and ack-eliciting; QUIC never re-sends a packet number.
    if (ev.has_rtt_sample) {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(ev.latest_rtt).count();
        sock_.rtt_sample(static_cast<std::uint32_t>(
            std::clamp<std::int64_t>(us, 0, std::numeric_limits<std::uint32_t>::max())));
    }
    // Recovery (or Loss) ends once something sent after it began is acked,
    // as Linux's ends when snd_una passes high_seq. cwnd already equals
    // ssthresh_h there (the PRR model), so tcp_end_cwnd_reduction has nothing to do.
    if (state_ != HostState::open && ev.largest_acked_sent_time > period_start_) {
        state_ = HostState::open;
        module_.set_state(CaState::open);
    }
    // tcp_cong_control: no cong_avoid in a window-reduction state; the
    // post-RTO Loss state still gets it (§1.1).
    if (state_ == HostState::recovery) return;
    sock_.cwnd_limited = !ev.app_limited;
    if (check_cwnd_limited_ && !sock_.cwnd_limited) return;
    const auto acked = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(ev.packets_acked, std::numeric_limits<std::uint32_t>::max()));
    module_.cong_avoid(sock_, acked);
}

void Host::on_congestion_event(const CongestionEvent& ev) {
    if (ev.persistent) {
        enter_loss(ev);
        return;
    }
    // One reduction per window: Linux stays in Recovery/Loss until its
    // high_seq is acked, and a loss from before that point is part of the
    // reduction already made.
    // CE marks (ev.ecn_ce) take the same path, as Linux's CWR state reduces
    // through the module's ssthresh() once per window (tcp_enter_cwr), and
    // like CWR they are never undone (a mark is not spurious).
    if (state_ != HostState::open || ev.largest_lost_sent_time <= period_start_) return;
    enter_recovery(ev.now);
    if (ev.ecn_ce > 0) can_undo_ = false;
}

// tcp_enter_recovery + tcp_init_cwnd_reduction (§1.1 "Congestion event").
void Host::enter_recovery(Instant now) {
    prior_ssthresh_ = sock_.ssthresh;
    sock_.ssthresh = module_.ssthresh(sock_);
    sock_.cnt = 0;
    module_.set_state(CaState::recovery);
    // PRR, simplified: Linux lowers cwnd towards ssthresh_h packet by packet
    // during recovery and sets it to ssthresh_h when recovery ends; the
    // per-ACK hook is not called in between, so only the step's timing differs.
    sock_.cwnd = sock_.ssthresh;
    can_undo_ = true;
    state_ = HostState::recovery;
    period_start_ = now;
}

// tcp_enter_loss (§1.1 "RTO"), for QUIC persistent congestion.
void Host::enter_loss(const CongestionEvent& ev) {
    // Linux: "reduce ssthresh if it has not yet been made inside this
    // window" - an RTO during an unfinished Recovery or Loss (a backed-off
    // RTO) does not call ssthresh() or CA_EVENT_LOSS again.
    if (state_ == HostState::open) {
        prior_ssthresh_ = sock_.ssthresh;
        sock_.ssthresh = module_.ssthresh(sock_);
        module_.cwnd_event(CaEvent::loss);
        can_undo_ = true;
    }
    // cwnd = packets in flight + 1; after an RTO Linux counts every
    // outstanding segment as lost, so this is usually 1.
    const std::uint64_t in_flight = (ev.bytes_in_flight + mds_ - 1) / mds_;
    sock_.cwnd = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(in_flight + 1, std::numeric_limits<std::uint32_t>::max()));
    sock_.cnt = 0;
    module_.set_state(CaState::loss);
    state_ = HostState::loss;
    period_start_ = ev.now;
}

// tcp_undo_cwnd_reduction (§1.1 "Spurious-loss undo"), once per reduction
// as Linux's undo_marker allows.
void Host::on_spurious_congestion() {
    if (!can_undo_) return;
    can_undo_ = false;
    sock_.cwnd = module_.undo_cwnd(sock_);
    if (prior_ssthresh_ > sock_.ssthresh) sock_.ssthresh = prior_ssthresh_;
    if (state_ != HostState::open) {
        state_ = HostState::open;
        module_.set_state(CaState::open);
    }
    // The undone window no longer holds back a new reduction.
    period_start_ = Instant::min();
}

void Host::on_idle_restart() { module_.cwnd_event(CaEvent::cwnd_restart); }

}  // namespace ndm::cc::lkm
