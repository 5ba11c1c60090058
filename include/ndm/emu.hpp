// ndm::emu: the network emulator (docs/emulator.md). One pure, seeded impairment model
// per direction (docs/architecture.md principle 2): packets go in with a timestamp and
// come out when due; every drop is tagged with its reason. The simulator uses
// it as an ndm::Link in virtual time; the socket path drives the same
// object with CLOCK_MONOTONIC timestamps.
//
// Per-copy pipeline (cf. netem_enqueue, docs/emulator.md R1):
//   outage (a blackhole phase drops the datagram before any random draw) → duplicate (the copy runs the whole pipeline, as netem re-enqueues it at the root)
//   → loss → corrupt → bottleneck (rate or Mahimahi trace, finite droptail/CoDel queue)
//   → delay + jitter (order-preserving or i.i.d.) / explicit reorder → delivery.
// The bottleneck sits before the propagation delay, as `mm-link` inside `mm-delay`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ndm/link.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::emu {

// ---------------------------------------------------------------- configuration

enum class DropReason : std::uint8_t {
    random,          // Bernoulli loss; Gilbert–Elliott Good state; 4-state isolated loss
    burst,           // Gilbert–Elliott Bad state; 4-state burst state
    queue_overflow,  // droptail at the packet/byte bound
    aqm,             // CoDel (RFC 8289) dropped at dequeue
    trace_outage,    // queue overflow while the trace had no opportunity for TraceConfig::outage_gap
    blackhole,       // sent, or due to arrive, during one of DirectionConfig::outages
};
inline constexpr std::size_t kDropReasons = 6;
[[nodiscard]] const char* to_string(DropReason r);

// Why the bottleneck marked an ECT datagram CE instead of dropping it
// (RFC 3168 §5, QueueConfig::ecn).
enum class MarkReason : std::uint8_t {
    red,    // RED's probability on the queue length
    codel,  // CoDel's drop decision at dequeue (RFC 8289 §5)
    step,   // the L4S step: queueing delay above QueueConfig::ecn_step (RFC 9331 §5.1)
};
inline constexpr std::size_t kMarkReasons = 3;
[[nodiscard]] const char* to_string(MarkReason r);

enum class LossKind : std::uint8_t { none, bernoulli, gilbert_elliott, four_state };

// netem's loss models (docs/emulator.md R5). netem's loss "correlation" is
// deliberately absent (R4: it does not do what it says).
struct LossConfig {
    LossKind kind = LossKind::none;
    double p = 0;            // bernoulli: P(loss); gilbert_elliott: P(Good→Bad)
    double r = 1;            // gilbert_elliott: P(Bad→Good); tc default 1−p
    double loss_bad = 1;     // gilbert_elliott: 1−h, loss probability in Bad
    double loss_good = 0;    // gilbert_elliott: 1−k, loss probability in Good
    // four_state (netem `state p13 p31 p32 p23 p14`; tc defaults p31 = 1−p13, p32 = 0, p23 = 1, p14 = 0)
    double p13 = 0, p31 = 1, p32 = 0, p23 = 1, p14 = 0;
};

// netem's `distribution`. uniform: U[d−J, d+J) (netem's default); the others
// treat J as σ and are clipped at ±4σ like netem's int16 tables (§1.2).
enum class Distribution : std::uint8_t { uniform, normal, pareto, paretonormal };

// in_order: t = max(t_prev, now + delay): jitter without reordering, as an LTE
// bearer (RLC in-sequence delivery, §0.2). iid: each packet's delay is drawn
// independently and packets leave by due time (netem's tfifo), which reorders.
enum class Ordering : std::uint8_t { in_order, iid };

struct DelayConfig {
    Duration delay{0};
    Duration jitter{0};
    Distribution distribution = Distribution::uniform;
    Ordering ordering = Ordering::in_order;
    // netem `reorder P gap N` (§1.6): once `gap − 1` packets were delayed, the
    // next is sent immediately with probability P. 0 = off.
    double reorder = 0;
    std::uint32_t gap = 1;
};

enum class QueueDiscipline : std::uint8_t { droptail, codel };

// CE marking at the bottleneck (RFC 3168 §5: an AQM marks an ECT datagram
// where it would drop it; a not-ECT one it still drops). none: the queue
// never marks. red: RED (Floyd & Jacobson 1993) on the queue length at
// arrival: below red_min nothing, from red_min to red_max a probability
// rising linearly to red_max_p, at red_max and above every datagram. With
// red_wq = 1 (default) the length is the instantaneous one (no EWMA and no
// count spacing, so the verdict depends on this packet's queue alone, as with
// DualPI2's step); with red_wq < 1 it is the paper's EWMA of the queue (0.002
// there), decayed while idle, with marks spread by the count since the last.
// codel: CoDel's own decisions (aqm=codel), marking instead of dropping as
// RFC 8289 §5 and Linux's codel `ecn` do. step: an L4S-style step (RFC 9331
// §5.1; DualPI2's 1 ms default): an ECT datagram (only ECT(1) with
// ecn_step_ect1_only, as L4S's queue would) waiting longer than ecn_step is
// marked; nothing is dropped for it.
enum class EcnMarking : std::uint8_t { none, red, codel, step };

struct QueueConfig {
    double rate_bps = 0;          // 0 = unlimited (no bottleneck unless a trace is set)
    std::int32_t overhead = 0;    // bytes added per packet for serialization (netem PACKETOVERHEAD; may be negative)
    // Bound on waiting + serializing packets (netem's default limit); 0 = none.
    // Behind a trace it counts MTU-sized packets of TraceConfig::opportunity_bytes
    // (a datagram holds ceil(bytes / 1500) places, as its IP fragments would in mm-link).
    std::size_t packets = 1000;
    std::size_t bytes = 0;        // bound in bytes; 0 = none
    QueueDiscipline discipline = QueueDiscipline::droptail;
    Duration codel_target = std::chrono::milliseconds(5);
    Duration codel_interval = std::chrono::milliseconds(100);
    EcnMarking ecn = EcnMarking::none;
    std::size_t red_min = 5;    // packets (red)
    std::size_t red_max = 15;   // packets, > red_min
    double red_max_p = 0.1;     // marking probability just below red_max
    double red_wq = 1;          // weight of RED's average queue, in (0, 1]; 1 = instantaneous
    Duration ecn_step = std::chrono::milliseconds(1);
    bool ecn_step_ect1_only = false;
};

class Trace;  // a loaded Mahimahi trace (src/emu/delivery_trace.hpp)

struct TraceConfig {
    std::shared_ptr<const Trace> trace;  // null = no trace
    std::uint32_t opportunity_bytes = 1500;  // per line; Mahimahi's code uses 1504 (docs/emulator.md R8)
    // A queue overflow counts as trace_outage when the trace offered no
    // opportunity during the last outage_gap.
    Duration outage_gap = std::chrono::milliseconds(100);
};

// A blackhole phase (the profile's outage=DUR@START): the link carries nothing
// during [start, start + duration), counted from the link's first datagram (the
// handshake's), so it means the same in virtual time and on sockets. A datagram
// sent then, or one sent before whose arrival would fall in it, is dropped as
// DropReason::blackhole: nothing enters and nothing leaves, as on a cut link.
struct OutageConfig {
    Duration start{0};
    Duration duration{0};
};
inline constexpr std::size_t kMaxOutages = 64;

// One direction of a path. Every stage is optional.
struct DirectionConfig {
    std::vector<OutageConfig> outages;  // checked before every other stage
    LossConfig loss;
    double duplicate = 0;
    double corrupt = 0;      // flips one random bit of the datagram
    QueueConfig queue;
    TraceConfig trace;       // when set, replaces queue.rate_bps as the service process
    DelayConfig delay;
    // The path clears every datagram's ECN codepoint (a middlebox rewriting
    // the TOS byte, RFC 9000 §13.4.2's bleaching), before the bottleneck.
    bool ecn_bleach = false;
};

// `up` is client → server (Mahimahi's uplink), `down` server → client.
enum class Direction : std::uint8_t { up, down };

struct Profile {
    std::string name;  // the preset name or the spec text it was parsed from
    DirectionConfig up;
    DirectionConfig down;
    [[nodiscard]] const DirectionConfig& operator[](Direction d) const { return d == Direction::up ? up : down; }
};

// ---------------------------------------------------------------- parsing

// Accepts, in this order: a preset name optionally followed by overrides
// ("urban-lte,loss=1%"); a path to a JSON profile file (*.json); a compact spec
// string "delay=50ms,jitter=20ms,loss=5%,rate=20mbit,queue=100pkt". Keys apply
// to both directions unless prefixed "up." or "down."; a later key wins.
//   delay, jitter            time: ns, us, ms, s (a unit is required)
//   distribution             uniform (default: U[d−J, d+J)) | normal | pareto | paretonormal (J = σ)
//   order                    inorder (default) | iid (netem's reordering tfifo)
//   reorder, gap             netem reorder P gap N (needs a delay)
//   loss                     Bernoulli: 5% or 0.05
//   gemodel                  p[/r[/1-h[/1-k]]]          (netem gemodel; tc defaults)
//   lossstate                p13[/p31[/p32[/p23[/p14]]]] (netem state)
//   duplicate, corrupt       probabilities
//   rate                     bit, kbit, mbit, gbit; bps, kbps, mbps = BYTES/s as in tc
//   overhead                 bytes per packet for serialization (may be negative)
//   queue                    Npkt, Nb|kb|mb|kib|mib, or both "100pkt/150kb" (default 1000pkt;
//                            with a trace, Npkt counts 1500-byte packets: a 64 KB datagram holds 44)
//   aqm                      droptail (default) | codel; codel-target, codel-interval
//   trace                    a Mahimahi file (path or name in trace_search_path());
//                            "trace=NAME" uses NAME.up / NAME.down when NAME itself is absent
//   ecn                      none (default) | red | codel (needs aqm=codel) | step: CE marking
//                            (QueueConfig::ecn); bleach: the path clears the codepoint
//   red-min, red-max         RED thresholds in packets (default 5, 15); red-p its maximum probability (10%)
//   red-wq                   RED's averaging weight w_q in (0, 1] (default 1: the instantaneous queue;
//                            the paper's 0.002 averages over ~500 arrivals)
//   ecn-step                 the step's queueing delay (default 1ms); ecn-step-ect1 on|off: mark ECT(1) only
//   outage                   DUR@START: a blackhole of DUR from START after the link's first
//                            datagram (OutageConfig); repeatable, each adds a phase (at most
//                            kMaxOutages); "outage=none" removes those set before
// Throws std::invalid_argument with a one-line message naming the problem
// (unknown key, bad unit, out-of-range value, unreadable trace).
[[nodiscard]] Profile parse_profile(std::string_view text);
// A JSON object {"name": .., "delay": "50ms", .., "up": {..}, "down": {..}}
// with the spec string's keys (strings with units, or numbers for plain values).
[[nodiscard]] Profile load_profile_json(const std::string& path);

struct PresetInfo {
    std::string name;
    std::string spec;         // the spec string it expands to
    std::string description;  // one line: what it models and where the numbers come from
};
[[nodiscard]] const std::vector<PresetInfo>& presets();

// Where trace names are looked up when they are not a path, in order: the
// traces/ of the installation's share/ndm (next to the running program, then
// the compiled-in prefix), $NDM_DATA_DIR/traces, the source tree's data/traces.
[[nodiscard]] std::vector<std::string> trace_search_path();

// ---------------------------------------------------------------- statistics

// Log-linear histogram of durations (16 sub-buckets per power of two above
// 32 µs: ≤ 6.25 % relative bucket width), with exact count/sum/min/max.
class Histogram {
public:
    void add(Duration d);
    [[nodiscard]] std::uint64_t count() const { return count_; }
    [[nodiscard]] Duration min() const { return count_ ? min_ : Duration{0}; }
    [[nodiscard]] Duration max() const { return max_; }
    [[nodiscard]] Duration mean() const;
    // The upper edge of the bucket holding quantile q in [0, 1] (0 if empty).
    [[nodiscard]] Duration quantile(double q) const;

private:
    static constexpr std::size_t kBuckets = 32 + 16 * 40;
    std::array<std::uint64_t, kBuckets> buckets_{};
    std::uint64_t count_ = 0;
    double sum_ns_ = 0;
    Duration min_{Duration::max()};
    Duration max_{0};
};

struct EmuStats {
    std::uint64_t sent = 0;        // datagrams given to send()
    std::uint64_t delivered = 0;   // copies handed out by deliver()
    std::uint64_t duplicated = 0;  // extra copies made
    std::uint64_t corrupted = 0;
    std::uint64_t reordered = 0;   // delivered with a lower send index than one delivered before (RFC 4737)
    std::uint64_t reorder_immediate = 0;  // sent at once by the explicit reorder knob
    std::array<std::uint64_t, kDropReasons> dropped{};
    std::array<std::uint64_t, kMarkReasons> marked{};  // ECT copies marked CE instead of dropped
    std::uint64_t bleached = 0;                        // copies whose codepoint the path cleared
    Histogram queue_delay;    // waiting time in the bottleneck queue (until serialization starts)
    Histogram one_way_delay;  // send() → due time of each delivered copy
    [[nodiscard]] std::uint64_t drops(DropReason r) const { return dropped[static_cast<std::size_t>(r)]; }
    [[nodiscard]] std::uint64_t total_dropped() const;
    [[nodiscard]] std::uint64_t marks(MarkReason r) const { return marked[static_cast<std::size_t>(r)]; }
    [[nodiscard]] std::uint64_t total_marked() const;
};

// One line per copy's fate, for tests, logs and training labels.
struct PacketEvent {
    enum class Kind : std::uint8_t { dropped, scheduled, delivered };
    Kind kind;
    std::uint64_t index;   // send() call index, shared by a duplicate
    bool duplicate;        // the extra copy
    bool corrupted;
    DropReason reason;     // for dropped
    Instant sent;
    Instant at;            // drop time, or the due time (scheduled/delivered)
    Ecn ecn = Ecn::not_ect;  // the copy's codepoint at this point (CE once marked)
};

// ---------------------------------------------------------------- the link

class Pipeline;

class EmulatedLink final : public Link {
public:
    EmulatedLink(const DirectionConfig& config, std::uint64_t seed);
    ~EmulatedLink() override;
    EmulatedLink(const EmulatedLink&) = delete;
    EmulatedLink& operator=(const EmulatedLink&) = delete;

    void send(const DatagramView& datagram, Instant now) override;
    [[nodiscard]] Instant next_delivery() const override;
    bool deliver(Instant now, Datagram& out) override;
    [[nodiscard]] LinkStats stats() const override;
    // send()/deliver() with an opaque tag that travels with the datagram (and
    // its duplicate) and comes back on delivery: SharedLink's port number.
    void send_tagged(const DatagramView& datagram, Instant now, std::uint64_t tag);
    bool deliver_tagged(Instant now, Datagram& out, std::uint64_t& tag);

    [[nodiscard]] const EmuStats& emu_stats() const;
    // Called for every drop, every scheduled copy and every delivery.
    void set_observer(std::function<void(const PacketEvent&)> observer);
    // Datagrams accepted and not yet delivered or dropped.
    [[nodiscard]] std::size_t in_flight() const;

private:
    std::unique_ptr<Pipeline> pipeline_;
};

// A Link that forwards to an emulator link shared with the caller, so the
// caller can still read the emulator's statistics (EmuStats) after the
// simulator or endpoint that owned the Link is gone.
class LinkRef final : public Link {
public:
    explicit LinkRef(std::shared_ptr<EmulatedLink> link) : link_(std::move(link)) {}
    void send(const DatagramView& datagram, Instant now) override { link_->send(datagram, now); }
    [[nodiscard]] Instant next_delivery() const override { return link_->next_delivery(); }
    bool deliver(Instant now, Datagram& out) override { return link_->deliver(now, out); }
    [[nodiscard]] LinkStats stats() const override { return link_->stats(); }

private:
    std::shared_ptr<EmulatedLink> link_;
};

// One emulated link shared by several connections, as they would share a
// real bottleneck (netem on one interface, one mm-link, `ndm-emu relay`): all
// ports' datagrams run through the same loss, queue, rate or trace and delay
// stages, and each port hands out only its own. An Endpoint gets one port per
// connection from its factory (`cfg.egress_link = [s] { return s->port(); }`),
// so N connections get the link's capacity together, not N times it.
// Owned by a std::shared_ptr (each port keeps it alive); one thread, like the
// Endpoint that drives it.
class SharedLink final : public std::enable_shared_from_this<SharedLink> {
public:
    explicit SharedLink(std::unique_ptr<EmulatedLink> link);
    ~SharedLink();
    SharedLink(const SharedLink&) = delete;
    SharedLink& operator=(const SharedLink&) = delete;

    // A new connection's view of the link. Its stats() are the shared link's.
    [[nodiscard]] std::unique_ptr<Link> port();
    [[nodiscard]] const EmulatedLink& link() const { return *link_; }
    [[nodiscard]] std::size_t open_ports() const { return queues_.size(); }
    // Datagrams the link delivered for a port already destroyed (its
    // connection ended while they were in flight): discarded.
    [[nodiscard]] std::uint64_t orphaned() const { return orphaned_; }

private:
    class Port;
    struct Queued {
        Instant due;
        std::vector<std::uint8_t> data;
        Ecn ecn;
    };
    // Moves everything the link delivers by `now` to its port's queue.
    void pull(Instant now);

    std::unique_ptr<EmulatedLink> link_;
    std::unordered_map<std::uint64_t, std::deque<Queued>> queues_;  // by port number, never reused
    std::uint64_t next_port_ = 0;
    Datagram rx_;
    std::vector<std::vector<std::uint8_t>> spare_;  // buffers for queued datagrams, reused
    std::uint64_t orphaned_ = 0;
};

// One direction's link. The seed is mixed with the direction, so one run seed
// gives both directions independent streams; each decision type (loss,
// duplicate, corrupt, jitter, reorder, RED) has its own stream, so comparing two
// controllers under the same seed uses common random numbers.
[[nodiscard]] std::unique_ptr<EmulatedLink> make_link(const Profile& profile, Direction direction,
                                                      std::uint64_t seed);

// One line per direction, for tools and logs.
[[nodiscard]] std::string describe(const DirectionConfig& config);
// A multi-line human-readable report of the statistics.
[[nodiscard]] std::string format_stats(const EmuStats& stats);

}  // namespace ndm::emu

#pragma GCC visibility pop
