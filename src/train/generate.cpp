#include "train/generate.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cc/cubic.hpp"
#include "cc/forwarding.hpp"
#include "cc/ndm/ndm_controller.hpp"
#include "cc/reno.hpp"
#include "cc/window.hpp"
#include "ndm/cc.hpp"
#include "ndm/sim.hpp"
#include "util/rng.hpp"

namespace ndm::train {

// ---------------------------------------------------------------- labelling

void LossLedger::on_packet_sent(Instant time, std::uint64_t bytes) {
    sent_.push_back({time, bytes});
    announced_ = true;
}

void LossLedger::on_link_send() {
    index_to_seq_.push_back(announced_ ? static_cast<std::int64_t>(sent_.size() - 1) : -1);
    announced_ = false;
}

void LossLedger::on_emulator(const emu::PacketEvent& ev) {
    if (ev.index >= index_to_seq_.size() || index_to_seq_[ev.index] < 0) return;
    const auto seq = static_cast<std::uint64_t>(index_to_seq_[ev.index]);
    SentPacket& p = sent_[seq];
    switch (ev.kind) {
        case emu::PacketEvent::Kind::scheduled:
        case emu::PacketEvent::Kind::delivered:
            // One surviving copy (of a duplicated datagram) delivers it.
            if (p.fate == SentPacket::Fate::dropped) pending_.erase(seq);
            p.fate = SentPacket::Fate::delivered;
            break;
        case emu::PacketEvent::Kind::dropped:
            if (p.fate == SentPacket::Fate::delivered) break;
            if (p.fate == SentPacket::Fate::dropped) break;  // the duplicate dropped too: keep the first reason
            p.fate = SentPacket::Fate::dropped;
            p.reason = ev.reason;
            pending_.insert(seq);
            break;
    }
}

std::array<std::uint32_t, kCauseCount> LossLedger::attribute(std::uint64_t packets_lost,
                                                             Instant largest_lost_sent_time) {
    std::array<std::uint32_t, kCauseCount> c{};
    std::uint64_t taken = 0;
    for (auto it = pending_.begin(); it != pending_.end() && taken < packets_lost;) {
        const SentPacket& p = sent_[*it];
        if (p.time > largest_lost_sent_time) break;  // seq order is send order
        switch (p.reason) {
            case emu::DropReason::random: ++c[kRandom]; break;
            case emu::DropReason::burst: ++c[kBurst]; break;
            case emu::DropReason::queue_overflow: ++c[kQueue]; break;
            case emu::DropReason::aqm: ++c[kAqm]; break;
            case emu::DropReason::trace_outage: ++c[kOutage]; break;
            // A link blackhole (outage=DUR@START) is no queue's doing: a
            // non-congestive burst, not kOutage (a trace's queue overflow).
            case emu::DropReason::blackhole: ++c[kBurst]; break;
        }
        ++taken;
        it = pending_.erase(it);
    }
    c[kSpurious] = static_cast<std::uint32_t>(packets_lost - taken);
    return c;
}

int label_of(const std::array<std::uint32_t, kCauseCount>& c) {
    return c[kQueue] + c[kAqm] + c[kOutage] > 0 ? 1 : 0;
}

namespace {

constexpr const char* kTapName = "ndm-train-tap";

// The per-run state the tap controller and the link wrapper report to.
struct Recorder {
    const ScenarioSpec* spec = nullptr;
    LossLedger ledger;
    std::vector<Record> records;
};

thread_local Recorder* tl_recorder = nullptr;

// A controller decorator: forwards every call to the real controller
// (cubic, reno or ndm) unchanged and, mirroring NdmController's calls into
// its FeatureTracker exactly (on_ack per ACK; on_loss then at_loss per
// congestion event), records the features of each event.
class Tap final : public cc::Forwarding {
public:
    Tap(std::unique_ptr<cc::Controller> inner, Recorder& rec) : Forwarding(std::move(inner)), rec_(rec) {
        const cc::Controller* wrapped = &this->inner();
        if (const auto* c = dynamic_cast<const cc::Cubic*>(wrapped)) recovery_ = &c->recovery();
        else if (const auto* r = dynamic_cast<const cc::Reno*>(wrapped)) recovery_ = &r->recovery();
        else if (const auto* n = dynamic_cast<const cc::ndm::NdmController*>(wrapped)) recovery_ = &n->cubic().recovery();
    }

    void on_packet_sent(const cc::PacketSent& p) override {
        rec_.ledger.on_packet_sent(p.time, p.bytes);
        Forwarding::on_packet_sent(p);
    }
    void on_ack(const cc::AckEvent& ev) override {
        if (features_.on_ack(ev)) {
            rounds_.push_back(features_.round());
            if (rounds_.size() > kMaxRounds) rounds_.pop_front();
        }
        Forwarding::on_ack(ev);
    }
    void on_congestion_event(const cc::CongestionEvent& ev) override {
        features_.on_loss(ev);
        // Before the inner controller reacts: a decision is an event outside
        // the recovery period as it stood when the loss was declared.
        const bool decision = !ev.persistent && (recovery_ == nullptr || !recovery_->in_recovery(ev.largest_lost_sent_time));
        const auto causes = rec_.ledger.attribute(ev.packets_lost, ev.largest_lost_sent_time);
        if (features_.has_min_rtt()) {
            Record r;
            r.scenario = rec_.spec->info.id;
            r.seed = rec_.spec->info.seed;
            r.controller = rec_.spec->controller;
            r.family = rec_.spec->info.family;
            r.split = rec_.spec->info.split;
            r.time_s = to_seconds(ev.now - Instant{});
            r.causes = causes;
            r.label = label_of(causes);
            r.decision = decision;
            r.persistent = ev.persistent;
            r.lost = static_cast<std::uint32_t>(ev.packets_lost);
            r.rounds.assign(rounds_.begin(), rounds_.end());
            r.at_loss = features_.at_loss(ev);
            rec_.records.push_back(std::move(r));
        }
        Forwarding::on_congestion_event(ev);
    }

private:
    Recorder& rec_;
    const cc::RecoveryPeriod* recovery_ = nullptr;
    cc::ndm::FeatureTracker features_;
    std::deque<FeatureVector> rounds_;
};

void register_tap() {
    static std::once_flag once;
    std::call_once(once, [] {
        cc::register_controller(
            {kTapName, "ndm-train's recording decorator (only inside ndm-train generate)",
             [](const cc::Params& p, const cc::Options& o) -> std::unique_ptr<cc::Controller> {
                 if (!o.empty()) throw std::invalid_argument("congestion controller \"ndm-train-tap\" takes no options");
                 if (tl_recorder == nullptr)
                     throw std::invalid_argument("congestion controller \"ndm-train-tap\" only runs inside ndm-train generate");
                 return std::make_unique<Tap>(cc::make(tl_recorder->spec->controller, p, tl_recorder->spec->cc_options),
                                              *tl_recorder);
             }});
    });
}

// The client → server link, reporting datagrams to the ledger; the two taps
// below differ in which datagrams are the recorded flow's. It does not model
// ECN: a datagram's codepoint is cleared before the emulator sees it (so its
// AQM drops rather than marks), as the datasets were generated.
class LedgerLink : public Link {
public:
    [[nodiscard]] Instant next_delivery() const override { return inner_->next_delivery(); }
    bool deliver(Instant now, Datagram& out) override {
        const bool got = inner_->deliver(now, out);
        out.ecn = Ecn::not_ect;
        return got;
    }
    [[nodiscard]] LinkStats stats() const override { return inner_->stats(); }

protected:
    LedgerLink(std::unique_ptr<emu::EmulatedLink> inner, LossLedger& ledger) : inner_(std::move(inner)), ledger_(ledger) {}
    void forward(const DatagramView& datagram, Instant now) { inner_->send({datagram.bytes}, now); }

    std::unique_ptr<emu::EmulatedLink> inner_;
    LossLedger& ledger_;
};

// A path of its own: every datagram is the recorded flow's.
class TapLink final : public LedgerLink {
public:
    TapLink(std::unique_ptr<emu::EmulatedLink> inner, LossLedger& ledger) : LedgerLink(std::move(inner), ledger) {
        inner_->set_observer([this](const emu::PacketEvent& ev) { ledger_.on_emulator(ev); });
    }
    void send(const DatagramView& datagram, Instant now) override {
        ledger_.on_link_send();
        forward(datagram, now);
    }
};

// The shared bottleneck of a scenario with competing flows: every datagram
// starts with its flow's byte (sim::run_shared_path); only flow 0's
// datagrams go to the ledger, and the emulator's events are renumbered from
// the shared link's send index to flow 0's own.
class TapSharedLink final : public LedgerLink {
public:
    TapSharedLink(std::unique_ptr<emu::EmulatedLink> inner, LossLedger& ledger) : LedgerLink(std::move(inner), ledger) {
        inner_->set_observer([this](const emu::PacketEvent& ev) {
            if (ev.index >= local_.size() || local_[ev.index] < 0) return;
            emu::PacketEvent mine = ev;
            mine.index = static_cast<std::uint64_t>(local_[ev.index]);
            ledger_.on_emulator(mine);
        });
    }
    void send(const DatagramView& datagram, Instant now) override {
        if (!datagram.bytes.empty() && datagram.bytes[0] == 0) {
            local_.push_back(static_cast<std::int64_t>(sent_++));
            ledger_.on_link_send();
        } else {
            local_.push_back(-1);
        }
        forward(datagram, now);
    }

private:
    std::vector<std::int64_t> local_;  // shared send index → flow 0's send index, −1 for other flows
    std::uint64_t sent_ = 0;
};

// ---------------------------------------------------------------- sampling

struct Sampler {
    util::Xoshiro256 rng;
    double uniform(double a, double b) { return a + (b - a) * rng.uniform(); }
    double log_uniform(double a, double b) { return a * std::exp(std::log(b / a) * rng.uniform()); }
    bool chance(double p) { return rng.uniform() < p; }
    std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng.below(n)); }
};

std::string pct(double p) { return fmt::format("{:.4g}%", 100 * p); }
std::string us(double ms) { return fmt::format("{}us", std::llround(ms * 1000)); }

// Jitter as the seed experiment and LTE bearers have it: none, uniform
// order-preserving, or uniform i.i.d. (netem's reordering tfifo).
std::string jitter(Sampler& s, double one_way_ms) {
    const auto kind = s.pick(3);
    if (kind == 0) return "";
    const double j = one_way_ms * s.uniform(0.05, 0.5);
    return fmt::format(",jitter={},distribution=uniform,order={}", us(j), kind == 1 ? "inorder" : "iid");
}

std::string random_loss(Sampler& s, double lo, double hi, const char* prefix) {
    return fmt::format(",{}loss={}", prefix, pct(s.log_uniform(lo, hi)));
}

std::string burst_loss(Sampler& s, const char* prefix) {
    // gemodel p/r/1-h: P(Good→Bad), P(Bad→Good), loss in Bad.
    return fmt::format(",{}gemodel={}/{}/{}", prefix, pct(s.log_uniform(0.001, 0.03)), pct(s.uniform(0.1, 0.6)),
                       pct(s.uniform(0.5, 1.0)));
}

// A scenario's path as its family drew it: the emulator profile, the packets
// a second at the bottleneck (to bound the run's cost) and whether it is the
// held-out ATT driving trace.
struct Path {
    std::string spec;
    double pps = 0;
    bool trace_att = false;
};

// A rate-limited bottleneck with droptail (or CoDel) and random or bursty loss.
Path bottleneck_path(Sampler& s, ScenarioSpec& sc, double u, double rtt_ms, double rate_mbit) {
    const double one_way = rtt_ms / 2;
    Path p{"delay=" + us(one_way)};
    const bool codel = u >= 0.36;
    const bool burst = !codel && u >= 0.26;
    sc.info.family = codel ? "codel" : burst ? "burst" : "loss";
    const double bdp_pkts = rate_mbit * 1e6 / 8 * rtt_ms / 1000 / static_cast<double>(sc.packet_size);
    const double buffer = codel ? std::max(4 * bdp_pkts, 100.0) : bdp_pkts * s.log_uniform(0.25, 4);
    sc.buffer_packets = std::max<long long>(2, std::llround(buffer));
    sc.buffer_bdp = static_cast<double>(sc.buffer_packets) / bdp_pkts;
    p.spec += fmt::format(",up.rate={:.4g}mbit,up.queue={}pkt", rate_mbit, sc.buffer_packets);
    if (codel) p.spec += ",up.aqm=codel";
    if (burst) p.spec += burst_loss(s, "up.");
    else if (s.chance(codel ? 0.5 : 0.6)) p.spec += random_loss(s, 0.001, 0.10, "up.");
    p.spec += jitter(s, one_way);
    p.pps = rate_mbit * 1e6 / 8 / static_cast<double>(sc.packet_size);
    return p;
}

// "Wireless": no bottleneck, only random or bursty loss and jitter (the
// seed's urban-lte), with both packet sizes of the seed experiment. The link
// rate is capped (10–500 Mbit/s, a deep 4–8 BDP buffer) so that a window that
// never meets a bottleneck cannot make a run arbitrarily expensive; drops at
// that buffer are labelled congestive like any other.
Path wireless_path(Sampler& s, ScenarioSpec& sc, double rtt_ms) {
    const double one_way = rtt_ms / 2;
    Path p{"delay=" + us(one_way)};
    sc.info.family = "wireless";
    if (s.chance(0.4)) sc.packet_size = kMaxDatagramSize;
    const double rate_mbit = s.log_uniform(10, 500);
    const double bdp_pkts = rate_mbit * 1e6 / 8 * rtt_ms / 1000 / static_cast<double>(sc.packet_size);
    p.spec += fmt::format(",up.rate={:.4g}mbit,up.queue={}pkt", rate_mbit,
                          std::max<long long>(8, std::llround(bdp_pkts * s.uniform(4, 8))));
    p.spec += s.chance(0.6) ? random_loss(s, 0.005, 0.10, "") : burst_loss(s, "");
    p.spec += jitter(s, one_way);
    p.pps = rate_mbit * 1e6 / 8 / static_cast<double>(sc.packet_size);
    return p;
}

// The LTE trace presets at this RTT, and the synthetic traces of data/traces
// (a 12/3 Mbit/s square wave, 500 ms outages) with a 0.25–4 BDP buffer;
// sometimes with extra random loss.
Path trace_path(Sampler& s, ScenarioSpec& sc, double rtt_ms) {
    static constexpr const char* kTraces[] = {"lte-verizon", "lte-tmobile", "lte-att-driving",
                                              "trace=square-12-3mbit.trace", "trace=outage-500ms.trace"};
    const double one_way = rtt_ms / 2;
    const std::size_t t = s.pick(5);
    sc.info.family = "trace";
    Path p{std::string(kTraces[t]) + ",delay=" + us(one_way)};
    p.trace_att = t == 2;
    if (t >= 3) {
        const double bdp_pkts = 12e6 / 8 * rtt_ms / 1000 / static_cast<double>(sc.packet_size);
        p.spec += fmt::format(",queue={}pkt", std::max<long long>(4, std::llround(bdp_pkts * s.log_uniform(0.25, 4))));
    }
    if (s.chance(0.4)) p.spec += random_loss(s, 0.001, 0.03, "up.");
    p.spec += jitter(s, one_way);
    p.pps = 20e6 / 8 / static_cast<double>(sc.packet_size);
    return p;
}

// 1–3 competing flows on a bottleneck family's link, drawn from a stream of
// their own: every other parameter is the same as without --compete.
void add_competitors(ScenarioSpec& sc, const GenerateOptions& o) {
    if (!(o.compete > 0 && (sc.info.family == "loss" || sc.info.family == "burst" || sc.info.family == "codel"))) return;
    Sampler c{util::Xoshiro256(util::splitmix64(sc.info.seed ^ 0xc0ffee5eedULL))};
    if (!c.chance(o.compete)) return;
    static constexpr const char* kCompetitors[] = {"cubic", "reno", "ndm-cubic"};
    const std::size_t n = 1 + c.pick(3);
    for (std::size_t k = 0; k < n; ++k) sc.competitors.emplace_back(kCompetitors[c.pick(3)]);
    sc.competitor_start = c.uniform(0, 2);
    sc.competitor_ndm_options = o.ndm_options;
}

// The recorded flow's outcome; `path` is the link it was labelled on (its own,
// or the bottleneck it shared).
void fill_outcome(ScenarioOutcome& out, const sim::TransferResult& flow, const LinkStats& path,
                  const LossLedger& ledger, double seconds) {
    out.goodput_mbit = static_cast<double>(flow.bytes_delivered) * 8 / 1e6 / seconds;
    out.packets_sent = flow.client_stats.packets_sent;
    out.packets_lost = flow.client_stats.packets_lost;
    out.unattributed_drops = ledger.unattributed_drops();
    out.path = path;
    out.failure = flow.completed ? "" : flow.failure;
}

}  // namespace

// A bare name: the controller finds it among the shipped models (util/data_dir.hpp).
std::string default_ndm_options() { return "model=ndm-handset-v1.ndmm"; }
std::string default_ndm_bbr_options() { return "model=ndm-default.ndmm"; }

std::string generate_command(const GenerateOptions& o) {
    // --ndm-bbr-options only where an ndm sender takes it (older datasets' lines stay as they were).
    const bool ndm_senders = std::find(o.controllers.begin(), o.controllers.end(), "ndm") != o.controllers.end();
    return fmt::format("generate --seed {} --scenarios {} --seconds {} --cc {}{}{}{}", o.seed, o.scenarios, o.seconds,
                       fmt::join(o.controllers, ","), o.ndm_options.empty() ? "" : " --ndm-options " + o.ndm_options,
                       ndm_senders && !o.ndm_bbr_options.empty() ? " --ndm-bbr-options " + o.ndm_bbr_options : "",
                       o.compete > 0 ? fmt::format(" --compete {}", o.compete) : "");
}

std::string dataset_comment(const GenerateOptions& o) {
    return std::string(kTrainerVersion) + " " + generate_command(o);
}

GenerateOptions check_options() {
    GenerateOptions o;
    o.seed = 1001;
    o.scenarios = 12;
    o.seconds = 4;
    return o;
}

std::vector<ScenarioSpec> make_scenarios(const GenerateOptions& o) {
    if (o.controllers.empty()) throw std::invalid_argument("generate: no sender controllers given");
    if (!(o.seconds >= 1 && o.seconds <= 600)) throw std::invalid_argument("generate: seconds must be in [1, 600]");
    std::vector<ScenarioSpec> out;
    out.reserve(o.scenarios);
    for (std::size_t i = 0; i < o.scenarios; ++i) {
        ScenarioSpec sc;
        sc.info.id = static_cast<std::uint32_t>(i);
        sc.info.seed = util::splitmix64(o.seed * 0x100000001b3ULL + i);
        Sampler s{util::Xoshiro256(sc.info.seed)};
        sc.controller = o.controllers[i % o.controllers.size()];
        if (sc.controller == "ndm-cubic") sc.cc_options = o.ndm_options;
        if (sc.controller == "ndm") sc.cc_options = o.ndm_bbr_options;

        const double rtt_ms = s.log_uniform(5, 300);
        const double rate_mbit = s.log_uniform(1, 200);
        const double u = s.rng.uniform();
        const Path path = u < 0.50   ? bottleneck_path(s, sc, u, rtt_ms, rate_mbit)
                          : u < 0.68 ? wireless_path(s, sc, rtt_ms)
                                     : trace_path(s, sc, rtt_ms);
        sc.profile = path.spec;
        add_competitors(sc, o);
        // Long enough for ~40 000 bottleneck packets or 200 RTTs, within the bound.
        double secs = o.seconds;
        if (path.pps > 0) secs = std::min(secs, std::max(40000 / path.pps, 200 * rtt_ms / 1000));
        sc.seconds = std::clamp(secs, 3.0, o.seconds);
        // Held-out scenarios differ from the training ones: RTTs in
        // [100, 160) ms and the ATT driving trace are never trained on.
        if ((rtt_ms >= 100 && rtt_ms < 160) || path.trace_att) sc.info.split = Split::test;
        else if (util::splitmix64(sc.info.seed ^ 0x5bd1e995ULL) % 100 < 15) sc.info.split = Split::val;
        else sc.info.split = Split::train;
        sc.info.description = fmt::format("{} cc={} rtt={:.1f}ms packet={} secs={:.1f} profile={}", sc.info.family,
                                          sc.controller, rtt_ms, sc.packet_size, sc.seconds, path.spec);
        if (!sc.competitors.empty())
            sc.info.description += fmt::format(" compete={}@{:.2f}s", fmt::join(sc.competitors, "+"), sc.competitor_start);
        out.push_back(std::move(sc));
    }
    return out;
}

std::vector<Record> run_scenario(const ScenarioSpec& s, ScenarioOutcome* outcome) {
    register_tap();
    const emu::Profile profile = emu::parse_profile(s.profile);
    Recorder rec;
    rec.spec = &s;
    struct Guard {
        explicit Guard(Recorder* r) { tl_recorder = r; }
        ~Guard() { tl_recorder = nullptr; }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
    } guard(&rec);

    if (!s.competitors.empty()) {
        sim::SharedPathSpec sp;
        std::uint64_t flow_seed = s.info.seed * 2 + 1;
        auto flow = [&](const std::string& cc, const std::string& options, Duration start) {
            sim::FlowSpec f;
            f.client.cc = cc;
            f.client.cc_options = options;
            f.client.max_datagram_size = f.server.max_datagram_size = s.packet_size;
            f.client.seed = flow_seed++;
            f.server.seed = flow_seed++;
            f.start = start;
            f.seed = flow_seed;
            sp.flows.push_back(std::move(f));
        };
        flow(kTapName, "", Duration::zero());
        for (const auto& c : s.competitors)
            flow(c, c == "ndm-cubic" ? s.competitor_ndm_options : "", std::chrono::duration_cast<Duration>(
                                                                   std::chrono::duration<double>(s.competitor_start)));
        sp.bottleneck = [&]() -> std::unique_ptr<Link> {
            return std::make_unique<TapSharedLink>(emu::make_link(profile, emu::Direction::up, s.info.seed), rec.ledger);
        };
        std::uint64_t back = 0;
        sp.return_path = [&]() -> std::unique_ptr<Link> {
            return emu::make_link(profile, emu::Direction::down, s.info.seed + 7919 * back++);
        };
        sp.send_until = from_seconds(s.seconds);
        sp.interval = from_seconds(s.seconds + 1);
        sp.deadline = from_seconds(s.seconds + 30);
        const auto r = sim::run_shared_path(sp);
        if (outcome) fill_outcome(*outcome, r.flows.front(), r.bottleneck, rec.ledger, s.seconds);
        return std::move(rec.records);
    }

    sim::TransferSpec spec;
    spec.client.cc = kTapName;
    spec.client.max_datagram_size = spec.server.max_datagram_size = s.packet_size;
    spec.client.seed = s.info.seed * 2 + 1;
    spec.server.seed = s.info.seed * 2 + 2;
    spec.client_to_server_factory = [&]() -> std::unique_ptr<Link> {
        return std::make_unique<TapLink>(emu::make_link(profile, emu::Direction::up, s.info.seed), rec.ledger);
    };
    spec.server_to_client_factory = [&]() -> std::unique_ptr<Link> {
        return emu::make_link(profile, emu::Direction::down, s.info.seed);
    };
    spec.send_for = from_seconds(s.seconds);
    spec.interval = from_seconds(s.seconds + 1);
    spec.deadline = from_seconds(s.seconds + 30);
    spec.seed = s.info.seed;
    const auto r = sim::run_transfer(spec);
    if (outcome) fill_outcome(*outcome, r, r.client_to_server, rec.ledger, s.seconds);
    return std::move(rec.records);
}

Dataset generate(const GenerateOptions& o,
                 const std::function<void(std::size_t, std::size_t, const ScenarioSpec&, const ScenarioOutcome&)>& progress) {
    Dataset d;
    const auto list = make_scenarios(o);
    const std::size_t first = std::min(o.first, list.size());
    const std::size_t last = first + std::min(o.count, list.size() - first);
    for (std::size_t i = first; i < last; ++i) {
        d.scenarios.push_back(list[i].info);
        ScenarioOutcome outcome;
        auto r = run_scenario(list[i], &outcome);
        d.records.insert(d.records.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
        if (progress) progress(i - first + 1, last - first, list[i], outcome);
    }
    return d;
}

}  // namespace ndm::train
