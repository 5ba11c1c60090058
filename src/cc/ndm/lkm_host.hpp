// The Linux host that the NDM-TCP kernel module (lkm_module.hpp) plugs into,
// emulated in packets as docs/ndm-lkm.md §1.1 describes it: the socket fields the
// module reads and writes (Sock), the tcp_slow_start / tcp_cong_avoid_ai /
// tcp_reno_cong_avoid helpers with their integer semantics, and the event
// sequences the kernel runs around the module's callbacks (Host).
//
// Deliberate simplifications, documented in docs/ndm-lkm.md:
//  - PRR is not modelled: cwnd drops to ssthresh_h at the congestion event
//    (Linux ends recovery there too, so only the shape inside recovery differs);
//  - the RTT sample is QUIC's latest_rtt of the largest newly acked packet,
//    not the oldest newly acked never-retransmitted segment;
//  - an RTO is QUIC persistent congestion, and in-flight is counted as
//    ceil(bytes_in_flight / max_datagram_size) packets; as in tcp_enter_loss,
//    an RTO inside an unfinished Recovery/Loss does not call ssthresh() again;
//  - recovery ends on the ACK of a packet sent after it began (QUIC's rule)
//    rather than on a cumulative ACK past high_seq;
//  - tcp_is_cwnd_limited() is the core's AckEvent::app_limited, negated (the
//    core decides it by Linux's rule);
//  - the idle-restart cwnd reduction (tcp_cwnd_restart) is not applied.
#pragma once

#include <cstdint>

#include "cc/ndm/lkm_module.hpp"
#include "ndm/cc.hpp"
#include "ndm/time.hpp"

namespace ndm::cc::lkm {

// TCP_INFINITE_SSTHRESH.
inline constexpr std::uint32_t kInfiniteSsthresh = 0x7FFFFFFF;

// The fields of struct tcp_sock the module touches, in packets (§1.1).
struct Sock {
    std::uint32_t cwnd = 10;                       // snd_cwnd
    std::uint32_t ssthresh = kInfiniteSsthresh;    // snd_ssthresh (ssthresh_h)
    std::uint32_t cnt = 0;                         // snd_cwnd_cnt, shared with the module
    std::uint32_t clamp = 0xFFFFFFFF;              // snd_cwnd_clamp: effectively unbounded
    std::uint32_t srtt8 = 0;                       // srtt_us: 8 x smoothed RTT in us
    bool cwnd_limited = true;                      // tcp_is_cwnd_limited()

    // tcp_rtt_estimator's srtt part for one valid sample r (us); runs before
    // the module's hook sees the ACK (§1.1).
    void rtt_sample(std::uint32_t r_us) noexcept;
    // tcp_slow_start: returns the acked count left over (the module discards
    // it; reno() uses it). Lowers cwnd when cwnd > ssthresh (§1.1).
    std::uint32_t slow_start(std::uint32_t acked) noexcept;
    // tcp_cong_avoid_ai.
    void ai(std::uint32_t w, std::uint32_t acked) noexcept;
    // tcp_reno_cong_avoid.
    void reno(std::uint32_t acked) noexcept;
};

// The congestion-control states of the host that matter here (a subset of
// Linux's tcp_ca_state; Disorder and CWR never occur: no ECN, no reordering
// heuristics).
enum class HostState : std::uint8_t { open, recovery, loss };

// The kernel's side of the contract, driven by the transport's events.
class Host {
public:
    // check_cwnd_limited: skip the module's per-ACK hook when the flow is
    // not cwnd-limited, as Linux's own Reno and Cubic hooks return early; the
    // published module never checks (docs/ndm-lkm.md §1.6 c), so false is Linux.
    Host(std::uint64_t max_datagram_size, std::uint32_t initial_window, NoiseCut cut,
         bool check_cwnd_limited = false);

    void on_ack(const AckEvent& ev);
    void on_congestion_event(const CongestionEvent& ev);
    void on_spurious_congestion();
    void on_idle_restart();

    [[nodiscard]] const Sock& sock() const noexcept { return sock_; }
    [[nodiscard]] const Module& module() const noexcept { return module_; }
    [[nodiscard]] HostState state() const noexcept { return state_; }

private:
    void enter_recovery(Instant now);
    void enter_loss(const CongestionEvent& ev);

    Sock sock_;
    Module module_;
    std::uint64_t mds_;
    // For undo (tcp_undo_cwnd_reduction): the threshold before the last
    // reduction; valid while can_undo_ (Linux's undo_marker).
    std::uint32_t prior_ssthresh_ = 0;
    bool can_undo_ = false;
    bool check_cwnd_limited_;
    HostState state_ = HostState::open;
    // Linux's high_seq as a time: the recovery or loss period lasts until a
    // packet sent after this instant is acknowledged, and losses of packets
    // sent at or before it belong to the reduction already made.
    Instant period_start_ = Instant::min();
};

}  // namespace ndm::cc::lkm
