// The NDM-TCP kernel module v1.0 (ndm_tcp_lkm.c), ported bit for bit from the
// clean-room description in docs/ndm-lkm.md §1.2-§1.7: its per-connection state,
// the "entropy", the activation approximations, the 8->8->1 recurrent forward
// pass with index-generated weights, the per-ACK hook and the other
// callbacks. It is deliberately not improved: quirks the spec lists (E is
// 0 or 1000, the non-monotonic "tanh", the 1/3 cut on "noise" losses, the
// slow-start stall) are part of what is reproduced.
//
// The module only sees the host through Sock (lkm_host.hpp), as a Linux
// tcp_congestion_ops sees struct tcp_sock.
#pragma once

#include <array>
#include <cstdint>

namespace ndm::cc::lkm {

struct Sock;

// What ssthresh() does on a loss it classifies as "noise" (E > 700): the
// published code keeps cwnd/3; its comments and README intend 2*cwnd/3
// (§1.7). Only `third` is the published behaviour.
enum class NoiseCut : std::uint8_t { third, two_thirds };

// enum tcp_ca_event: the module reacts to loss and cwnd_restart only (§1.7).
enum class CaEvent : std::uint8_t { tx_start, cwnd_restart, complete_cwr, loss, ecn_no_ce, ecn_is_ce };
// enum tcp_ca_state: the module reacts to loss only (§1.7).
enum class CaState : std::uint8_t { open, disorder, cwr, recovery, loss };

// Constants of §1.2.
inline constexpr int kHistory = 16;
inline constexpr int kHidden = 8;
inline constexpr int kInputs = 8;
inline constexpr std::uint16_t kEntropyThreshold = 700;
inline constexpr std::uint16_t kPlasticityBase = 300;
inline constexpr std::uint16_t kPlasticityFloor = 100;
inline constexpr std::uint16_t kPlasticityCap = 1000;

// The per-connection state of §1.2, field for field (72 bytes: Linux gives a
// congestion module 104 in ICSK_CA_PRIV_SIZE).
struct State {
    std::uint32_t min_rtt_us = 0xFFFFFFFF;  // min of srtt, never expires
    std::uint32_t prior_cwnd = 0;           // cwnd at the last ssthresh(), for undo
    std::uint32_t ssthresh = 0;             // the module's own copy (S.ssthresh)
    std::array<std::uint16_t, kHistory> hist{};  // srtt in whole ms, ring buffer
    std::uint16_t hidx = 0;
    std::uint16_t hcnt = 0;
    std::array<std::int16_t, kHidden> h{};  // recurrent hidden state
    std::uint16_t ent = 0;                  // "entropy", 0..1000 (in fact 0 or 1000)
    std::uint16_t plast = kPlasticityBase;  // "plasticity", 100..1000
    std::uint16_t pk = 0;                   // packets acked since the last entropy refresh
    std::uint8_t has_data : 1 = 0;
    std::uint8_t ss : 1 = 1;
    std::uint8_t cong : 1 = 0;
    std::uint8_t loss : 1 = 0;
};

// Every intermediate of one forward pass, for tests (§1.8 B, B2).
struct ForwardTrace {
    std::array<std::int64_t, kInputs> x{};
    std::array<std::int64_t, kHidden> s{};  // pre-activations
    std::array<std::int16_t, kHidden> y{};  // hidden outputs (stored back into h)
    std::int32_t o = 0;
    std::uint32_t d = 0;
};

class Module {
public:
    explicit Module(NoiseCut cut = NoiseCut::third) noexcept : cut_(cut) {}

    // tcp_congestion_ops callbacks (§1.2 init, §1.6, §1.7).
    void init(Sock& tp) noexcept;
    void cong_avoid(Sock& tp, std::uint32_t acked) noexcept;
    std::uint32_t ssthresh(const Sock& tp) noexcept;
    std::uint32_t undo_cwnd(Sock& tp) noexcept;
    void cwnd_event(CaEvent ev) noexcept;
    void set_state(CaState s) noexcept;

    // The forward pass F(rtt_us) of §1.5 on the current state; updates h[].
    std::uint32_t forward(std::uint32_t rtt_us, ForwardTrace* trace = nullptr) noexcept;

    // §1.3 on hist[0..min(hcnt,16)-1]: the raw sum of terms (0 when hcnt < 8
    // or all samples are equal), and E = min(sum/4, 1000).
    [[nodiscard]] static std::uint64_t entropy_sum(const std::array<std::uint16_t, kHistory>& hist,
                                                   std::uint16_t hcnt) noexcept;
    [[nodiscard]] static std::uint16_t entropy(const std::array<std::uint16_t, kHistory>& hist,
                                               std::uint16_t hcnt) noexcept;
    // §1.4: the cubic-Taylor "tanh" (non-monotonic, odd, T(3000) = -6000) and
    // the linear "sigmoid", scale 1000. Defined here so that they inline even
    // in a -fPIC build.
    [[nodiscard]] static constexpr std::int16_t tanh_approx(std::int64_t x) noexcept {
        if (x > 3000) return 1000;
        if (x < -3000) return -1000;
        // The published s64 arithmetic; with |x| <= 3000 every intermediate
        // (|a*x| <= 2.7e7) fits in 32 bits, which gives the same quotients faster.
        const auto x32 = static_cast<std::int32_t>(x);
        const std::int32_t a = (x32 * x32) / 1000;
        const std::int32_t b = (a * x32) / 1000;
        return static_cast<std::int16_t>(x32 - b / 3);
    }
    [[nodiscard]] static constexpr std::uint32_t sigmoid_approx(std::int32_t x) noexcept {
        if (x > 6000) return 1000;
        if (x < -6000) return 0;
        const std::int32_t y = 500 + x / 8;
        return static_cast<std::uint32_t>(y < 0 ? 0 : (y > 1000 ? 1000 : y));
    }
    // §1.6: the congestion-avoidance credit per ACK, max(1, acked*d/1000) in
    // "noise" mode and max(1, acked*d/2000) in "congestion" mode.
    [[nodiscard]] static constexpr std::uint32_t ca_credit(std::uint32_t acked, std::uint32_t d,
                                                           bool cong) noexcept {
        const std::uint64_t credit = static_cast<std::uint64_t>(acked) * d / (cong ? 2000 : 1000);
        return credit < 1 ? 1 : static_cast<std::uint32_t>(credit);
    }

    [[nodiscard]] const State& state() const noexcept { return st_; }
    // Direct access for tests that set up a state (§1.8 B).
    [[nodiscard]] State& mutable_state() noexcept { return st_; }
    [[nodiscard]] NoiseCut noise_cut() const noexcept { return cut_; }

private:
    State st_;
    NoiseCut cut_;  // configuration, not part of the published state
};

}  // namespace ndm::cc::lkm
