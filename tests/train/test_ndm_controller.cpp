// The "ndm-cubic" controller (src/cc/ndm/{entropy,features,ndm_controller,
// default_model}): entropy against hand-computed values, features on
// synthetic RTT streams, the loss decisions and safety rules on synthetic
// ACK/loss streams, identical decisions across SIMD kernels, the shipped
// default model file, and one end-to-end transfer in virtual time.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "cc/cubic.hpp"
#include "ndm/ndm_model.hpp"
#include "cc/ndm/engine.hpp"
#include "cc/ndm/entropy.hpp"
#include "cc/ndm/features.hpp"
#include "cc/ndm/model.hpp"
#include "cc/ndm/ndm_controller.hpp"
#include "ndm/train.hpp"
#include "cc/window.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/sim.hpp"
#include "cc_test_util.hpp"
#include "ndm_test_util.hpp"

using namespace std::chrono_literals;
namespace nn = ndm::cc::ndm;
using ndm::Duration;
using ndm::Instant;
using ndm::cc::AckEvent;
using ndm::cc::CongestionEvent;
using ndm::cc::Options;

namespace {

using ndm::test::at;
using ndm::test::cc_params;
using ndm::test::kMds;

// Every synthetic ACK here acknowledges `packets` MDS-sized packets sent one
// RTT earlier and carries an RTT sample.
AckEvent ack(Instant now, Duration rtt, std::uint64_t packets = 1, bool app_limited = false) {
    return ndm::test::ack_event(now, packets * kMds, now - rtt, rtt, app_limited);
}

CongestionEvent loss(Instant now, Instant largest_lost_sent, std::uint64_t packets = 1,
                     bool persistent = false) {
    return ndm::test::loss_event(now, largest_lost_sent, persistent, packets);
}

// ACKs every `gap` from `from` to `to`, RTT given by rtt(t).
template <typename Cc>
void drive(Cc& cc, Duration from, Duration to, Duration gap, const std::function<Duration(Duration)>& rtt) {
    for (Duration t = from; t < to; t += gap) cc.on_ack(ack(at(t), rtt(t)));
}

Duration flat50(Duration) { return 50ms; }

Options opts(std::initializer_list<std::pair<const std::string, std::string>> kv) {
    return Options(kv);
}

}  // namespace

TEST_CASE("ndm entropy: exact Shannon entropy of hand-computed histograms") {
    const std::vector<std::uint16_t> empty(16, 0);
    CHECK(nn::shannon_entropy(empty) == 0.0);
    std::vector<std::uint16_t> one(16, 0);
    one[3] = 500;
    CHECK(nn::shannon_entropy(one) == 0.0);  // a single bin
    for (const std::size_t k : {2U, 4U, 5U, 16U}) {
        std::vector<std::uint16_t> u(16, 0);
        for (std::size_t i = 0; i < k; ++i) u[i] = 7;
        CHECK(nn::shannon_entropy(u) == doctest::Approx(std::log2(static_cast<double>(k))).epsilon(1e-12));
    }
    // p = 1/4, 1/4, 1/2: 2·(1/4·2) + 1/2·1 = 1.5 bits.
    CHECK(nn::shannon_entropy(std::vector<std::uint16_t>{1, 1, 2}) == doctest::Approx(1.5).epsilon(1e-12));
    // p = 1/3, 2/3: log2 3 − 2/3.
    CHECK(nn::shannon_entropy(std::vector<std::uint16_t>{10, 20}) ==
          doctest::Approx(std::log2(3.0) - 2.0 / 3.0).epsilon(1e-12));
}

TEST_CASE("ndm entropy: fixed-resolution bins relative to min RTT") {
    nn::DelayHistogram h;
    const float width = 5000;  // µs: min_rtt 50 ms / 10
    h.add(0, width);
    h.add(4999, width);
    CHECK(h.counts()[0] == 2);
    h.add(5000, width);
    CHECK(h.counts()[1] == 1);
    h.add(1e9F, width);  // everything from 1.5·min_rtt up: the last bin
    CHECK(h.counts()[15] == 1);
    CHECK(h.total() == 4);
    CHECK(h.quantile(0.5F) == doctest::Approx(0.05));  // bin 0's midpoint, in min_rtt
    CHECK(h.quantile(1.0F) == doctest::Approx(1.55));
    // A 1 ms wobble stays in one bin at 50 ms min RTT: entropy 0, unlike the
    // published module's min–max bins (docs/ndm-controller.md §1.1 item 2).
    nn::DelayHistogram w;
    for (int i = 0; i < 100; ++i) w.add(static_cast<float>(i % 2) * 1000.0F, width);
    CHECK(w.entropy() == 0.0);
    nn::DelayHistogram spread;
    for (int i = 0; i < 160; ++i) spread.add(static_cast<float>(i) * 500.0F, width);
    CHECK(spread.normalized_entropy() == doctest::Approx(1.0));
}

TEST_CASE("ndm features: synthetic RTT streams") {
    SUBCASE("flat RTT: no queue, no slope, zero entropy, one round per RTT") {
        nn::FeatureTracker f;
        int rounds = 0;
        for (Duration t = 0ms; t < 1s; t += 1ms) rounds += f.on_ack(ack(at(t), 50ms)) ? 1 : 0;
        CHECK(f.min_rtt() == 50ms);
        CHECK(rounds >= 17);  // ~1 s / 50 ms after the first RTT
        CHECK(rounds <= 20);
        const auto& r = f.round();
        CHECK(r[nn::kQueueNow] == 0.0F);
        CHECK(r[nn::kQueueP50] == doctest::Approx(0.05));
        CHECK(r[nn::kRttSlope] == 0.0F);
        CHECK(r[nn::kEntropy] == 0.0F);
        CHECK(r[nn::kLossRate] == 0.0F);
        CHECK(f.standing_queue() == 0.0F);
    }
    SUBCASE("a growing queue: slope, percentiles, standing queue") {
        nn::FeatureTracker f;
        drive(f, 0ms, 500ms, 1ms, flat50);
        // The RTT grows by 0.2 ms per ms (slope 0.2) for 300 ms.
        drive(f, 500ms, 800ms, 1ms, [](Duration t) { return 50ms + (t - 500ms) / 5; });
        const auto& r = f.round();
        CHECK(r[nn::kRttSlope] == doctest::Approx(0.2).epsilon(0.02));
        CHECK(r[nn::kQueueNow] > 0.9F);   // ~50 ms of queue at 50 ms min RTT
        CHECK(r[nn::kQueueP90] > r[nn::kQueueP50]);
        CHECK(r[nn::kEntropy] > 0.3F);
        CHECK(f.standing_queue() > 0.5F);
    }
    SUBCASE("the minimum RTT is windowed (10 s)") {
        nn::FeatureTracker f;
        f.on_ack(ack(at(0ms), 40ms));
        drive(f, 1ms, 9s, 10ms, flat50);
        CHECK(f.min_rtt() == 40ms);
        drive(f, 9s, 12s, 10ms, flat50);
        CHECK(f.min_rtt() == 50ms);
    }
    SUBCASE("losses: rate and run length; the RTT at the loss") {
        nn::FeatureTracker f;
        drive(f, 0ms, 300ms, 1ms, flat50);
        drive(f, 300ms, 320ms, 1ms, [](Duration) { return 60ms; });
        const auto ev = loss(at(320ms), at(265ms), 3);
        f.on_loss(ev);
        const auto x = f.at_loss(ev);
        CHECK(x[nn::kQueueNow] == doctest::Approx(0.2));  // 10 ms over 50 ms
        CHECK(x[nn::kLossRun] == doctest::Approx(0.25));  // (3 − 1) / 8
        CHECK(x[nn::kLossRate] > 0.0F);
    }
}

// The controller's rule tests pin the hand-set v2 model (data/models/
// ndm-handset-v2.ndmm, `ndm-train handset`), whose verdicts are known in
// closed form, so they do not move when `ndm-train ship` retrains the default.
namespace {
std::string handset_v2() { return std::string(NDM_SOURCE_DIR) + "/data/models/ndm-handset-v2.ndmm"; }
}  // namespace

TEST_CASE("ndm hand-set v2 model: P follows the queueing evidence and its consistency") {
    const auto m = nn::load_model(handset_v2());
    nn::Engine e(nn::Simd::scalar);
    auto p_of = [&](float q_now, float p50, float p90, float slope, float entropy) {
        nn::FeatureVector x{};
        x[nn::kQueueNow] = q_now;
        x[nn::kQueueP50] = p50;
        x[nn::kQueueP90] = p90;
        x[nn::kRttSlope] = slope;
        x[nn::kEntropy] = entropy;
        std::vector<float> h(m.state_dim(), 0.0F);
        float p = 0;
        for (int i = 0; i < 5; ++i) e.infer(m, {1, 1, x.data(), h.data(), &p});  // settle any memory
        return p;
    };
    // Jitter: delays spread over many bins, whatever their size: random.
    CHECK(p_of(0, 0.05F, 0.05F, 0, 0.8F) < 0.05F);
    CHECK(p_of(0.6F, 0.6F, 1.0F, 0, 0.8F) < 0.05F);
    CHECK(p_of(1.2F, 0.7F, 1.2F, 0.3F, 0.8F) < 0.5F);
    // No queue and no spread: below the decision threshold.
    CHECK(p_of(0, 0, 0, 0, 0) < 0.5F);
    // A full, consistent queue: congestive.
    CHECK(p_of(1.0F, 0.85F, 0.95F, 0.2F, 0.1F) > 0.95F);
    CHECK(p_of(0.5F, 0.45F, 0.5F, 0.05F, 0.1F) > 0.5F);
    float prev = 0;  // monotonic in the queueing delay
    for (float q = 0; q <= 1.0F; q += 0.05F) {
        const float p = p_of(q, q, q, 0, 0.2F);
        CHECK(p >= prev);
        prev = p;
    }
    prev = 1;  // and decreasing in the spread
    for (float h = 0; h <= 1.0F; h += 0.05F) {
        const float p = p_of(0.5F, 0.5F, 0.6F, 0, h);
        CHECK(p <= prev);
        prev = p;
    }
}

TEST_CASE("ndm-cubic controller: random loss without queueing evidence is forgiven, but bounded per RTT") {
    // No bottleneck: each ms delivers a 50th of the window (one window per
    // 50 ms round trip), so the delivery rate follows the window.
    auto drive_elastic = [](nn::NdmController& c, Duration from, Duration to) {
        for (Duration t = from; t < to; t += 1ms)
            c.on_ack(ack(at(t), 50ms, std::max<std::uint64_t>(1, c.cwnd() / kMds / 50)));
    };
    nn::NdmController cc(cc_params(), opts({{"hystart", "off"}}));
    drive_elastic(cc, 0ms, 400ms);
    const auto before = cc.cwnd();
    // Three isolated losses in one round trip: forgiven, cwnd untouched.
    for (int i = 0; i < 3; ++i) {
        cc.on_congestion_event(loss(at(400ms + i * 1ms), at(340ms + i * 1ms)));
        CHECK(cc.cwnd() == before);
        CHECK(cc.last_p() < 0.5F);
    }
    CHECK(cc.counters().forgiven == 3);
    // The fourth in the same round exceeds the budget: congestive, Cubic's β.
    cc.on_congestion_event(loss(at(404ms), at(344ms)));
    CHECK(cc.counters().forced == 1);
    CHECK(cc.cwnd() == static_cast<std::uint64_t>(std::round(static_cast<double>(before) * 0.7)));
    // After the recovery period and a new round, losses are forgiven again.
    drive_elastic(cc, 405ms, 600ms);
    const auto later = cc.cwnd();
    cc.on_congestion_event(loss(at(600ms), at(549ms)));
    CHECK(cc.cwnd() == later);
    CHECK(cc.counters().forgiven == 4);
    CHECK(std::string(cc.name()) == "ndm-cubic");
}

TEST_CASE("ndm-cubic controller: loss with a grown, consistent queue is congestive, like Cubic's") {
    // The model's verdict alone (standing=10 turns the standing-queue rule
    // off; the delivery rate swings, 1 and 3 packets per ms in alternate
    // 100 ms, so the undelivered-window rule stays out of it too): the RTT
    // climbs steadily from 300 ms, so by the loss the queue is ~0.9·min_rtt
    // and every sample of the round sits in one or two bins.
    nn::NdmController ndm(cc_params(), opts({{"hystart", "off"}, {"standing", "10"}, {"model", handset_v2()}}));
    ndm::cc::Cubic cubic(cc_params(), opts({{"hystart", "off"}}));
    auto rtt = [](Duration t) { return t < 300ms ? 50ms : 50ms + (t - 300ms) / 10; };
    for (Duration t = 0ms; t < 750ms; t += 1ms) {
        const std::uint64_t packets = (t / 100ms) % 2 == 1 ? 3 : 1;
        ndm.on_ack(ack(at(t), rtt(t), packets));
        cubic.on_ack(ack(at(t), rtt(t), packets));
    }
    REQUIRE(ndm.cwnd() == cubic.cwnd());
    const auto ev = loss(at(750ms), at(660ms));
    ndm.on_congestion_event(ev);
    cubic.on_congestion_event(ev);
    MESSAGE("P at the loss: ", ndm.last_p());
    CHECK(ndm.last_p() > 0.9F);
    CHECK(ndm.counters().forgiven == 0);
    CHECK(ndm.counters().congestive == 1);
    // β_eff = 1 − 0.3·P: within 3 % of Cubic's 0.7 for P > 0.9.
    CHECK(static_cast<double>(ndm.cwnd()) == doctest::Approx(static_cast<double>(cubic.cwnd())).epsilon(0.04));
}

TEST_CASE("ndm-cubic controller: the same queue is forced congestive by the standing-queue rule") {
    nn::NdmController ndm(cc_params(), opts({{"hystart", "off"}}));
    ndm::cc::Cubic cubic(cc_params(), opts({{"hystart", "off"}}));
    auto rtt = [](Duration t) { return t < 300ms ? 50ms : 50ms + (t - 300ms) / 10; };
    drive(ndm, 0ms, 750ms, 1ms, rtt);
    drive(cubic, 0ms, 750ms, 1ms, rtt);
    const auto ev = loss(at(750ms), at(660ms));
    ndm.on_congestion_event(ev);
    cubic.on_congestion_event(ev);
    CHECK(ndm.counters().forced == 1);
    CHECK(ndm.cwnd() == cubic.cwnd());
}

namespace {

// A model that forgives every loss (P = σ(−20)), saved where the controller
// can load it by path: the tests below see the safety rules alone.
std::string forgive_all_model() {
    const nn::Model m = ndm::test::constant_model(-20.0F);
    const auto path = std::filesystem::temp_directory_path() /
                      ("ndm-test-forgive-all-" + std::to_string(::getpid()) + ".ndmm");
    nn::save_model(m, path);
    return path.string();
}

}  // namespace

TEST_CASE("ndm-cubic controller: a raised RTT floor is a standing queue only at a steady delivery rate") {
    // Both streams: 300 ms at the 50 ms base RTT, then every sample at 90 ms
    // (a floor 0.8·min_rtt up, no spread). At a bottleneck the rate is steady
    // (one packet per ms); on an order-preserving jittery link it swings
    // from round to round (here 1, 3, 1, 3 … packets per ms, alternating
    // every 90 ms round trip), and the raised floor is no standing queue.
    const std::string model = forgive_all_model();
    auto run = [&](bool swinging) {
        nn::NdmController cc(cc_params(), opts({{"hystart", "off"}, {"model", model}}));
        for (Duration t = 0ms; t < 1200ms; t += 1ms) {
            const Duration rtt = t < 300ms ? 50ms : 90ms;
            const std::uint64_t packets = swinging && (t / 90ms) % 2 == 1 ? 3 : 1;
            cc.on_ack(ack(at(t), rtt, packets));
        }
        REQUIRE(cc.features().standing_queue() == doctest::Approx(0.8).epsilon(0.01));
        cc.on_congestion_event(loss(at(1200ms), at(1115ms)));
        CHECK(cc.last_p() < 0.01F);
        return cc.counters();
    };
    const auto steady = run(false);
    CHECK(steady.forced == 1);
    CHECK(steady.forgiven == 0);
    const auto swinging = run(true);
    CHECK(swinging.forced == 0);
    CHECK(swinging.forgiven == 1);
    std::filesystem::remove(model);
}

TEST_CASE("ndm-cubic controller: persistent congestion always reduces to the minimum window") {
    nn::NdmController cc(cc_params(), opts({{"hystart", "off"}}));
    drive(cc, 0ms, 300ms, 1ms, flat50);
    REQUIRE(cc.cwnd() > 10 * kMds);
    cc.on_congestion_event(loss(at(300ms), at(250ms), 5, true));
    CHECK(cc.cwnd() == ndm::cc::minimum_window(kMds));
    CHECK(cc.counters().persistent == 1);
    CHECK(cc.counters().forgiven == 0);
}

TEST_CASE("ndm-cubic controller: no growth while app-limited (cwnd-limited rule)") {
    nn::NdmController cc(cc_params(), opts({{"hystart", "off"}}));
    drive(cc, 0ms, 100ms, 1ms, flat50);
    const auto w = cc.cwnd();
    for (Duration t = 100ms; t < 300ms; t += 1ms) cc.on_ack(ack(at(t), 50ms, 1, true));
    CHECK(cc.cwnd() == w);
}

TEST_CASE("ndm-cubic controller: options") {
    CHECK_THROWS_WITH_AS(nn::NdmController(cc_params(), opts({{"bogus", "1"}})), doctest::Contains("bogus"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::NdmController(cc_params(), opts({{"simd", "avx9"}})), doctest::Contains("simd"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(nn::NdmController(cc_params(), opts({{"model", "/nonexistent.ndmm"}})),
                         doctest::Contains("/nonexistent.ndmm"), std::invalid_argument);
    CHECK_THROWS_AS(nn::NdmController(cc_params(), opts({{"forgive", "1000"}})), std::invalid_argument);
    CHECK_NOTHROW(nn::NdmController(cc_params(), opts({{"simd", "scalar"}, {"forgive", "0"}, {"model", "default"}})));
    auto cc = ndm::cc::make("ndm-cubic", cc_params(), "simd=scalar,beta=0.8");
    CHECK(cc->name() == "ndm-cubic");
    // A model with the wrong shape is refused.
    nn::Model m = nn::make_default_model();
    m.layers.back().out = 2;
    m.layers.back().params.resize(nn::Layer::param_count(nn::LayerKind::dense, m.layers.back().in, 2));
    const std::string path = "ndm_controller_bad_shape_test.ndmm";
    nn::save_model(m, path);
    CHECK_THROWS_WITH_AS(nn::NdmController(cc_params(), opts({{"model", path}})), doctest::Contains("1 output"),
                         std::invalid_argument);
    std::remove(path.c_str());
}

TEST_CASE("ndm-cubic controller: per-connection state size") {
    MESSAGE("sizeof(NdmController) = ", sizeof(nn::NdmController), " bytes, of which the embedded Cubic ",
            sizeof(ndm::cc::Cubic), " and ndm's own state ", nn::NdmController::ndm_state_bytes(),
            " (FeatureTracker ", sizeof(nn::FeatureTracker), "); the model is shared");
    CHECK(nn::NdmController::ndm_state_bytes() <= 256);
}

namespace {

struct TraceStep {
    bool is_loss = false;
    AckEvent ack;
    CongestionEvent loss;
};

// A recorded-like synthetic trace: 20 s of ACKs every 0.5 ms with jitter,
// queue ramps that build and drain, random isolated losses and a few
// bursts at the top of a ramp.
std::vector<TraceStep> synthetic_trace() {
    std::mt19937_64 rng(0x5eed'0dd5);
    std::vector<TraceStep> out;
    for (Duration t = 0ms; t < 20s; t += 500us) {
        const auto phase = (t.count() / 1'000'000) % 4000;  // ms within a 4 s cycle
        const Duration queue = phase < 3000 ? Duration(phase * 10'000) : 0ms;  // up to 30 ms
        const Duration rtt = 40ms + queue + Duration(rng() % 2'000'000);
        TraceStep s;
        s.ack = ack(at(t), rtt, 1 + rng() % 2);
        out.push_back(s);
        if (rng() % 300 == 0 || (phase > 2900 && phase < 3000 && rng() % 20 == 0)) {
            TraceStep l;
            l.is_loss = true;
            l.loss = loss(at(t), at(t - rtt + Duration(rng() % 1'000'000)), 1 + rng() % 3);
            out.push_back(l);
        }
    }
    return out;
}

std::vector<std::uint64_t> replay(const std::vector<TraceStep>& trace, nn::NdmController::Counters* counters) {
    nn::NdmController cc(cc_params(), opts({{"model", handset_v2()}}));  // simd=auto: the process-wide choice
    std::vector<std::uint64_t> cwnd;
    cwnd.reserve(trace.size());
    for (const auto& s : trace) {
        if (s.is_loss) {
            cc.on_congestion_event(s.loss);
        } else {
            cc.on_ack(s.ack);
        }
        cwnd.push_back(cc.cwnd());
    }
    if (counters) *counters = cc.counters();
    return cwnd;
}

}  // namespace

TEST_CASE("ndm-cubic controller: decisions are identical across kernels on a recorded trace") {
    const auto trace = synthetic_trace();
    const auto before = nn::active_simd();
    nn::set_active_simd(nn::Simd::scalar);
    nn::NdmController::Counters c;
    const auto ref = replay(trace, &c);
    MESSAGE("trace: ", trace.size(), " events; loss decisions: ", c.forgiven, " forgiven, ",
            c.congestive, " congestive, ", c.forced, " forced");
    CHECK(c.forgiven > 10);   // the trace exercises both outcomes
    CHECK(c.congestive > 3);
    for (const auto simd : nn::supported_simd()) {
        CAPTURE(nn::simd_name(simd));
        nn::set_active_simd(simd);
        const auto got = replay(trace, nullptr);
        REQUIRE(got.size() == ref.size());
        CHECK(ndm::test::first_difference(got, ref) == got.size());
    }
    nn::set_active_simd(before);
}

TEST_CASE("ndm default model: the shipped files are the generators' output") {
    // `ndm-train ship --root . --name ndm-default` writes the trained default
    // and default_model.inc; `ndm-train handset --root .` the hand-set v2.
    const std::string path = std::string(NDM_SOURCE_DIR) + "/data/models/ndm-default.ndmm";
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing ", path, " (ndm-train ship --root . --name ndm-default regenerates it)");
    const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(file == nn::serialize_model(nn::make_default_model()));
    const auto m = nn::load_model(path);
    CHECK(m.description.rfind("ndm-default (learned)", 0) == 0);
    std::ifstream v2(handset_v2(), std::ios::binary);
    REQUIRE(v2.good());
    const std::vector<std::uint8_t> hand((std::istreambuf_iterator<char>(v2)), std::istreambuf_iterator<char>());
    CHECK(hand == nn::serialize_model(ndm::train::make_handset_model()));
    // And the controller accepts both through model=PATH.
    CHECK_NOTHROW(nn::NdmController(cc_params(), opts({{"model", path}})));
    CHECK_NOTHROW(nn::NdmController(cc_params(), opts({{"model", handset_v2()}})));
}

TEST_CASE("ndm-cubic: bulk transfer in virtual time, 50 Mbit/s, 25 ms, 2% loss, beats cubic") {
    ndm::sim::SimpleLinkConfig link;
    link.delay = 25ms;
    link.rate_bps = 50e6;
    link.loss = 0.02;
    // Seeds 51 (client), 52 (server), 53 and 54 (the link directions), 55 (payload).
    auto spec_for = [&link](const std::string& cc) { return ndm::test::lossy_transfer(cc, cc, link, 8u << 20, 51); };
    const auto n = ndm::sim::run_transfer(spec_for("ndm-cubic"));
    const auto c = ndm::sim::run_transfer(spec_for("cubic"));
    REQUIRE_MESSAGE(n.completed, n.failure);
    CHECK(n.hash_match);
    REQUIRE(c.completed);
    const double ndm_goodput = static_cast<double>(n.bytes_delivered) * 8 / ndm::to_seconds(n.duration) / 1e6;
    const double cubic_goodput = static_cast<double>(c.bytes_delivered) * 8 / ndm::to_seconds(c.duration) / 1e6;
    MESSAGE("goodput over 2% random loss: ndm ", ndm_goodput, " Mbit/s, cubic ", cubic_goodput, " Mbit/s");
    CHECK(ndm_goodput > cubic_goodput);
}

TEST_CASE("ndm-cubic: an in-order jittery link's raised RTT floor is not taken for a standing queue") {
    // urban-lte-inorder (5 % loss) and at 1 % loss: an order-preserving link
    // holds packets behind their predecessors, so sending faster raises the
    // round's RTT floor like a standing queue would. But its delivery rate
    // swings from round to round, where a saturated bottleneck's is steady,
    // so the standing-queue rule stays out of the way (the droptail cases
    // above and bench/ndm_eval.sh check that it still fires at a bottleneck).
    auto goodput = [&](const ndm::emu::Profile& profile, const std::string& cc, std::uint64_t seed) {
        const auto spec = ndm::test::emulated_transfer(profile, cc, seed, 20s);
        const auto r = ndm::sim::run_transfer(spec);
        REQUIRE_MESSAGE(r.completed, r.failure);
        CHECK(r.hash_match);
        return static_cast<double>(r.bytes_delivered) * 8 / ndm::to_seconds(r.duration);
    };
    struct Case {
        std::string profile;
        double min_ratio;
    };
    // Measured with default model v2: 4.0× at 5 %, 4.9× at 1 % (before the
    // steady-rate condition and the 2P − 1 weight ~1.9× and 3.1×; before the
    // rate-follows-window rule 2.2× at 1 %). Since packet numbers are
    // skipped (RFC 9000 §21.4) the trajectories differ: 3.8× at 1 % over
    // these three seeds, 4.7× over seeds 1-20 (4.9× without skipping).
    for (const Case& k : {Case{"urban-lte-inorder", 3.0}, Case{"urban-lte-inorder,loss=1%", 3.5}}) {
        const std::string& name = k.profile;
        CAPTURE(name);
        const auto profile = ndm::emu::parse_profile(name);
        double n = 0, c = 0;
        for (const std::uint64_t seed : {1, 2, 3}) {
            n += goodput(profile, "ndm-cubic", seed);
            c += goodput(profile, "cubic", seed);
        }
        MESSAGE(name, ", 3 seeds: ndm ", n / 3e6, " Mbit/s, cubic ", c / 3e6, " Mbit/s");
        CHECK(n > k.min_ratio * c);
    }
}

TEST_CASE("ndm-cubic: a tiny bottleneck buffer's drops are congestive though its queue is small") {
    // 2.7 Mbit/s, 12 ms RTT, a droptail buffer of 3 packets (BDP ~3 packets
    // of 1452 B): the buffer overflows with queueing delays of ~0.05·min_rtt,
    // so queue evidence reads the drops as random, and a forgive budget of 3
    // per round is most of a few-packet window. The bottleneck shows in the
    // delivery rate instead: steady, and well below the window per RTT.
    // Measured (5 seeds × 20 s, ndm-compare): before the undelivered-window
    // rule ndm lost 30 % of its packets against Cubic's 5.1 %, after it 11 %.
    auto loss_rate = [](const std::string& cc, std::uint64_t seed) {
        const auto profile = ndm::emu::parse_profile("delay=6ms,rate=2.7mbit,queue=3pkt");
        const auto spec = ndm::test::emulated_transfer(profile, cc, seed, 10s);
        const auto r = ndm::sim::run_transfer(spec);
        REQUIRE_MESSAGE(r.completed, r.failure);
        CHECK(r.hash_match);
        return static_cast<double>(r.client_stats.packets_lost) / static_cast<double>(r.client_stats.packets_sent);
    };
    double n = 0, c = 0;
    for (const std::uint64_t seed : {1, 2}) {
        n += loss_rate("ndm-cubic", seed) / 2;
        c += loss_rate("cubic", seed) / 2;
    }
    MESSAGE("3-packet buffer, 2 seeds: ndm loses ", n * 100, " %, cubic ", c * 100, " %");
    CHECK(n < 3 * c);
}
