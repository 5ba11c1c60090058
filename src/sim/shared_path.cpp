// run_shared_path: several bulk flows over one shared bottleneck in virtual
// time. Each flow is an ordinary Simulator (client, server, two links) whose
// client → server link is a port onto one shared link; a global loop always
// steps the simulator with the earliest event, so the shared link sees its
// sends in time order, as the Link interface requires.
//
// Finding that simulator costs O(log flows), not a scan (bench/results/2026-12-06-simulator-cost.md). Every
// started flow's next event is min(L, own), where L is the shared link's next
// delivery (its port reports it to every flow) and `own` the flow's other
// events: its queue's head, its return link, its two timers. `own` changes
// only when the flow itself runs or a datagram lands in its empty queue, so
// the flows' `own` times (and unstarted flows' start times) sit in a FlowHeap
// and L is asked once per event. When L comes first, the loop moves what the
// link delivers then into the queues of the flows it is for, which puts
// those flows in the heap at L; stepping some flow to pull it instead would
// cost a step of a flow with nothing to do for most deliveries (2.65
// against 1.57 events per packet at 100 flows).
#include <algorithm>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "ndm/sim.hpp"
#include "sim/bulk_flow.hpp"
#include "sim/flow_heap.hpp"
#include "sim/transfer_util.hpp"

namespace ndm::sim {

namespace {

// The tag naming a datagram's flow on the shared link: one byte up to 255
// flows (the byte accounting every run of up to 255 flows was recorded
// with), two bytes, big-endian, beyond.
constexpr std::size_t kMaxFlows = 65535;
constexpr std::size_t tag_width(std::size_t flows) { return flows <= 255 ? 1 : 2; }

// The shared link plus per-flow queues of what it delivered: a datagram is
// taken off the shared link at its due time by whichever flow's simulator
// asks first, and queued for the flow its leading tag names.
class Demux {
public:
    Demux(std::unique_ptr<Link> link, std::size_t flows)
        : link_(std::move(link)), queues_(flows), tag_(tag_width(flows)) {}

    void send(std::size_t flow, const DatagramView& datagram, Instant now) {
        tagged_.resize(datagram.bytes.size() + tag_);
        if (tag_ == 1) {
            tagged_[0] = static_cast<std::uint8_t>(flow);
        } else {
            tagged_[0] = static_cast<std::uint8_t>(flow >> 8);
            tagged_[1] = static_cast<std::uint8_t>(flow);
        }
        std::copy(datagram.bytes.begin(), datagram.bytes.end(), tagged_.begin() + static_cast<std::ptrdiff_t>(tag_));
        link_->send({tagged_, datagram.ecn}, now);
    }

    // The earliest time flow f may have a datagram: its own queue's head, or
    // the shared link's next delivery, which may turn out to be another
    // flow's (the simulator then finds nothing to deliver, harmlessly).
    // While own_next() asks, only the queue's head.
    [[nodiscard]] Instant next_for(std::size_t f) const {
        Instant t = own_only_ ? kNever : link_->next_delivery();
        if (!queues_[f].empty()) t = std::min(t, queues_[f].front().due);
        return t;
    }
    [[nodiscard]] Instant link_next() const { return link_->next_delivery(); }

    // The flow's next event apart from the shared link's next delivery.
    [[nodiscard]] Instant own_next(const Simulator& sim) {
        own_only_ = true;
        const Instant t = sim.next_event_time();
        own_only_ = false;
        return t;
    }

    // Flows whose queue went from empty to non-empty since the caller last cleared the list:
    // their own next event moved earlier.
    [[nodiscard]] std::vector<std::size_t>& woken() { return woken_; }

    bool deliver(std::size_t f, Instant now, Datagram& out) {
        pull(now);
        auto& q = queues_[f];
        if (q.empty() || q.front().due > now) return false;
        // The caller's old buffer goes to the spares: no allocation per datagram.
        out.bytes.swap(q.front().data);
        out.ecn = q.front().ecn;
        if (spares_.size() < kMaxSpares) spares_.push_back(std::move(q.front().data));
        q.pop_front();
        return true;
    }

    [[nodiscard]] LinkStats stats() const { return link_->stats(); }
    [[nodiscard]] std::uint64_t misrouted() const { return misrouted_; }
    // Queues what the link delivers by `now` for the flows it is for.
    void route(Instant now) { pull(now); }

private:
    struct Queued {
        Instant due;
        std::vector<std::uint8_t> data;
        Ecn ecn;
    };

    void pull(Instant now) {
        while (link_->next_delivery() <= now) {
            const Instant due = link_->next_delivery();
            if (!link_->deliver(now, rx_)) break;
            const std::size_t flow = tag_of(rx_.bytes);
            if (flow >= queues_.size()) {
                ++misrouted_;  // the tag itself was corrupted (or cut short)
                continue;
            }
            auto& q = queues_[flow];
            if (q.empty()) woken_.push_back(flow);
            std::vector<std::uint8_t> d;
            if (!spares_.empty()) {
                d = std::move(spares_.back());
                spares_.pop_back();
            }
            d.assign(rx_.bytes.begin() + static_cast<std::ptrdiff_t>(tag_), rx_.bytes.end());
            q.push_back({due, std::move(d), rx_.ecn});
        }
    }

    // The flow a delivered datagram's tag names, or SIZE_MAX if it is too short to have one.
    [[nodiscard]] std::size_t tag_of(const std::vector<std::uint8_t>& d) const {
        if (d.size() < tag_) return SIZE_MAX;
        return tag_ == 1 ? d[0] : (std::size_t{d[0]} << 8) | d[1];
    }

    std::unique_ptr<Link> link_;
    std::vector<std::deque<Queued>> queues_;
    std::size_t tag_;
    std::vector<std::uint8_t> tagged_;
    Datagram rx_;
    std::uint64_t misrouted_ = 0;
    std::vector<std::size_t> woken_;
    bool own_only_ = false;
    // Buffers of delivered datagrams, reused for the next ones queued.
    static constexpr std::size_t kMaxSpares = 1024;
    std::vector<std::vector<std::uint8_t>> spares_;
};

class Port final : public Link {
public:
    Port(Demux& demux, std::size_t flow) : demux_(demux), flow_(flow) {}
    void send(const DatagramView& datagram, Instant now) override { demux_.send(flow_, datagram, now); }
    [[nodiscard]] Instant next_delivery() const override { return demux_.next_for(flow_); }
    bool deliver(Instant now, Datagram& out) override { return demux_.deliver(flow_, now, out); }
    [[nodiscard]] LinkStats stats() const override { return demux_.stats(); }

private:
    Demux& demux_;
    std::size_t flow_;
};

struct Flow {
    std::unique_ptr<Simulator> sim;
    std::unique_ptr<BulkFlow> bulk;
    bool done = false;
    std::string failure;
};

// Each flow's closing numbers (a last partial sample, totals, how it ended)
// and the bottleneck's.
SharedPathResult results(std::vector<Flow>& flows, Demux& demux, std::uint64_t steps) {
    SharedPathResult out;
    for (Flow& f : flows) {
        TransferResult r;
        if (!f.sim) {
            r.failure = "never started (deadline before its start time)";
            out.flows.push_back(std::move(r));
            continue;
        }
        const Instant end = f.sim->now();
        if (end > f.bulk->last_sample()) f.bulk->take_sample(end);
        f.bulk->finish(end, r);
        if (r.failure.empty()) r.failure = f.failure;
        if (r.failure.empty() && !r.completed) r.failure = "deadline reached";
        fill_close_info(*f.sim, r);
        r.client_to_server = f.sim->client_to_server_stats();
        r.server_to_client = f.sim->server_to_client_stats();
        r.steps = f.sim->steps();
        out.flows.push_back(std::move(r));
    }
    out.bottleneck = demux.stats();
    out.misrouted = demux.misrouted();
    out.steps = steps;
    return out;
}

// The global loop's state: the flows, the heap of their own next events (or
// start times, before they start) and the started, unfinished flows.
class SharedRun {
public:
    explicit SharedRun(const SharedPathSpec& spec)
        : spec_(spec),
          demux_(build_link(spec.bottleneck, {}, "run_shared_path"), spec.flows.size()),
          flows_(spec.flows.size()),
          heap_(spec.flows.size()),
          deadline_(spec.start + spec.deadline),
          next_sample_(spec.start + spec.interval) {
        for (std::size_t i = 0; i < flows_.size(); ++i) heap_.set(i, spec.start + spec.flows[i].start);
    }

    SharedPathResult run() {
        while (true) {
            const Instant t = next_time();
            if (t == kNever) break;  // every flow done (or stalled)
            if (t > next_sample_ && next_sample_ <= deadline_) {
                sample();  // nothing happens before the sample time in any flow
                continue;
            }
            if (t > deadline_) break;
            if (active_ > 0 && demux_.link_next() == t) {
                demux_.route(t);  // its flows join the heap at t
                requeue_woken();
                continue;
            }
            const std::size_t who = heap_.top();  // ties: the lowest flow index
            if (!flows_[who].sim) {
                start_flow(who);
            } else {
                step_flow(who);
            }
        }
        return results(flows_, demux_, steps_);
    }

private:
    // The earliest of the flows' own next events and start times (the heap)
    // and, while any flow runs, the shared link's next delivery.
    [[nodiscard]] Instant next_time() const {
        Instant t = heap_.empty() ? kNever : heap_.top_time();
        if (active_ > 0) t = std::min(t, demux_.link_next());
        return t;
    }

    [[nodiscard]] bool active(std::size_t i) const { return flows_[i].sim && !flows_[i].done; }

    void start_flow(std::size_t i) {
        const FlowSpec& fs = spec_.flows[i];
        auto& f = flows_[i];
        f.sim = std::make_unique<Simulator>(std::make_unique<Port>(demux_, i),
                                            build_link(spec_.return_path, {}, "run_shared_path"),
                                            spec_.start + fs.start);
        f.sim->connect(fs.client, fs.server);
        f.bulk = std::make_unique<BulkFlow>(*f.sim, spec_.start, UINT64_MAX, spec_.start + spec_.send_until, fs.seed);
        f.bulk->pump();
        f.sim->flush();
        ++active_;
        heap_.set(i, demux_.own_next(*f.sim));
    }

    void step_flow(std::size_t i) {
        Flow& f = flows_[i];
        // Only the connections the event reached are pumped and flushed: with
        // 100 flows, the other one's state was out of the cache, and looking at
        // it found nothing to do (its own events come to it as timers).
        const unsigned sides = f.sim->advance();
        ++steps_;
        // At this flow's now, so the shared link's sends stay in time order.
        f.sim->flush(f.bulk->pump(sides));
        if (f.bulk->done()) f.done = true;
        if (auto why = f.bulk->failure(sides); !why.empty() && !f.done) {
            f.done = true;
            f.failure = std::move(why);
        }
        if (f.done) {
            --active_;
            heap_.erase(i);
        } else {
            heap_.set(i, demux_.own_next(*f.sim));
        }
        requeue_woken();
    }

    // Flows whose queue the step filled: their own next event moved.
    void requeue_woken() {
        auto& woken = demux_.woken();
        for (const std::size_t j : woken)
            if (active(j)) heap_.set(j, demux_.own_next(*flows_[j].sim));
        woken.clear();
    }

    void sample() {
        for (std::size_t i = 0; i < flows_.size(); ++i) {
            Flow& f = flows_[i];
            if (!f.sim) continue;
            // A finished flow is not stepped any more: its late sends
            // would reach the shared link out of time order.
            if (active(i)) {
                f.sim->run_until(next_sample_);
                heap_.set(i, demux_.own_next(*f.sim));
            }
            f.bulk->take_sample(next_sample_);
        }
        requeue_woken();
        next_sample_ += spec_.interval;
    }

    const SharedPathSpec& spec_;
    Demux demux_;
    std::vector<Flow> flows_;
    FlowHeap heap_;
    std::size_t active_ = 0;  // flows started and not done
    const Instant deadline_;
    Instant next_sample_;
    std::uint64_t steps_ = 0;
};

}  // namespace

SharedPathResult run_shared_path(const SharedPathSpec& spec) {
    if (spec.flows.empty() || spec.flows.size() > kMaxFlows)
        throw std::invalid_argument("run_shared_path: 1.." + std::to_string(kMaxFlows) + " flows, got " +
                                    std::to_string(spec.flows.size()));
    if (!spec.bottleneck || !spec.return_path)
        throw std::invalid_argument("run_shared_path: the bottleneck and return-path factories are required");
    if (spec.interval <= Duration::zero() || spec.deadline <= Duration::zero() || spec.send_until <= Duration::zero())
        throw std::invalid_argument("run_shared_path: interval, deadline and send_until must be positive");
    return SharedRun(spec).run();
}

}  // namespace ndm::sim
