// ndm-lkm: the NDM-TCP kernel-module port (src/cc/ndm/lkm_*) against the
// worked examples of docs/ndm-lkm.md §1.8 and the rules of §1.1-§1.7. Examples C
// and D run through the whole controller (host emulation included) with
// synthetic ACK and congestion event streams; one transfer runs end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "cc/ndm/lkm_controller.hpp"
#include "cc/ndm/lkm_host.hpp"
#include "cc/ndm/lkm_module.hpp"
#include "cc_test_util.hpp"
#include "ndm/cc.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;
using ndm::Instant;
using ndm::cc::AckEvent;
using ndm::cc::Params;
using ndm::cc::lkm::ForwardTrace;
using ndm::cc::lkm::kInfiniteSsthresh;
using ndm::cc::lkm::LkmController;
using ndm::cc::lkm::Module;
using ndm::cc::lkm::Sock;
using ndm::cc::lkm::State;

namespace {

using ndm::test::cc_params;
using ndm::test::kMds;
using Hist = std::array<std::uint16_t, 16>;

// Drives a controller with one ACK per call; time advances 1 ms per ACK and
// each acked packet was sent one RTT earlier.
struct Driver {
    LkmController cc;
    Instant now = Instant{} + 1s;

    explicit Driver(std::string_view options = {}) : cc(cc_params(), ndm::cc::parse_options(options)) {}

    [[nodiscard]] std::uint32_t cwnd_packets() const { return static_cast<std::uint32_t>(cc.cwnd() / kMds); }
    [[nodiscard]] const State& module() const { return cc.host().module().state(); }

    void ack(std::uint64_t packets, ndm::Duration rtt, bool app_limited = false) {
        ack_sent(packets, rtt, now - rtt, app_limited);
    }
    void ack_sent(std::uint64_t packets, ndm::Duration rtt, Instant sent, bool app_limited = false) {
        now += 1ms;
        cc.on_ack(ndm::test::ack_event(now, packets * kMds, sent, rtt, app_limited));
    }
    void loss(Instant largest_lost_sent, bool persistent = false, std::uint64_t in_flight_bytes = 0) {
        now += 1ms;
        auto ev = ndm::test::loss_event(now, largest_lost_sent, persistent);
        ev.bytes_in_flight = in_flight_bytes;
        cc.on_congestion_event(ev);
    }
};

// Example D's RTT samples: 50 ms, then 66/36 ms alternately, which makes the
// host's srtt (srtt8 += r - srtt8/8) alternate exactly 52, 50, 52, ... ms.
ndm::Duration d_sample(int k) {
    if (k == 0) return 50ms;
    return k % 2 == 1 ? 66ms : 36ms;
}

// Example D up to the loss: 30 ACKs of one packet, slow start 10 -> 40.
void run_d_slow_start(Driver& d, int& k) {
    for (; k < 30; ++k) d.ack(1, d_sample(k));
}

}  // namespace

// ---- §1.2 state -------------------------------------------------------------

TEST_CASE("ndm-lkm: per-connection state is the published 72 bytes (§1.2)") {
    MESSAGE("sizeof(lkm::State) = ", sizeof(State), ", sizeof(lkm::Module) = ", sizeof(Module),
            ", sizeof(LkmController) = ", sizeof(LkmController));
    CHECK(sizeof(State) == 72);
    CHECK(sizeof(State) <= 104);  // ICSK_CA_PRIV_SIZE
    Sock tp;
    tp.cwnd = 10;
    tp.ssthresh = 1234;
    Module m;
    m.init(tp);
    const auto& s = m.state();
    CHECK(s.min_rtt_us == 0xFFFFFFFFu);
    CHECK(s.prior_cwnd == 10);
    CHECK(s.ssthresh == 1234);  // the host's value at init ...
    CHECK(tp.ssthresh == kInfiniteSsthresh);  // ... which init then sets to INF
    CHECK(s.plast == 300);
    CHECK(s.hcnt == 0);
    CHECK(s.ent == 0);
    CHECK(s.ss == 1);
    CHECK(s.has_data == 0);
    CHECK(s.cong == 0);
    CHECK(s.loss == 0);
}

// ---- §1.3 entropy -----------------------------------------------------------

TEST_CASE("ndm-lkm: entropy example A, 16 samples (§1.8 A)") {
    const Hist h = {50, 52, 48, 55, 60, 45, 50, 51, 49, 70, 50, 53, 47, 50, 52, 58};
    CHECK(Module::entropy_sum(h, 16) == 7437);
    CHECK(Module::entropy(h, 16) == 1000);
    // hcnt above 16 cannot happen, but c = min(hcnt, 16) would cap it.
    CHECK(Module::entropy_sum(h, 20) == 7437);
}

TEST_CASE("ndm-lkm: entropy example A2, 8 samples (§1.8 A2)") {
    const Hist h = {50, 50, 50, 50, 50, 50, 50, 51};
    CHECK(Module::entropy_sum(h, 8) == 9625);
    CHECK(Module::entropy(h, 8) == 1000);
    // Order does not matter, slots beyond hcnt are ignored.
    const Hist h2 = {51, 50, 50, 50, 50, 50, 50, 50, 999, 1, 7};
    CHECK(Module::entropy_sum(h2, 8) == 9625);
}

TEST_CASE("ndm-lkm: entropy example A3 and too few samples (§1.8 A3)") {
    Hist same{};
    same.fill(50);
    CHECK(Module::entropy(same, 16) == 0);
    Hist ones{};
    ones.fill(1);
    CHECK(Module::entropy(ones, 16) == 0);
    const Hist seven = {50, 60, 70, 80, 90, 100, 110};
    CHECK(Module::entropy(seven, 7) == 0);
    CHECK(Module::entropy(seven, 0) == 0);
}

TEST_CASE("ndm-lkm: entropy takes only the values 0 and 1000 (§1.3 brute force)") {
    std::mt19937_64 rng(0x1d3);
    int zero = 0;
    int full = 0;
    for (int n = 0; n < 200'000; ++n) {
        Hist h{};
        const auto hcnt = static_cast<std::uint16_t>(8 + rng() % 9);
        // Spreads from "all equal" through 1-2 ms jitter to wide, up to u16 max.
        const std::uint32_t spread[] = {1, 2, 3, 10, 1000, 65535};
        const std::uint32_t width = spread[rng() % 6];
        const auto base = static_cast<std::uint32_t>(rng() % (65536 - width + 1));
        bool all_equal = true;
        for (int k = 0; k < hcnt; ++k) {
            h[k] = static_cast<std::uint16_t>(base + rng() % width);
            all_equal = all_equal && h[k] == h[0];
        }
        const auto e = Module::entropy(h, hcnt);
        REQUIRE((e == 0 || e == 1000));
        REQUIRE((e == 0) == all_equal);
        (e == 0 ? zero : full)++;
    }
    MESSAGE("E = 0: ", zero, " histories, E = 1000: ", full);
    CHECK(zero > 0);
    CHECK(full > 0);
}

// ---- §1.4 activations ---------------------------------------------------------

TEST_CASE("ndm-lkm: tanh approximation edge cases (§1.4)") {
    CHECK(Module::tanh_approx(0) == 0);
    CHECK(Module::tanh_approx(1000) == 667);
    CHECK(Module::tanh_approx(2000) == -666);
    CHECK(Module::tanh_approx(-2000) == 666);
    CHECK(Module::tanh_approx(3000) == -6000);
    CHECK(Module::tanh_approx(-3000) == 6000);
    CHECK(Module::tanh_approx(3001) == 1000);
    CHECK(Module::tanh_approx(-3001) == -1000);
    CHECK(Module::tanh_approx(1'000'000) == 1000);
    // The zero crossing near sqrt(3) * 1000.
    CHECK(Module::tanh_approx(1732) == 1);
    CHECK(Module::tanh_approx(1733) == -1);
    // Odd symmetry everywhere (truncating division is odd too).
    for (std::int64_t x = -5000; x <= 5000; ++x) {
        REQUIRE(Module::tanh_approx(-x) == -Module::tanh_approx(x));
    }
}

TEST_CASE("ndm-lkm: sigmoid approximation saturates at |x| >= 4000 (§1.4)") {
    CHECK(Module::sigmoid_approx(0) == 500);
    CHECK(Module::sigmoid_approx(464) == 558);
    CHECK(Module::sigmoid_approx(7) == 500);
    CHECK(Module::sigmoid_approx(-7) == 500);  // truncation toward 0
    CHECK(Module::sigmoid_approx(-8) == 499);
    CHECK(Module::sigmoid_approx(3999) == 999);
    CHECK(Module::sigmoid_approx(4000) == 1000);
    CHECK(Module::sigmoid_approx(6000) == 1000);
    CHECK(Module::sigmoid_approx(6001) == 1000);
    CHECK(Module::sigmoid_approx(-3999) == 1);
    CHECK(Module::sigmoid_approx(-4000) == 0);
    CHECK(Module::sigmoid_approx(-6000) == 0);
    CHECK(Module::sigmoid_approx(-6001) == 0);
    CHECK(Module::sigmoid_approx(-14011) == 0);
}

// ---- §1.5 forward pass ----------------------------------------------------------

TEST_CASE("ndm-lkm: forward pass example B (§1.8 B)") {
    Module m;
    auto& s = m.mutable_state();
    s.min_rtt_us = 50000;
    s.ent = 1000;
    s.ss = 0;
    s.cong = 0;
    s.loss = 0;
    s.plast = 300;
    ForwardTrace t;
    CHECK(m.forward(60000, &t) == 558);
    CHECK(t.x == std::array<std::int64_t, 8>{200, 1000, -1000, 1000, -200, 1000, 0, 0});
    CHECK(t.s == std::array<std::int64_t, 8>{-1895, -1820, -1747, -1672, -1599, -1525, -1450, -1377});
    CHECK(t.y == std::array<std::int16_t, 8>{373, 189, 30, -115, -237, -344, -435, -507});
    CHECK(m.state().h == t.y);
    CHECK(t.o == 928);
    CHECK(t.d == 558);
    // The same input twice more: the recurrence changes the output.
    CHECK(m.forward(60000, &t) == 527);
    CHECK(t.o == 439);
    CHECK(m.forward(60000, &t) == 539);
    CHECK(t.o == 626);
}

TEST_CASE("ndm-lkm: forward pass example B2, first ACKs of a connection (§1.8 B2)") {
    // Through the real hook: srtt 50 ms, so min_rtt = rtt; E = 0, ss = 1.
    Sock tp;
    tp.srtt8 = 8 * 50000;
    Module m;
    m.init(tp);
    // The first ACK's pass, reproduced on a copy to see its intermediates.
    Module probe = m;
    probe.mutable_state().min_rtt_us = 50000;
    ForwardTrace t;
    CHECK(probe.forward(50000, &t) == 0);
    CHECK(t.x == std::array<std::int64_t, 8>{0, 0, 1000, 1000, -200, 1000, 0, 0});
    CHECK(t.s.front() == -2644);
    CHECK(t.s.back() == -1919);
    CHECK(t.y == std::array<std::int16_t, 8>{3516, 2921, 2386, 1899, 1465, 1076, 733, 436});
    CHECK(t.o == -14011);

    m.cong_avoid(tp, 1);
    CHECK(m.state().h == t.y);  // the hook ran the same pass
    CHECK(m.state().min_rtt_us == 50000);
    CHECK(tp.cwnd == 11);
    CHECK(m.state().plast == 298);
    // The second ACK's pass (plast is 298 by then): the signs flip.
    probe = m;
    CHECK(probe.forward(50000, &t) == 895);
    CHECK(t.x[4] == -202);
    CHECK(t.o == 3163);
    m.cong_avoid(tp, 1);
    CHECK(m.state().h == probe.state().h);
}

TEST_CASE("ndm-lkm: index-generated weights are all negative (§1.5)") {
    // With x = e_j * 1000 and h = 0, s_i is exactly w_ij (every weight fits).
    // Input 0 is the RTT ratio, so e_0 is rtt = 2 * min_rtt; inputs 6 and 7 are
    // always 0 and cannot be probed.
    Module m;
    auto& s = m.mutable_state();
    s.min_rtt_us = 1000;
    s.ent = 0;
    s.plast = 500;  // x4 = 0
    // ss = 1 -> x2 = 1000, cong = 0 -> x3 = 1000, loss = 0 -> x5 = 1000
    ForwardTrace t;
    m.forward(1000, &t);  // x0 = 0
    for (int i = 0; i < 8; ++i) {
        const std::int64_t w2 = 37 * i + 17 * 2 - 1000;
        const std::int64_t w3 = 37 * i + 17 * 3 - 1000;
        const std::int64_t w5 = 37 * i + 17 * 5 - 1000;
        CHECK(t.s[i] == w2 + w3 + w5);
        CHECK(w2 < 0);
    }
}

namespace {

// §1.4 literally, in s64 as published.
std::int16_t reference_tanh(std::int64_t x) {
    if (x > 3000) return 1000;
    if (x < -3000) return -1000;
    const std::int64_t a = (x * x) / 1000;
    const std::int64_t b = (a * x) / 1000;
    return static_cast<std::int16_t>(x - b / 3);
}

std::uint32_t reference_sigmoid(std::int32_t x) {
    if (x > 6000) return 1000;
    if (x < -6000) return 0;
    return static_cast<std::uint32_t>(std::clamp(500 + x / 8, 0, 1000));
}

// §1.5 written out literally (every product of all 8 inputs divided
// separately, index formula for the weights), to check the module's faster
// but exact evaluation.
ForwardTrace reference_forward(State& st, std::uint32_t rtt_us) {
    ForwardTrace t;
    const std::uint32_t min_rtt = std::max<std::uint32_t>(st.min_rtt_us, 1);
    t.x = {static_cast<std::int64_t>(std::uint64_t{rtt_us} * 1000 / min_rtt) - 1000,
           st.ent,
           st.ss ? 1000 : -1000,
           st.cong ? -1000 : 1000,
           static_cast<std::int64_t>(st.plast) - 500,
           st.loss ? -1000 : 1000,
           0,
           0};
    std::int64_t o = 0;
    for (std::uint32_t i = 0; i < 8; ++i) {
        std::int64_t s = 0;
        for (std::uint32_t j = 0; j < 8; ++j) {
            const std::int64_t w = static_cast<std::int64_t>((37 * i + 17 * j) % 2000) - 1000;
            s += (t.x[j] * w) / 1000;
        }
        s += (static_cast<std::int64_t>(st.h[i]) * 500) / 1000;
        t.s[i] = s;
        t.y[i] = reference_tanh(s);
        st.h[i] = t.y[i];
        o += (static_cast<std::int64_t>(t.y[i]) * (13 * static_cast<std::int64_t>(i) - 1000)) / 1000;
    }
    t.o = static_cast<std::int32_t>(o);
    t.d = reference_sigmoid(st.ent > 700 ? t.o / 2 : t.o);
    return t;
}

}  // namespace

TEST_CASE("ndm-lkm: activations equal the literal s64 formulas (§1.4)") {
    for (std::int64_t x = -20000; x <= 20000; ++x) {
        REQUIRE(Module::tanh_approx(x) == reference_tanh(x));
        REQUIRE(Module::sigmoid_approx(static_cast<std::int32_t>(x)) ==
                reference_sigmoid(static_cast<std::int32_t>(x)));
    }
    CHECK(Module::tanh_approx(INT64_MIN / 2) == -1000);
    CHECK(Module::sigmoid_approx(INT32_MIN) == 0);
    static_assert(Module::tanh_approx(1000) == 667);  // usable at compile time
}

TEST_CASE("ndm-lkm: the forward pass equals the literal §1.5 formula on random states") {
    std::mt19937_64 rng(0xf0a2d);
    for (int n = 0; n < 20'000; ++n) {
        Module m;
        auto& st = m.mutable_state();
        st.min_rtt_us = static_cast<std::uint32_t>(1 + rng() % 200'000);
        st.ent = static_cast<std::uint16_t>(rng() % 3 == 0 ? rng() % 1001 : (rng() % 2) * 1000);
        st.ss = rng() % 2;
        st.cong = rng() % 2;
        st.loss = rng() % 2;
        st.plast = static_cast<std::uint16_t>(100 + rng() % 901);
        for (auto& h : st.h) h = static_cast<std::int16_t>(static_cast<int>(rng() % 12001) - 6000);
        State ref = st;
        // A short sequence, so the recurrence is exercised too.
        for (int step = 0; step < 4; ++step) {
            const auto ratio_pm = rng() % 4 == 0 ? rng() % 100'000 : rng() % 3000;  // rtt/min in per mille
            const auto rtt = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(std::uint64_t{st.min_rtt_us} * (1000 + ratio_pm) / 1000, 0xFFFFFFFF));
            ForwardTrace got;
            const auto d = m.forward(rtt, &got);
            const auto want = reference_forward(ref, rtt);
            REQUIRE(got.x == want.x);
            REQUIRE(got.s == want.s);
            REQUIRE(got.y == want.y);
            REQUIRE(got.o == want.o);
            REQUIRE(d == want.d);
            REQUIRE(m.state().h == ref.h);
        }
    }
}

// ---- §1.6 per-ACK hook -------------------------------------------------------------

TEST_CASE("ndm-lkm: CA credit table (§1.8)") {
    struct Row {
        std::uint32_t acked, d, noise, cong;
    };
    const Row rows[] = {
        {1, 0, 1, 1},    {1, 499, 1, 1},  {1, 500, 1, 1},  {1, 999, 1, 1},  {1, 1000, 1, 1},
        {2, 0, 1, 1},    {2, 499, 1, 1},  {2, 500, 1, 1},  {2, 999, 1, 1},  {2, 1000, 2, 1},
        {4, 0, 1, 1},    {4, 499, 1, 1},  {4, 500, 2, 1},  {4, 749, 2, 1},  {4, 750, 3, 1},
        {4, 999, 3, 1},  {4, 1000, 4, 2},
    };
    for (const auto& r : rows) {
        CAPTURE(r.acked);
        CAPTURE(r.d);
        CHECK(Module::ca_credit(r.acked, r.d, false) == r.noise);
        CHECK(Module::ca_credit(r.acked, r.d, true) == r.cong);
    }
}

TEST_CASE("ndm-lkm: host helpers' integer semantics (§1.1)") {
    SUBCASE("slow_start is capped by ssthresh_h and lowers a cwnd above it") {
        Sock tp;
        tp.cwnd = 10;
        tp.ssthresh = 12;
        CHECK(tp.slow_start(5) == 3);
        CHECK(tp.cwnd == 12);
        tp.cwnd = 20;
        tp.slow_start(1);
        CHECK(tp.cwnd == 12);
        tp.ssthresh = kInfiniteSsthresh;
        tp.clamp = 15;
        tp.slow_start(10);
        CHECK(tp.cwnd == 15);
    }
    SUBCASE("ai: stale full credit, then whole windows of credit") {
        Sock tp;
        tp.cwnd = 10;
        tp.cnt = 12;  // earned under a larger window
        tp.ai(10, 25);
        CHECK(tp.cwnd == 13);  // +1 for the stale credit, then 25 / 10 = 2
        CHECK(tp.cnt == 5);
        tp.ai(13, 7);
        CHECK(tp.cwnd == 13);
        CHECK(tp.cnt == 12);
        tp.ai(13, 1);
        CHECK(tp.cwnd == 14);
        CHECK(tp.cnt == 0);
    }
    SUBCASE("reno: slow start to ssthresh, the rest as AI credit; nothing when not cwnd-limited") {
        Sock tp;
        tp.cwnd = 10;
        tp.ssthresh = 12;
        tp.reno(5);
        CHECK(tp.cwnd == 12);
        CHECK(tp.cnt == 3);
        tp.cwnd_limited = false;
        tp.reno(100);
        CHECK(tp.cwnd == 12);
        CHECK(tp.cnt == 3);
    }
    SUBCASE("srtt8: first sample x8, then srtt8 += r - srtt8/8, at least 1") {
        Sock tp;
        tp.rtt_sample(50000);
        CHECK(tp.srtt8 == 400000);
        tp.rtt_sample(66000);
        CHECK(tp.srtt8 == 416000);
        tp.rtt_sample(36000);
        CHECK(tp.srtt8 == 400000);
        Sock z;
        z.rtt_sample(0);
        CHECK(z.srtt8 == 1);
    }
}

TEST_CASE("ndm-lkm: example C, constant 50 ms, acked=1: slow start stalls at 17 (§1.8 C)") {
    Driver d;
    CHECK(d.cc.name() == "ndm-lkm");
    CHECK(d.cwnd_packets() == 10);
    CHECK(d.cc.ssthresh() == std::uint64_t{kInfiniteSsthresh} * kMds);
    CHECK(d.cc.state() == "slow_start");
    CHECK_FALSE(d.cc.pacing_rate().has_value());
    for (int k = 1; k <= 200; ++k) {
        d.ack(1, 50ms);
        CAPTURE(k);
        REQUIRE(d.cwnd_packets() == (k <= 7 ? 10 + k : 17));
        REQUIRE(d.cc.cwnd() == d.cwnd_packets() * kMds);
        if (k == 8) {
            CHECK(d.module().ent == 0);
            CHECK(d.module().cong == 1);
            CHECK(d.module().has_data == 1);
        }
    }
    CHECK(d.cc.host().sock().srtt8 == 8 * 50000);
    CHECK(d.module().min_rtt_us == 50000);
    CHECK(d.cc.state() == "slow_start");
}

TEST_CASE("ndm-lkm: example C with acked=2 grows 1 per ACK, 53 by ACK 40 (§1.8 C)") {
    Driver d;
    const std::uint32_t expect_first[] = {12, 14, 16};
    for (int k = 1; k <= 40; ++k) {
        d.ack(2, 50ms);
        CAPTURE(k);
        REQUIRE(d.cwnd_packets() == (k <= 3 ? expect_first[k - 1] : 13u + k));
    }
    CHECK(d.cwnd_packets() == 53);
}

TEST_CASE("ndm-lkm: example D, srtt 50/52 ms: slow start to 40, cut to 13 (§1.8 D)") {
    Driver d;
    int k = 0;
    run_d_slow_start(d, k);
    CHECK(d.cwnd_packets() == 40);
    CHECK(d.module().ent == 1000);
    CHECK(d.module().cong == 0);
    CHECK(d.module().has_data == 1);
    CHECK(d.cc.host().sock().srtt8 / 8 == 52000);  // 30 samples: last is 66 ms

    const Instant loss_at = d.now;
    d.loss(loss_at - 60ms);
    const Instant event_at = d.now;
    CHECK(d.cc.ssthresh() == 13 * kMds);  // 40 / 3; Reno would give 20
    CHECK(d.cwnd_packets() == 13);
    CHECK(d.cc.state() == "recovery");
    CHECK(d.module().ssthresh == 13);
    CHECK(d.module().prior_cwnd == 40);
    CHECK(d.module().loss == 1);
    CHECK(d.module().plast == 240 + 100);  // 30 ACKs of decay from 300, then +100
    // A second loss from the same window does not reduce again.
    d.loss(loss_at - 10ms);
    CHECK(d.cwnd_packets() == 13);
    // ACKs of packets sent before the loss: the hook is skipped.
    const auto h_before = d.module().h;
    for (int n = 0; n < 20; ++n, ++k) d.ack_sent(1, d_sample(k), loss_at - 1ms);
    CHECK(d.cwnd_packets() == 13);
    CHECK(d.module().h == h_before);
    CHECK(d.cc.state() == "recovery");

    // After recovery: congestion avoidance, one credit per ACK whatever d is.
    for (int n = 1; n <= 13; ++n, ++k) {
        d.ack_sent(1, d_sample(k), event_at + 1ms);
        CAPTURE(n);
        REQUIRE(d.cc.state() == "congestion_avoidance");
        REQUIRE(d.cwnd_packets() == (n < 13 ? 13u : 14u));
    }
}

TEST_CASE("ndm-lkm: noise_cut=two_thirds keeps the intended 2/3, congestion mode halves (§1.7)") {
    {
        Driver d("noise_cut=two_thirds");
        int k = 0;
        run_d_slow_start(d, k);
        d.loss(d.now - 60ms);
        CHECK(d.cwnd_packets() == 26);  // 2 * 40 / 3
    }
    {
        Driver d("noise_cut=third");
        int k = 0;
        run_d_slow_start(d, k);
        d.loss(d.now - 60ms);
        CHECK(d.cwnd_packets() == 13);
    }
    {
        // Constant RTT with acked=2: E = 0 ("congestion"), so k = 2.
        Driver d;
        for (int k = 0; k < 27; ++k) d.ack(2, 50ms);
        CHECK(d.cwnd_packets() == 40);
        d.loss(d.now - 60ms);
        CHECK(d.cwnd_packets() == 20);
    }
    {
        // A loss before the first entropy refresh: has_data = 0, so k = 2 even at E = 1000 later.
        Driver d;
        d.ack(1, 50ms);
        d.loss(d.now - 60ms);
        CHECK(d.cwnd_packets() == 5);  // 11 / 2
        CHECK(d.cc.state() == "recovery");
    }
}

TEST_CASE("ndm-lkm: plasticity 300, 298, 296 ... floor 100 after exactly 150 ACKs, +250 per RTO (§1.7)") {
    Driver d;
    const std::uint16_t first[] = {298, 296, 294, 292, 290, 288};
    for (auto want : first) {
        d.ack(1, 50ms);
        REQUIRE(d.module().plast == want);
    }
    int acks = 6;
    while (d.module().plast > 100) {
        d.ack(1, 50ms);
        ++acks;
    }
    CHECK(acks == 150);
    d.ack(1, 50ms);
    CHECK(d.module().plast == 100);
    // One RTO: +100 in ssthresh(), +150 in set_state(Loss).
    d.loss(d.now - 60ms, /*persistent=*/true);
    CHECK(d.module().plast == 350);
    CHECK(d.cc.state() == "loss");
    // Restart after idle resets it.
    d.cc.on_idle_restart(d.now);
    CHECK(d.module().plast == 300);
}

TEST_CASE("ndm-lkm: RTO (persistent congestion) follows Linux's tcp_enter_loss (§1.1)") {
    Driver d;
    int k = 0;
    run_d_slow_start(d, k);  // cwnd 40, E = 1000
    const Instant rto_at = d.now + 1ms;
    d.loss(d.now - 200ms, /*persistent=*/true, /*in_flight_bytes=*/0);
    CHECK(d.cwnd_packets() == 1);
    CHECK(d.cc.ssthresh() == 13 * kMds);
    CHECK(d.cc.state() == "loss");
    CHECK(d.module().cong == 1);
    CHECK(d.module().loss == 1);
    CHECK(d.cc.host().sock().cnt == 0);
    // The hook still runs in Loss: slow start from 1, but cong = 1 halves
    // acked, so acked = 1 adds nothing until an entropy refresh clears cong.
    CHECK(d.module().pk == 6);  // 30 ACKs: refreshed at 8, 16, 24
    d.ack_sent(1, d_sample(k++), rto_at - 1ms);
    CHECK(d.cwnd_packets() == 1);
    CHECK(d.module().cong == 1);
    d.ack_sent(1, d_sample(k++), rto_at - 1ms);  // pk = 8: refresh, E = 1000, cong = 0
    CHECK(d.module().cong == 0);
    CHECK(d.cwnd_packets() == 2);
    d.ack_sent(2, d_sample(k++), rto_at - 1ms);
    CHECK(d.cwnd_packets() == 4);
    CHECK(d.cc.state() == "loss");
    // Loss ends with the ACK of a packet sent after the RTO.
    d.ack_sent(1, d_sample(k++), rto_at + 1ms);
    CHECK(d.cc.state() == "slow_start");

    SUBCASE("cwnd = packets in flight + 1, in-flight rounded up to packets") {
        Driver e;
        e.ack(1, 50ms);
        e.loss(e.now - 200ms, true, 2 * kMds + 100);
        CHECK(e.cwnd_packets() == 4);
    }
    SUBCASE("an RTO inside an unfinished recovery does not call ssthresh() again") {
        Driver e;
        int j = 0;
        run_d_slow_start(e, j);
        e.loss(e.now - 60ms);
        CHECK(e.cc.ssthresh() == 13 * kMds);
        const auto plast = e.module().plast;
        e.loss(e.now - 200ms, true);
        CHECK(e.cc.ssthresh() == 13 * kMds);  // not 13 / 3
        CHECK(e.module().plast == plast + 150);  // set_state(Loss) only
        CHECK(e.cwnd_packets() == 1);
        CHECK(e.cc.state() == "loss");
        // A later fast-retransmit loss inside the Loss period does not reduce either.
        e.loss(e.now);
        CHECK(e.cc.ssthresh() == 13 * kMds);
    }
}

TEST_CASE("ndm-lkm: spurious undo restores cwnd, and ssthresh_h but not the module's copy (§1.7)") {
    Driver d;
    int k = 0;
    run_d_slow_start(d, k);
    d.loss(d.now - 60ms);
    CHECK(d.cwnd_packets() == 13);
    d.cc.on_spurious_congestion({d.now});
    CHECK(d.cwnd_packets() == 40);
    CHECK(d.cc.ssthresh() == std::uint64_t{kInfiniteSsthresh} * kMds);  // host restored
    CHECK(d.module().ssthresh == 13);                                      // module's is stale
    CHECK(d.module().ss == 0);
    CHECK(d.cc.state() == "congestion_avoidance");  // grows as the module decides
    // Only once per reduction.
    d.ack(1, d_sample(k++));
    const auto w = d.cwnd_packets();
    d.cc.on_spurious_congestion({d.now});
    CHECK(d.cwnd_packets() == w);
    // The hook runs again right away (not in recovery any more).
    const auto h = d.module().h;
    d.ack(1, d_sample(k++));
    CHECK(d.module().h != h);
}

TEST_CASE("ndm-lkm: recovery ends on the ACK of a packet sent after it began, new losses then reduce") {
    Driver d;
    for (int k = 0; k < 27; ++k) d.ack(2, 50ms);  // cwnd 40, E = 0
    const Instant loss_at = d.now + 1ms;
    d.loss(d.now - 60ms);
    CHECK(d.cwnd_packets() == 20);
    // A packet sent after the loss, itself lost before recovery ends: still the same episode.
    d.loss(loss_at + 1ms);
    CHECK(d.cwnd_packets() == 20);
    d.ack_sent(2, 50ms, loss_at + 2ms);  // ends recovery, and this ACK runs the hook
    CHECK(d.cc.state() == "congestion_avoidance");
    CHECK(d.cc.host().sock().cnt == 1);  // max(1, 2 * d / 2000) with d < 1000
    // A late loss report from the old window does not reduce.
    d.loss(loss_at - 5ms);
    CHECK(d.cwnd_packets() == 20);
    // A new loss does: 20 / 2.
    d.loss(d.now);
    CHECK(d.cwnd_packets() == 10);
}

TEST_CASE("ndm-lkm: sub-millisecond RTTs give E = 0 and cong = 1 for ever (§1.6 d)") {
    Driver d;
    std::mt19937 rng(7);
    for (int k = 1; k <= 2000; ++k) {
        d.ack(1 + rng() % 3, std::chrono::microseconds(50 + rng() % 940));
        if (k >= 8) {
            REQUIRE(d.module().ent == 0);
            REQUIRE(d.module().cong == 1);
        }
    }
    for (auto v : d.module().hist) CHECK(v == 1);
    CHECK(d.module().min_rtt_us < 1000);
}

TEST_CASE("ndm-lkm: the hook ignores app-limited ACKs' cwnd limit (§1.6 c), no sample, no srtt change") {
    Driver d;
    for (int k = 0; k < 3; ++k) d.ack(1, 50ms, /*app_limited=*/true);
    CHECK(d.cwnd_packets() == 13);
    AckEvent ev;
    ev.now = d.now + 1ms;
    ev.packets_acked = 1;
    ev.bytes_acked = kMds;
    ev.has_rtt_sample = false;
    ev.latest_rtt = 900ms;  // repeats a stale sample: must be ignored (Karn)
    ev.largest_acked_sent_time = d.now;
    d.cc.on_ack(ev);
    CHECK(d.cc.host().sock().srtt8 == 8 * 50000);
    CHECK(d.cwnd_packets() == 14);
    // An ACK of zero packets does nothing at all.
    const State before = d.module();
    ev.packets_acked = 0;
    d.cc.on_ack(ev);
    CHECK(d.module().pk == before.pk);
    CHECK(d.module().plast == before.plast);
}

TEST_CASE("ndm-lkm: cwnd_limited=check skips the hook on ACKs that are not cwnd-limited") {
    Driver d("cwnd_limited=check");
    const State before = d.module();
    for (int k = 0; k < 3; ++k) d.ack(1, 50ms, /*app_limited=*/true);
    CHECK(d.cwnd_packets() == 10);
    CHECK(d.module().pk == before.pk);  // the hook did not run at all
    CHECK(d.cc.host().sock().srtt8 == 8 * 50000);  // the host's RTT estimator did
    d.ack(1, 50ms);
    CHECK(d.cwnd_packets() == 11);
    CHECK_THROWS_AS(LkmController(cc_params(), {{"cwnd_limited", "yes"}}), std::invalid_argument);
    CHECK(LkmController(cc_params(), {{"cwnd_limited", "ignore"}}).cwnd() == 10 * kMds);
}

TEST_CASE("ndm-lkm: options and registration") {
    CHECK(LkmController(cc_params(), {{"initial_window", "4"}}).cwnd() == 4 * kMds);
    CHECK(LkmController(cc_params()).cwnd() == 10 * kMds);
    CHECK_THROWS_AS(LkmController(cc_params(), {{"initial_window", "0"}}), std::invalid_argument);
    CHECK_THROWS_AS(LkmController(cc_params(), {{"noise_cut", "half"}}), std::invalid_argument);
    CHECK_THROWS_AS(LkmController(cc_params(), {{"beta", "0.7"}}), std::invalid_argument);
    Params zero;
    zero.max_datagram_size = 0;
    CHECK_THROWS_AS(LkmController{zero}, std::invalid_argument);

    auto cc = ndm::cc::make("ndm-lkm", cc_params(), "noise_cut=two_thirds,initial_window=20");
    REQUIRE(cc != nullptr);
    CHECK(cc->name() == "ndm-lkm");
    CHECK(cc->cwnd() == 20 * kMds);
    CHECK(cc->state() == "slow_start");
    bool listed = false;
    for (const auto& info : ndm::cc::list()) listed = listed || info.name == "ndm-lkm";
    CHECK(listed);
}

// ---- end to end -----------------------------------------------------------------------

TEST_CASE("ndm-lkm: 4 MB over 50 Mbit/s, 25 ms one way, 1 % loss completes byte-exact") {
    ndm::sim::SimpleLinkConfig link;
    link.delay = 25ms;
    link.rate_bps = 50e6;
    link.loss = 0.01;
    link.queue_packets = 300;
    const auto spec = ndm::test::lossy_transfer("ndm-lkm", "reno", link, 4u << 20, 11);
    const auto r = ndm::sim::run_transfer(spec);
    INFO("failure: ", r.failure);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(r.bytes_delivered == spec.bytes);
    MESSAGE("ndm-lkm: virtual ", ndm::to_seconds(r.duration), " s, goodput ",
            static_cast<double>(spec.bytes) * 8 / ndm::to_seconds(r.duration) / 1e6, " Mbit/s, lost ",
            r.client_stats.packets_lost, ", congestion events ", r.client_stats.congestion_events);
}
