// run_shared_path: several bulk flows over one shared bottleneck in virtual
// time. Each flow is an ordinary Simulator (client, server, two links) whose
// client → server link is a port onto one shared link; a global loop always
// steps the simulator with the earliest event, so the shared link sees its
// sends in time order, as the Link interface requires.
#include <algorithm>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>

#include "ndm/sim.hpp"
#include "sim/bulk_flow.hpp"
#include "sim/transfer_util.hpp"

namespace ndm::sim {

namespace {

// The shared link plus per-flow queues of what it delivered: a datagram is
// taken off the shared link at its due time by whichever flow's simulator
// asks first, and queued for the flow its leading byte names.
class Demux {
public:
    Demux(std::unique_ptr<Link> link, std::size_t flows) : link_(std::move(link)), queues_(flows) {}

    void send(std::uint8_t flow, std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
        tagged_.resize(datagram.size() + 1);
        tagged_[0] = flow;
        std::copy(datagram.begin(), datagram.end(), tagged_.begin() + 1);
        link_->send(tagged_, now, ecn);
    }

    // The earliest time flow f may have a datagram: its own queue's head, or
    // the shared link's next delivery, which may turn out to be another
    // flow's (the simulator then finds nothing to deliver, harmlessly).
    [[nodiscard]] Instant next_for(std::size_t f) const {
        Instant t = link_->next_delivery();
        if (!queues_[f].empty()) t = std::min(t, queues_[f].front().due);
        return t;
    }

    bool deliver(std::size_t f, Instant now, std::vector<std::uint8_t>& out, Ecn& ecn) {
        pull(now);
        auto& q = queues_[f];
        if (q.empty() || q.front().due > now) return false;
        out = std::move(q.front().data);
        ecn = q.front().ecn;
        q.pop_front();
        return true;
    }

    [[nodiscard]] LinkStats stats() const { return link_->stats(); }
    [[nodiscard]] std::uint64_t misrouted() const { return misrouted_; }

private:
    struct Queued {
        Instant due;
        std::vector<std::uint8_t> data;
        Ecn ecn;
    };

    void pull(Instant now) {
        while (link_->next_delivery() <= now) {
            const Instant due = link_->next_delivery();
            Ecn ecn = Ecn::not_ect;
            if (!link_->deliver(now, rx_, ecn)) break;
            if (rx_.empty() || rx_[0] >= queues_.size()) {
                ++misrouted_;  // the flow byte itself was corrupted
                continue;
            }
            queues_[rx_[0]].push_back({due, std::vector<std::uint8_t>(rx_.begin() + 1, rx_.end()), ecn});
        }
    }

    std::unique_ptr<Link> link_;
    std::vector<std::deque<Queued>> queues_;
    std::vector<std::uint8_t> tagged_;
    std::vector<std::uint8_t> rx_;
    std::uint64_t misrouted_ = 0;
};

class Port final : public Link {
public:
    Port(Demux& demux, std::uint8_t flow) : demux_(demux), flow_(flow) {}
    void send(std::span<const std::uint8_t> datagram, Instant now) override { send(datagram, now, Ecn::not_ect); }
    void send(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) override {
        demux_.send(flow_, datagram, now, ecn);
    }
    [[nodiscard]] Instant next_delivery() const override { return demux_.next_for(flow_); }
    bool deliver(Instant now, std::vector<std::uint8_t>& out) override {
        Ecn ecn = Ecn::not_ect;
        return deliver(now, out, ecn);
    }
    bool deliver(Instant now, std::vector<std::uint8_t>& out, Ecn& ecn) override {
        return demux_.deliver(flow_, now, out, ecn);
    }
    [[nodiscard]] LinkStats stats() const override { return demux_.stats(); }

private:
    Demux& demux_;
    std::uint8_t flow_;
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

}  // namespace

SharedPathResult run_shared_path(const SharedPathSpec& spec) {
    if (spec.flows.empty() || spec.flows.size() > 255)
        throw std::invalid_argument("run_shared_path: 1..255 flows, got " + std::to_string(spec.flows.size()));
    if (!spec.bottleneck || !spec.return_path)
        throw std::invalid_argument("run_shared_path: the bottleneck and return-path factories are required");
    if (spec.interval <= Duration::zero() || spec.deadline <= Duration::zero() || spec.send_until <= Duration::zero())
        throw std::invalid_argument("run_shared_path: interval, deadline and send_until must be positive");

    Demux demux(build_link(spec.bottleneck, {}, "run_shared_path"), spec.flows.size());
    std::vector<Flow> flows(spec.flows.size());
    const Instant start = spec.start;
    const Instant deadline = start + spec.deadline;
    Instant next_sample = start + spec.interval;
    std::uint64_t steps = 0;

    auto start_flow = [&](std::size_t i) {
        const FlowSpec& fs = spec.flows[i];
        auto& f = flows[i];
        f.sim = std::make_unique<Simulator>(std::make_unique<Port>(demux, static_cast<std::uint8_t>(i)),
                                            build_link(spec.return_path, {}, "run_shared_path"), start + fs.start);
        f.sim->connect(fs.client, fs.server);
        f.bulk = std::make_unique<BulkFlow>(*f.sim, start, UINT64_MAX, start + spec.send_until, fs.seed);
        f.bulk->pump();
        f.sim->flush();
    };
    auto active = [](const Flow& f) { return f.sim && !f.done; };

    while (true) {
        // The earliest thing to happen: a flow starting, or a flow's event.
        Instant t = kNever;
        std::size_t who = 0;
        bool starting = false;
        for (std::size_t i = 0; i < flows.size(); ++i) {
            if (!flows[i].sim) {
                const Instant s = start + spec.flows[i].start;
                if (s < t) {
                    t = s;
                    who = i;
                    starting = true;
                }
            } else if (active(flows[i])) {
                const Instant e = flows[i].sim->next_event_time();
                if (e < t) {
                    t = e;
                    who = i;
                    starting = false;
                }
            }
        }
        if (t == kNever) break;  // every flow done (or stalled)
        if (t > next_sample && next_sample <= deadline) {
            // Nothing happens before the sample time in any flow.
            for (auto& f : flows) {
                if (!f.sim) continue;
                // A finished flow is not stepped any more: its late sends
                // would reach the shared link out of time order.
                if (active(f)) f.sim->run_until(next_sample);
                f.bulk->take_sample(next_sample);
            }
            next_sample += spec.interval;
            continue;
        }
        if (t > deadline) break;
        if (starting) {
            start_flow(who);
            continue;
        }
        Flow& f = flows[who];
        f.sim->step();
        ++steps;
        f.bulk->pump();
        f.sim->flush();  // at this flow's now, so the shared link's sends stay in time order
        if (f.bulk->done()) f.done = true;
        if (auto why = f.bulk->failure(); !why.empty() && !f.done) {
            f.done = true;
            f.failure = std::move(why);
        }
    }

    return results(flows, demux, steps);
}

}  // namespace ndm::sim
