// The NDM-TCP v1.0 module, docs/ndm-lkm.md §1.2-§1.7. Every "÷" of the spec is
// C's truncating integer division. Operand widths follow the spec (s64/u64
// where it says so); a different width is used only where no value the
// operands can take changes a quotient, and tests compare such spots with the
// literal formulas.
#include "cc/ndm/lkm_module.hpp"

#include <algorithm>
#include <bit>

#include "cc/ndm/lkm_host.hpp"

namespace ndm::cc::lkm {

namespace {

// §1.5: weights generated from the indices, w_ij = ((37i + 17j) mod 2000) - 1000
// in unsigned arithmetic (no wrap occurs, so every weight is 37i + 17j - 1000),
// and output weights v_j = 13j - 1000.
constexpr auto kW = [] {
    std::array<std::array<std::int32_t, kInputs>, kHidden> w{};
    for (std::uint32_t i = 0; i < kHidden; ++i) {
        for (std::uint32_t j = 0; j < kInputs; ++j) {
            w[i][j] = static_cast<std::int32_t>((37 * i + 17 * j) % 2000) - 1000;
        }
    }
    return w;
}();
constexpr auto kV = [] {
    std::array<std::int32_t, kHidden> v{};
    for (std::int32_t j = 0; j < kHidden; ++j) v[j] = 13 * j - 1000;
    return v;
}();

}  // namespace

// ---- §1.3 entropy ----------------------------------------------------------

std::uint64_t Module::entropy_sum(const std::array<std::uint16_t, kHistory>& hist,
                                  std::uint16_t hcnt) noexcept {
    if (hcnt < 8) return 0;
    const std::uint32_t c = std::min<std::uint32_t>(hcnt, kHistory);
    std::uint16_t mn = hist[0];
    std::uint16_t mx = hist[0];
    for (std::uint32_t k = 1; k < c; ++k) {
        mn = std::min(mn, hist[k]);
        mx = std::max(mx, hist[k]);
    }
    const auto range = static_cast<std::uint16_t>(mx - mn);
    if (range == 0) return 0;
    std::array<std::uint32_t, 16> bins{};
    for (std::uint32_t k = 0; k < c; ++k) {
        const std::uint32_t b = (static_cast<std::uint32_t>(hist[k] - mn) * 15) / range;
        ++bins[std::min<std::uint32_t>(b, 15)];
    }
    std::uint64_t sum = 0;
    for (const std::uint32_t n : bins) {
        if (n == 0) continue;
        const std::uint64_t p = static_cast<std::uint64_t>(n) * 1'000'000 / c;
        // The "log2" is the bit length of the probability in per mille (§1.3).
        const auto q = static_cast<std::uint32_t>(p / 1000);
        const std::uint64_t l = 1000ull * static_cast<std::uint64_t>(std::bit_width(q));
        sum += p * l / 1'000'000;
    }
    return sum;
}

std::uint16_t Module::entropy(const std::array<std::uint16_t, kHistory>& hist,
                              std::uint16_t hcnt) noexcept {
    return static_cast<std::uint16_t>(std::min<std::uint64_t>(entropy_sum(hist, hcnt) / 4, 1000));
}

// ---- §1.5 forward pass ------------------------------------------------------

std::uint32_t Module::forward(std::uint32_t rtt_us, ForwardTrace* trace) noexcept {
    const std::uint32_t min_rtt = std::max<std::uint32_t>(st_.min_rtt_us, 1);
    const std::array<std::int64_t, kInputs> x = {
        static_cast<std::int64_t>(static_cast<std::uint64_t>(rtt_us) * 1000 / min_rtt) - 1000,
        st_.ent,
        st_.ss ? 1000 : -1000,
        st_.cong ? -1000 : 1000,
        static_cast<std::int64_t>(st_.plast) - 500,
        st_.loss ? -1000 : 1000,
        0,
        0,
    };
    // s_i = sum_j (x_j * w_ij) / 1000 + (h_i * 500) / 1000, each product
    // truncated separately. Computed with identities that are exact in
    // truncating integer arithmetic, so every result is bit-identical (a
    // test compares with the literal formula): x6 = x7 = 0 contribute 0;
    // x2, x3, x5 are +-1000, so (+-1000 * w) / 1000 = +-w; (h * 500) / 1000 = h / 2.
    // That leaves 3 of the 8 products per unit to divide.
    const auto x1 = static_cast<std::int32_t>(x[1]);
    const auto x4 = static_cast<std::int32_t>(x[4]);
    const std::int64_t sign2 = x[2] / 1000;
    const std::int64_t sign3 = x[3] / 1000;
    const std::int64_t sign5 = x[5] / 1000;
    std::int64_t o = 0;
    for (int i = 0; i < kHidden; ++i) {
        // x1 and x4 come from u16 fields: their products fit in 32 bits.
        std::int64_t s = (x[0] * kW[i][0]) / 1000 + (x1 * kW[i][1]) / 1000 + (x4 * kW[i][4]) / 1000;
        s += sign2 * kW[i][2] + sign3 * kW[i][3] + sign5 * kW[i][5];
        s += st_.h[i] / 2;
        const std::int16_t y = tanh_approx(s);
        // Unit i reads only its own old h_i, so the in-place update is safe.
        st_.h[i] = y;
        o += (y * kV[i]) / 1000;  // |y| <= 6000: fits in 32 bits
        if (trace != nullptr) {
            trace->s[i] = s;
            trace->y[i] = y;
        }
    }
    const auto o32 = static_cast<std::int32_t>(o);
    const std::uint32_t d = sigmoid_approx(st_.ent > kEntropyThreshold ? o32 / 2 : o32);
    if (trace != nullptr) {
        trace->x = x;
        trace->o = o32;
        trace->d = d;
    }
    return d;
}

// ---- callbacks --------------------------------------------------------------

void Module::init(Sock& tp) noexcept {
    st_ = State{};
    st_.prior_cwnd = tp.cwnd;
    st_.ssthresh = tp.ssthresh;
    tp.ssthresh = kInfiniteSsthresh;
}

// §1.6, in exactly the published order.
void Module::cong_avoid(Sock& tp, std::uint32_t acked) noexcept {
    if (acked == 0) return;
    st_.pk = static_cast<std::uint16_t>(st_.pk + acked);
    const std::uint32_t r = std::max<std::uint32_t>(tp.srtt8 >> 3, 1);
    if (r < st_.min_rtt_us) st_.min_rtt_us = r;
    // Whole milliseconds; anything below 1 ms stores 1 (so E = 0 on a LAN, §1.6 d).
    const std::uint32_t ms = std::max<std::uint32_t>(std::min<std::uint32_t>(r / 1000, 65535), 1);
    st_.hist[st_.hidx] = static_cast<std::uint16_t>(ms);
    st_.hidx = static_cast<std::uint16_t>((st_.hidx + 1) % kHistory);
    if (st_.hcnt < kHistory) ++st_.hcnt;
    if (st_.pk >= 8) {
        st_.ent = entropy(st_.hist, st_.hcnt);
        st_.pk = 0;
        st_.has_data = 1;
        st_.cong = st_.ent < kEntropyThreshold ? 1 : 0;
        st_.loss = 0;  // the only place the loss flag is cleared
    }
    st_.ss = tp.cwnd < st_.ssthresh ? 1 : 0;  // the module's copy, not the host's
    const std::uint32_t d = forward(r);  // every ACK: it advances h[] even when unused
    if (st_.ss) {
        // acked = 1 with cong = 1 adds nothing: the slow-start stall (§1.6 b).
        tp.slow_start(st_.cong ? acked / 2 : acked);
    } else if (st_.has_data) {
        tp.ai(tp.cwnd, ca_credit(acked, d, st_.cong != 0));
    } else {
        tp.reno(acked);  // only before the first entropy refresh
    }
    st_.plast = static_cast<std::uint16_t>(
        std::max<std::uint32_t>(static_cast<std::uint32_t>(st_.plast) * 995 / 1000, kPlasticityFloor));
}

// §1.7: the published code cuts to cwnd/3 on a "noise" loss (k = 3), not to
// the 2/3 its comments claim; two_thirds is the documented intent, opt-in.
std::uint32_t Module::ssthresh(const Sock& tp) noexcept {
    st_.loss = 1;
    st_.plast = std::min<std::uint16_t>(static_cast<std::uint16_t>(st_.plast + 100), kPlasticityCap);
    const bool noise = st_.has_data && st_.ent > kEntropyThreshold;
    std::uint32_t target = 0;
    if (!noise) {
        target = tp.cwnd / 2;
    } else if (cut_ == NoiseCut::third) {
        target = tp.cwnd / 3;
    } else {
        target = static_cast<std::uint32_t>(2 * static_cast<std::uint64_t>(tp.cwnd) / 3);
    }
    st_.ssthresh = std::max<std::uint32_t>(target, 2);
    st_.prior_cwnd = tp.cwnd;
    return st_.ssthresh;
}

// §1.7: S.ssthresh is not restored, so it stays at the reduced value.
std::uint32_t Module::undo_cwnd(Sock& tp) noexcept {
    tp.cwnd = std::max(tp.cwnd, st_.prior_cwnd);
    st_.ss = tp.cwnd < st_.ssthresh ? 1 : 0;
    return tp.cwnd;
}

void Module::cwnd_event(CaEvent ev) noexcept {
    if (ev == CaEvent::loss) {
        st_.cong = 1;
        st_.loss = 1;
    } else if (ev == CaEvent::cwnd_restart) {
        st_.plast = kPlasticityBase;
    }
}

void Module::set_state(CaState s) noexcept {
    if (s != CaState::loss) return;
    st_.cong = 1;
    st_.loss = 1;
    st_.plast = std::min<std::uint16_t>(static_cast<std::uint16_t>(st_.plast + 150), kPlasticityCap);
}

}  // namespace ndm::cc::lkm
