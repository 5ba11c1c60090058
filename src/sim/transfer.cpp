// run_transfer: one bulk transfer client → server in virtual time, checked
// byte for byte (a hash of what was written vs. what was read) and sampled
// every interval like an iperf3 report.
#include <stdexcept>
#include <string>

#include "ndm/sim.hpp"
#include "sim/bulk_flow.hpp"
#include "sim/transfer_util.hpp"

namespace ndm::sim {

std::unique_ptr<Link> build_link(const LinkFactory& factory, const SimpleLinkConfig& config, const char* who) {
    if (factory) {
        auto link = factory();
        if (!link) throw std::invalid_argument(std::string(who) + ": link factory returned null");
        return link;
    }
    return std::make_unique<SimpleLink>(config);
}

void fill_close_info(const Simulator& sim, TransferResult& r) {
    const Connection& client = *sim.client();
    r.client_closed = client.state() == ConnectionState::closed || client.state() == ConnectionState::draining ||
                      client.state() == ConnectionState::closing;
    r.client_close = client.close_info();
    if (const Connection* server = sim.server()) {
        r.server_closed = server->state() != ConnectionState::handshaking && server->state() != ConnectionState::established;
        r.server_close = server->close_info();
    }
}

TransferResult run_transfer(const TransferSpec& spec, const std::function<void(const IntervalSample&)>& on_sample) {
    if (spec.interval <= Duration::zero()) throw std::invalid_argument("run_transfer: interval must be positive");
    if (spec.deadline <= Duration::zero()) throw std::invalid_argument("run_transfer: deadline must be positive");

    Simulator sim(build_link(spec.client_to_server_factory, spec.client_to_server, "run_transfer"),
                  build_link(spec.server_to_client_factory, spec.server_to_client, "run_transfer"), spec.start);
    sim.connect(spec.client, spec.server);

    const Instant start = spec.start;
    const Instant deadline = start + spec.deadline;
    const bool by_time = spec.send_for > Duration::zero();
    BulkFlow flow(sim, start, by_time ? UINT64_MAX : spec.bytes, by_time ? start + spec.send_for : kNever, spec.seed);

    TransferResult r;
    Instant next_sample = start + spec.interval;
    auto sample = [&](Instant at) {
        const IntervalSample s = flow.take_sample(at);
        if (on_sample) on_sample(s);
    };

    flow.pump();
    sim.flush();
    // After each event only the connection it reached is pumped, flushed
    // and checked (Simulator::advance): the other one has nothing new.
    unsigned sides = Simulator::kClientSide | Simulator::kServerSide;
    while (!flow.done()) {
        if (r.failure = flow.failure(sides); !r.failure.empty()) break;
        const Instant t = sim.next_event_time();
        if (t == kNever) {
            r.failure = "stalled: no event scheduled";
            break;
        }
        // Events at exactly the boundary still belong to the closing interval.
        if (t > next_sample && next_sample <= deadline) {
            sim.run_until(next_sample);
            sample(next_sample);
            next_sample += spec.interval;
            continue;
        }
        if (t > deadline) {
            sim.run_until(deadline);
            r.failure = "deadline reached";
            break;
        }
        sides = sim.advance();
        sim.flush(flow.pump(sides));
    }

    const Instant end = sim.now();
    if (end > flow.last_sample()) sample(end);
    flow.finish(end, r);
    flow.close_gracefully();
    fill_close_info(sim, r);
    r.client_to_server = sim.client_to_server_stats();
    r.server_to_client = sim.server_to_client_stats();
    r.steps = sim.steps();
    return r;
}

}  // namespace ndm::sim
