// ECN in the emulator and in virtual time: the bottleneck's CE marking (RED,
// CoDel, the L4S-style step), a path that clears the codepoint, and bulk
// transfers through a marking bottleneck: the window backs off once per
// round with no packet lost, and the link stays busy.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cc/forwarding.hpp"
#include "emu/red.hpp"
#include "ndm/cc.hpp"
#include "ndm/emu.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Ecn;
using ndm::EcnState;
using ndm::Instant;
namespace emu = ndm::emu;

namespace {

std::unique_ptr<emu::EmulatedLink> link(const std::string& spec, std::uint64_t seed = 1) {
    return emu::make_link(emu::parse_profile(spec), emu::Direction::up, seed);
}

struct Delivered {
    std::size_t count = 0;
    std::size_t ce = 0;
    std::vector<Ecn> codepoints;
};

// Sends `n` datagrams of `size` bytes with codepoint `ecn` at once, then
// collects everything the link delivers.
Delivered burst(emu::EmulatedLink& l, std::size_t n, Ecn ecn, std::size_t size = 1200) {
    const std::vector<std::uint8_t> d(size, 1);
    for (std::size_t i = 0; i < n; ++i) l.send({d, ecn}, Instant{});
    Delivered out;
    ndm::Datagram got;
    for (Instant t = l.next_delivery(); t != ndm::kNever; t = l.next_delivery()) {
        while (l.deliver(t, got)) {
            ++out.count;
            out.ce += got.ecn == Ecn::ce ? 1 : 0;
            out.codepoints.push_back(got.ecn);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("emu ecn: the codepoint travels through the pipeline unchanged without marking") {
    auto l = link("delay=5ms,rate=10mbit,queue=100pkt");
    const auto r = burst(*l, 20, Ecn::ect1);
    CHECK(r.count == 20);
    for (Ecn e : r.codepoints) CHECK(e == Ecn::ect1);
    CHECK(l->emu_stats().total_marked() == 0);
    // A datagram sent without a codepoint is not-ECT, and deliver() replaces
    // the codepoint the caller's Datagram held.
    auto m = link("delay=5ms");
    const std::vector<std::uint8_t> d(100, 1);
    m->send({d}, Instant{});
    ndm::Datagram got{{}, Ecn::ce};
    REQUIRE(m->deliver(Instant{} + 5ms, got));
    CHECK(got.ecn == Ecn::not_ect);
    CHECK(got.bytes == d);
}

TEST_CASE("emu ecn: RED marks ECT datagrams CE and drops not-ECT ones, on the queue length (Floyd & Jacobson 1993)") {
    const std::string spec = "rate=1mbit,queue=100pkt,ecn=red,red-min=2,red-max=5,red-p=50%";
    auto l = link(spec);
    const auto ect = burst(*l, 30, Ecn::ect0);
    CHECK(ect.count == 30);  // nothing dropped
    // From the 6th arrival on (5 queued) every one is marked; between 2 and 5 some.
    CHECK(ect.ce >= 25);
    CHECK(ect.ce < 30);
    CHECK(l->emu_stats().marks(emu::MarkReason::red) == ect.ce);
    CHECK(l->emu_stats().drops(emu::DropReason::aqm) == 0);
    CHECK(l->stats().ce_marked == ect.ce);

    auto n = link(spec);
    const auto plain = burst(*n, 30, Ecn::not_ect);
    CHECK(plain.ce == 0);
    CHECK(n->emu_stats().drops(emu::DropReason::aqm) == 30 - plain.count);
    CHECK(plain.count <= 6);
    CHECK(n->emu_stats().total_marked() == 0);

    // Seeded: the same seed marks the same datagrams, and RED's draws have a
    // stream of their own, so the loss pattern is the same with it or without.
    auto a = link(spec, 7), b = link(spec, 7);
    CHECK(burst(*a, 30, Ecn::ect0).codepoints == burst(*b, 30, Ecn::ect0).codepoints);
    auto lossy = link("loss=20%,rate=1mbit,queue=100pkt", 3), lossy_red = link("loss=20%," + spec, 3);
    burst(*lossy, 200, Ecn::ect0);
    burst(*lossy_red, 200, Ecn::ect0);
    CHECK(lossy->emu_stats().drops(emu::DropReason::random) == lossy_red->emu_stats().drops(emu::DropReason::random));
}

TEST_CASE("emu ecn: RED with red-wq < 1 averages the queue, decays it while idle and spaces its marks by count") {
    emu::QueueConfig q;
    q.red_min = 2;
    q.red_max = 5;
    q.red_max_p = 0.5;
    q.red_wq = 0.002;  // the paper's weight
    const Duration tx = 1ms;
    emu::RedMarker red(q, tx);
    emu::Rng rng(11);
    Instant now{};
    // A standing queue of 4: the average climbs to it (1 - 0.998^5000 of the way).
    for (int i = 0; i < 5000; ++i) red.picks(4, now += 10us, now, rng);
    CHECK(red.average() == doctest::Approx(4).epsilon(1e-3));
    // p_b = 0.5 * (4 - 2) / 3 = 1/3: count spacing marks at most 3 arrivals apart.
    int since = 0, longest = 0, marks = 0;
    for (int i = 0; i < 3000; ++i) {
        if (red.picks(4, now += 10us, now, rng)) {
            ++marks;
            since = 0;
        } else {
            longest = std::max(longest, ++since);
        }
    }
    CHECK(longest < 3);
    CHECK(marks > 1000);  // a mark every 3 arrivals at the latest, every 2 on average
    // Idle for 1000 typical transmissions: as if 1000 packets found it empty.
    const double before = red.average();
    const Instant emptied = now;
    now += 1000 * tx;
    CHECK_FALSE(red.picks(0, now, emptied, rng));
    CHECK(red.average() == doctest::Approx(before * std::pow(0.998, 1000)).epsilon(1e-9));

    // Through a link: a 30-datagram burst moves the average too little to mark
    // (the instantaneous queue marks at least 25 of them, the test above).
    auto l = link("rate=1mbit,queue=100pkt,ecn=red,red-min=2,red-max=5,red-p=50%,red-wq=0.002");
    CHECK(burst(*l, 30, Ecn::ect0).ce == 0);
    CHECK(emu::describe(emu::parse_profile("rate=1mbit,ecn=red,red-wq=0.002").up).find("wq=0.002") != std::string::npos);
}

TEST_CASE("emu ecn: the step marks ECT datagrams queued longer than ecn-step (RFC 9331 §5.1)") {
    // 1200 bytes at 1 Mbit/s take 9.6 ms: the first waits 0, each later one longer than 1 ms.
    auto l = link("rate=1mbit,queue=100pkt,ecn=step,ecn-step=1ms");
    const auto r = burst(*l, 10, Ecn::ect0);
    CHECK(r.count == 10);
    CHECK(r.codepoints.front() == Ecn::ect0);
    CHECK(r.ce == 9);
    CHECK(l->emu_stats().marks(emu::MarkReason::step) == 9);
    // A threshold above the wait of the second one (9.6 ms) spares it.
    auto m = link("rate=1mbit,queue=100pkt,ecn=step,ecn-step=10ms");
    CHECK(burst(*m, 10, Ecn::ect0).ce == 8);
    // L4S's queue marks ECT(1) only: classic ECT(0) traffic passes unmarked.
    auto k = link("rate=1mbit,queue=100pkt,ecn=step,ecn-step-ect1=on");
    CHECK(burst(*k, 10, Ecn::ect0).ce == 0);
    CHECK(burst(*k, 10, Ecn::ect1).ce > 0);
    // not-ECT datagrams are neither marked nor dropped by the step.
    auto p = link("rate=1mbit,queue=100pkt,ecn=step");
    const auto plain = burst(*p, 10, Ecn::not_ect);
    CHECK(plain.count == 10);
    CHECK(plain.ce == 0);
}

TEST_CASE("emu ecn: CoDel marks where it would drop (RFC 8289 §5)") {
    // A standing queue for longer than the interval: CoDel starts dropping, or marking.
    const std::string base = "rate=2mbit,queue=1000pkt,aqm=codel,codel-target=5ms,codel-interval=50ms";
    auto drop = link(base), mark = link(base + ",ecn=codel");
    const auto dropped = burst(*drop, 400, Ecn::ect0);
    const auto marked = burst(*mark, 400, Ecn::ect0);
    CHECK(drop->emu_stats().drops(emu::DropReason::aqm) > 0);
    CHECK(dropped.ce == 0);
    CHECK(marked.count == 400);
    CHECK(mark->emu_stats().drops(emu::DropReason::aqm) == 0);
    CHECK(marked.ce > 0);
    CHECK(mark->emu_stats().marks(emu::MarkReason::codel) == marked.ce);
    // not-ECT traffic is still dropped.
    auto plain = link(base + ",ecn=codel");
    burst(*plain, 400, Ecn::not_ect);
    CHECK(plain->emu_stats().drops(emu::DropReason::aqm) > 0);
    CHECK(plain->emu_stats().total_marked() == 0);
}

TEST_CASE("emu ecn: ecn=bleach clears every codepoint, and the statistics say so") {
    auto l = link("delay=1ms,ecn=bleach");
    const auto r = burst(*l, 5, Ecn::ect0);
    CHECK(r.count == 5);
    for (Ecn e : r.codepoints) CHECK(e == Ecn::not_ect);
    CHECK(l->emu_stats().bleached == 5);
    CHECK(emu::format_stats(l->emu_stats()).find("ECN cleared 5") != std::string::npos);
    CHECK(emu::describe(emu::parse_profile("ecn=bleach").up) == "ecn=bleach");
    CHECK(emu::describe(emu::parse_profile("rate=10mbit,ecn=red,red-min=3,red-max=9").up).find("ecn=red(3-9pkt") !=
          std::string::npos);
}

TEST_CASE("emu ecn: bad ECN options are one-line errors") {
    auto error_of = [](const std::string& spec) {
        try {
            (void)emu::parse_profile(spec);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error_of("rate=1mbit,ecn=yes").find("ecn: unknown 'yes'") != std::string::npos);
    CHECK(error_of("ecn=red").find("needs a bottleneck") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=codel").find("needs aqm=codel") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=red,red-min=9,red-max=4").find("red-min (9) must be below red-max (4)") !=
          std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=red,red-p=0").find("red-p") != std::string::npos);
    CHECK(error_of("rate=1mbit,red-p=2").find("out of range") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=red,red-wq=0").find("red-wq must be in (0, 1]") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=red,red-wq=1.5").find("out of range") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn=step,ecn-step=0ms").find("ecn-step must be > 0") != std::string::npos);
    CHECK(error_of("rate=1mbit,ecn-step-ect1=maybe").find("use on or off") != std::string::npos);
    for (const char* spec : {"rate=1mbit,ecn=yes", "ecn=red", "rate=1mbit,ecn=codel"})
        CHECK(error_of(spec).find('\n') == std::string::npos);
}

// ---------------------------------------------------------------- transfers

namespace {

// Wraps a controller and records when it reduced its window.
struct Reductions {
    std::vector<Instant> at;
};

class ReductionTap final : public ndm::cc::Forwarding {
public:
    ReductionTap(std::unique_ptr<ndm::cc::Controller> inner, Reductions& out)
        : Forwarding(std::move(inner)), out_(out) {}
    void on_congestion_event(const ndm::cc::CongestionEvent& ev) override {
        const auto before = cwnd();
        Forwarding::on_congestion_event(ev);
        if (cwnd() < before) out_.at.push_back(ev.now);
    }

private:
    Reductions& out_;
};

struct Marked {
    ndm::sim::TransferResult result;
    Reductions reductions;
    emu::EmuStats bottleneck;
};

// A 10 s bulk transfer through a 20 Mbit/s, 20 ms RTT bottleneck whose queue
// marks as `aqm` says (queue 200 packets, well above where it marks).
Marked run_marked(const std::string& cc, const std::string& aqm, bool ecn = true) {
    Marked m;
    // Owned by the registration too, so that it never points at a dead object.
    auto reductions = std::make_shared<Reductions>();
    const std::string tap = "ecn-test-tap-" + cc;
    ndm::cc::register_controller({tap, "test tap", [cc, reductions](const ndm::cc::Params& p, const ndm::cc::Options&) {
                                      return std::make_unique<ReductionTap>(ndm::cc::make(cc, p), *reductions);
                                  }});
    const auto profile = emu::parse_profile("delay=10ms,rate=20mbit,queue=200pkt," + aqm);
    auto up = std::shared_ptr<emu::EmulatedLink>(emu::make_link(profile, emu::Direction::up, 1));
    ndm::sim::TransferSpec s;
    s.client.cc = tap;
    s.client.ecn = ecn;
    s.send_for = 10s;
    s.deadline = 60s;
    struct Ref final : ndm::Link {
        std::shared_ptr<emu::EmulatedLink> l;
        explicit Ref(std::shared_ptr<emu::EmulatedLink> x) : l(std::move(x)) {}
        void send(const ndm::DatagramView& d, Instant now) override { l->send(d, now); }
        [[nodiscard]] Instant next_delivery() const override { return l->next_delivery(); }
        bool deliver(Instant now, ndm::Datagram& out) override { return l->deliver(now, out); }
        [[nodiscard]] ndm::LinkStats stats() const override { return l->stats(); }
    };
    s.client_to_server_factory = [up] { return std::make_unique<Ref>(up); };
    s.server_to_client_factory = [profile] { return emu::make_link(profile, emu::Direction::down, 1); };
    m.result = ndm::sim::run_transfer(s);
    m.reductions = *reductions;
    m.bottleneck = up->emu_stats();
    return m;
}

double mbit_per_s(const ndm::sim::TransferResult& r) {
    return static_cast<double>(r.bytes_delivered) * 8 / std::chrono::duration<double>(r.duration).count() / 1e6;
}

}  // namespace

TEST_CASE("ecn in virtual time: reno and cubic behind a RED marker back off once per round, lose nothing, fill the link") {
    for (const char* cc : {"reno", "cubic"}) {
        CAPTURE(cc);
        const auto m = run_marked(cc, "ecn=red,red-min=20,red-max=60,red-p=20%");
        const auto& r = m.result;
        REQUIRE(r.completed);
        CHECK(r.hash_match);
        CHECK(r.client_stats.ecn_state == EcnState::capable);
        CHECK(r.client_stats.packets_lost == 0);
        CHECK(r.client_to_server.dropped_queue == 0);
        CHECK(m.bottleneck.marks(emu::MarkReason::red) > 0);
        // Every mark the bottleneck made reached the server and came back in its counts.
        CHECK(r.server_stats.ecn_ce_received == m.bottleneck.marks(emu::MarkReason::red));
        CHECK(r.client_stats.ecn_ce_reported == r.server_stats.ecn_ce_received);
        // Several reductions, none within a round trip of the previous one (RFC 9002 §7.3.2).
        REQUIRE(m.reductions.at.size() >= 3);
        for (std::size_t i = 1; i < m.reductions.at.size(); ++i)
            CHECK(m.reductions.at[i] - m.reductions.at[i - 1] >= 20ms);
        CHECK(m.reductions.at.size() < r.client_stats.ecn_ce_reported);  // many marks, fewer reductions
        const double rate = mbit_per_s(r);
        MESSAGE(cc << ": " << rate << " Mbit/s, " << r.client_stats.ecn_ce_reported << " CE, "
                   << m.reductions.at.size() << " reductions");
        CHECK(rate > 0.85 * 20);
    }
}

TEST_CASE("ecn in virtual time: CoDel and step marking also hold the queue without loss") {
    for (const char* aqm : {"aqm=codel,ecn=codel", "ecn=step,ecn-step=5ms"}) {
        CAPTURE(aqm);
        const auto m = run_marked("cubic", aqm);
        const auto& r = m.result;
        REQUIRE(r.completed);
        CHECK(r.client_stats.packets_lost == 0);
        CHECK(r.client_stats.ecn_ce_reported > 0);
        CHECK(m.bottleneck.total_marked() > 0);
        CHECK(mbit_per_s(r) > 0.8 * 20);
    }
}

TEST_CASE("ecn in virtual time: bbr treats CE marks as congestion: behind a step marker it loses nothing and keeps the queue short") {
    // draft-ietf-ccwg-bbr §3.7: CE marks MUST count as congestion. Without
    // them the same 200-packet queue (80 ms) fills as far as BBR's 2 BDP
    // window lets it; with them every probe ends at the mark.
    const auto with = run_marked("bbr", "ecn=step,ecn-step=5ms");
    const auto without = run_marked("bbr", "ecn=step,ecn-step=5ms", false);
    REQUIRE(with.result.completed);
    REQUIRE(without.result.completed);
    CHECK(with.result.hash_match);
    CHECK(with.result.client_stats.packets_lost == 0);
    CHECK(with.result.client_stats.ecn_ce_reported > 0);
    CHECK(without.bottleneck.total_marked() == 0);
    const auto p95 = [](const Marked& m) { return m.bottleneck.queue_delay.quantile(0.95); };
    MESSAGE("bbr: with ECN " << mbit_per_s(with.result) << " Mbit/s, p95 queue " << ndm::to_seconds(p95(with)) * 1e3
                             << " ms, " << with.result.client_stats.ecn_ce_reported << " CE; without "
                             << mbit_per_s(without.result) << " Mbit/s, p95 queue " << ndm::to_seconds(p95(without)) * 1e3 << " ms");
    CHECK(mbit_per_s(with.result) > 0.85 * 20);
    CHECK(p95(with) < p95(without));
}

TEST_CASE("ecn in virtual time: with ECN off the same RED queue drops instead") {
    const auto m = run_marked("reno", "ecn=red,red-min=20,red-max=60,red-p=20%", false);
    REQUIRE(m.result.completed);
    CHECK(m.result.client_stats.ecn_state == EcnState::disabled);
    CHECK(m.bottleneck.total_marked() == 0);
    CHECK(m.bottleneck.drops(emu::DropReason::aqm) > 0);
    CHECK(m.result.client_stats.packets_lost > 0);
}

TEST_CASE("ecn in virtual time: a bleaching path fails validation and the sender stops marking") {
    const auto m = run_marked("cubic", "ecn=bleach");
    const auto& r = m.result;
    REQUIRE(r.completed);
    CHECK(r.client_stats.ecn_state == EcnState::failed);
    CHECK(r.client_stats.ecn_ect0_sent <= 12);
    CHECK(r.server_stats.ecn_ect0_received == 0);
    CHECK(m.bottleneck.bleached == r.client_stats.ecn_ect0_sent);
}

TEST_CASE("ecn in virtual time: SimpleLink carries the codepoints, and runs stay bit-identical") {
    auto run = [] {
        ndm::sim::TransferSpec s;
        s.client_to_server.delay = s.server_to_client.delay = 10ms;
        s.client_to_server.rate_bps = 50e6;
        s.client_to_server.loss = 0.01;
        s.bytes = 4u << 20;
        return ndm::sim::run_transfer(s);
    };
    const auto a = run(), b = run();
    REQUIRE(a.completed);
    CHECK(a.client_stats.ecn_state == EcnState::capable);
    CHECK(a.server_stats.ecn_state == EcnState::capable);
    CHECK(a.server_stats.ecn_ect0_received > 0);
    CHECK(a.server_stats.ecn_ect0_received <= a.client_stats.ecn_ect0_sent);
    CHECK(a.duration == b.duration);
    CHECK(a.steps == b.steps);
    CHECK(a.client_stats.packets_sent == b.client_stats.packets_sent);
    CHECK(a.client_stats.ecn_ect0_sent == b.client_stats.ecn_ect0_sent);
}

TEST_CASE("ecn in virtual time: a Link that does not carry ECN looks like a bleaching path") {
    struct Plain final : ndm::Link {
        ndm::sim::SimpleLink inner{ndm::sim::SimpleLinkConfig{}};
        // Clears the codepoint both ways, as a path that rewrites the TOS byte.
        void send(const ndm::DatagramView& d, Instant now) override { inner.send({d.bytes}, now); }
        [[nodiscard]] Instant next_delivery() const override { return inner.next_delivery(); }
        bool deliver(Instant now, ndm::Datagram& out) override {
            const bool got = inner.deliver(now, out);
            out.ecn = Ecn::not_ect;
            return got;
        }
        [[nodiscard]] ndm::LinkStats stats() const override { return inner.stats(); }
    };
    ndm::sim::TransferSpec s;
    s.client_to_server_factory = [] { return std::make_unique<Plain>(); };
    s.server_to_client_factory = [] { return std::make_unique<Plain>(); };
    s.bytes = 1u << 20;
    const auto r = ndm::sim::run_transfer(s);
    REQUIRE(r.completed);
    CHECK(r.client_stats.ecn_state == EcnState::failed);
    CHECK(r.server_stats.ecn_ect0_received == 0);
}
