// AC-4 … AC-6 (docs/emulator.md, acceptance criteria): base delay, the jitter distributions,
// order-preserving vs i.i.d. jitter, and netem's reorder/gap knob.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "emu/delay_model.hpp"
#include "test_emu_util.hpp"

using namespace emu_test;
using ndm::emu::EmulatedLink;

namespace {

// One-way delays (ms) of every delivered packet, in send order.
std::vector<double> delays(const std::vector<Delivered>& d) {
    std::vector<double> out(d.size());
    std::vector<Delivered> s = d;
    std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    for (std::size_t i = 0; i < s.size(); ++i) out[i] = ms(s[i].at - s[i].sent);
    return out;
}

double mean(const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += v;
    return s / static_cast<double>(x.size());
}
double stddev(const std::vector<double>& x) {
    const double m = mean(x);
    double s = 0;
    for (double v : x) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(x.size() - 1));
}
double quantile(std::vector<double> x, double q) {
    std::sort(x.begin(), x.end());
    return x[static_cast<std::size_t>(q * static_cast<double>(x.size() - 1))];
}

}  // namespace

TEST_CASE("emu AC-4: without jitter every one-way delay is exactly the configured delay") {
    EmulatedLink link(config("delay=50ms"), 1);
    const auto d = drive(link, cbr(10000, 1ms), 1200);
    REQUIRE(d.size() == 10000);
    for (const auto& x : d) REQUIRE(x.at - x.sent == 50ms);
    // Low rate: delay + serialization (1200 B at 10 Mbit/s = 0.96 ms), nothing else.
    EmulatedLink slow(config("delay=50ms,rate=10mbit,queue=100pkt"), 1);
    const auto s = drive(slow, cbr(1000, 5ms), 1200);
    REQUIRE(s.size() == 1000);
    for (const auto& x : s) REQUIRE(x.at - x.sent == 50ms + 960us);
    CHECK(slow.emu_stats().one_way_delay.max() == 50ms + 960us);
    CHECK(slow.emu_stats().queue_delay.max() == 0ns);
}

TEST_CASE("emu AC-5: uniform jitter d +- J: mean, sigma, quantiles, KS") {
    const std::size_t n = 100000;
    EmulatedLink link(config("delay=50ms,jitter=20ms,order=iid"), 5);
    const auto x = delays(drive(link, cbr(n, 100us), 100));
    REQUIRE(x.size() == n);
    const double m = mean(x), sd = stddev(x);
    MESSAGE("AC-5 uniform: mean ", m, " ms, sigma ", sd, " (J/sqrt3 = ", 20 / std::sqrt(3.0), "), p5 ", quantile(x, 0.05),
            " p50 ", quantile(x, 0.5), " p95 ", quantile(x, 0.95));
    CHECK(std::abs(m - 50) <= 0.5);
    CHECK(std::abs(sd - 20 / std::sqrt(3.0)) <= 0.05 * 20 / std::sqrt(3.0));
    for (double q : {0.05, 0.5, 0.95}) {
        const double expect = 50 - 20 + 40 * q;
        const double se = std::sqrt(q * (1 - q) / n) * 40;  // density 1/(2J)
        CHECK(std::abs(quantile(x, q) - expect) <= 1 + 3 * se);
    }
    // Kolmogorov–Smirnov against U[30, 70).
    std::vector<double> s = x;
    std::sort(s.begin(), s.end());
    double dn = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double f = std::clamp((s[i] - 30) / 40, 0.0, 1.0);
        dn = std::max({dn, std::abs(f - double(i) / n), std::abs(f - double(i + 1) / n)});
    }
    MESSAGE("AC-5 KS D_N = ", dn, " (bound ", 1.63 / std::sqrt(double(n)), ")");
    CHECK(dn < 1.63 / std::sqrt(double(n)));
}

TEST_CASE("emu AC-5: normal jitter has sigma = J and respects the 4 sigma clip") {
    const std::size_t n = 100000;
    EmulatedLink link(config("delay=100ms,jitter=10ms,distribution=normal,order=iid"), 6);
    const auto x = delays(drive(link, cbr(n, 100us), 100));
    const double sd = stddev(x);
    MESSAGE("AC-5 normal: mean ", mean(x), " sigma ", sd, " min ", quantile(x, 0), " max ", quantile(x, 1));
    CHECK(std::abs(sd - 10) <= 0.5);
    CHECK(std::abs(mean(x) - 100) <= 0.5);
    CHECK(quantile(x, 0) >= 100 - 4 * 10 - 0.01);
    CHECK(quantile(x, 1) <= 100 + 4 * 10 + 0.01);
    // Negative delays are clipped at zero, never delivered before they were sent.
    EmulatedLink wide(config("delay=5ms,jitter=20ms,distribution=normal,order=iid"), 6);
    const auto w = delays(drive(wide, cbr(20000, 100us), 100));
    CHECK(quantile(w, 0) == 0);
}

TEST_CASE("emu: pareto and paretonormal jitter are standardized and clipped") {
    ndm::emu::Rng rng = ndm::emu::make_stream(3, ndm::emu::Stream::jitter);
    for (auto dist : {ndm::emu::Distribution::pareto, ndm::emu::Distribution::paretonormal}) {
        double s = 0, s2 = 0, lo = 0, hi = 0;
        const int n = 200000;
        for (int i = 0; i < n; ++i) {
            const double v = ndm::emu::sample_jitter(dist, rng);
            s += v;
            s2 += v * v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        const double m = s / n, sd = std::sqrt(s2 / n - m * m);
        MESSAGE("dist ", int(dist), ": mean ", m, " sd ", sd, " range [", lo, ", ", hi, "]");
        // Standardized to mean 0, σ 1 before the +4σ clip; the clip cuts pareto's
        // heavy tail, so the sample σ ends up lower (about 0.74) and the mean slightly negative.
        CHECK(std::abs(m) < 0.05);
        CHECK(hi <= 32767.0 / 8192.0);
        CHECK(lo >= (dist == ndm::emu::Distribution::pareto ? -0.578 : -4.0));  // pareto starts at −1.5/σ = −1/√3
        CHECK(sd < 1.0);
        CHECK(sd > 0.6);
    }
    CHECK(ndm::emu::inverse_normal_cdf(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
    CHECK(ndm::emu::inverse_normal_cdf(0.5) == doctest::Approx(0.0));
}

TEST_CASE("emu AC-6: order-preserving jitter never reorders, i.i.d. jitter inverts (2J-D)^2/(8J^2) of pairs") {
    const std::size_t n = 50000;
    EmulatedLink inorder(config("delay=50ms,jitter=20ms,order=inorder"), 8);
    const auto a = drive(inorder, cbr(n, 1ms), 1500);
    for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i].index == i);
    CHECK(inorder.emu_stats().reordered == 0);

    for (double delta_ms : {1.0, 10.0}) {
        EmulatedLink iid(config("delay=50ms,jitter=20ms,order=iid"), 9);
        const auto d = drive(iid, cbr(n, std::chrono::microseconds(static_cast<int>(delta_ms * 1000))), 1500);
        std::vector<Instant> t(n);
        for (const auto& x : d) t[x.index] = x.at;
        std::size_t inv = 0;
        for (std::size_t i = 0; i + 1 < n; ++i) inv += t[i + 1] < t[i];
        const double frac = double(inv) / double(n - 1);
        const double expect = (40 - delta_ms) * (40 - delta_ms) / (8 * 400);
        MESSAGE("AC-6 iid, spacing ", delta_ms, " ms: inversions ", frac, " expected ", expect, "; RFC 4737 reordered ",
                double(iid.emu_stats().reordered) / n);
        CHECK(std::abs(frac - expect) <= 0.02);
    }
}

TEST_CASE("emu AC-6: explicit reorder probability q, and netem's gap") {
    const std::size_t n = 50000;
    const double q = 0.1;
    EmulatedLink link(config("delay=10ms,reorder=10%"), 10);
    const auto d = drive(link, cbr(n, 1ms), 200);
    const double frac = double(link.emu_stats().reorder_immediate) / n;
    MESSAGE("AC-6 reorder: immediate ", frac, " (q = ", q, " +- ", 3 * std::sqrt(q * (1 - q) / n), ")");
    CHECK(std::abs(frac - q) <= 3 * std::sqrt(q * (1 - q) / n));
    std::size_t zero = 0;
    for (const auto& x : d) zero += x.at == x.sent;
    CHECK(zero == link.emu_stats().reorder_immediate);
    CHECK(link.emu_stats().reordered > 0);  // they overtake packets still in their 10 ms

    // netem: "gap 5 delay 10ms sends every 5th packet immediately" (reorder 100%).
    EmulatedLink gap(config("delay=10ms,reorder=100%,gap=5"), 10);
    const auto g = drive(gap, cbr(100, 1ms), 200);
    for (const auto& x : g) CHECK((x.at == x.sent) == (x.index % 5 == 4));
}
