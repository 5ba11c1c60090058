// Controllers sharing one bottleneck at the same time in virtual time
// (ndm-compare --compete): per-flow goodput over time, Jain's fairness index
// and the bottleneck's queueing delay and drops.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ndm/cc.hpp"
#include "ndm/experiment.hpp"

namespace ndm::experiment {

double jain_index(const std::vector<double>& x) {
    double sum = 0, sq = 0;
    for (double v : x) {
        sum += v;
        sq += v * v;
    }
    if (x.empty() || sq <= 0) return 1.0;
    return sum * sum / (static_cast<double>(x.size()) * sq);
}

CompeteRun run_compete(const CompeteSpec& spec, std::uint64_t seed) {
    if (spec.controllers.empty() || spec.controllers.size() > 255)
        throw std::invalid_argument("between 1 and 255 controllers compete, not " +
                                    std::to_string(spec.controllers.size()));
    if (spec.stagger_s * static_cast<double>(spec.controllers.size() - 1) >= spec.seconds)
        throw std::invalid_argument(fmt::format("--stagger {} s starts the last flow after the {} s run ends",
                                                spec.stagger_s, spec.seconds));
    const emu::Profile profile = emu::parse_profile(spec.profile);
    sim::SharedPathSpec s;
    std::shared_ptr<emu::EmulatedLink> bottleneck;
    s.bottleneck = [&] {
        bottleneck = emu::make_link(profile, emu::Direction::up, seed);
        return std::make_unique<emu::LinkRef>(bottleneck);
    };
    // Each flow's ACK path draws its own impairments.
    std::uint64_t returns = 0;
    s.return_path = [&] { return emu::make_link(profile, emu::Direction::down, seed * 1000 + returns++); };
    for (std::size_t i = 0; i < spec.controllers.size(); ++i) {
        const cc::Entry e = cc::parse_entry(spec.controllers[i]);
        cc::Params p;
        p.max_datagram_size = spec.packet_size;
        (void)cc::make(e.name, p, e.options);  // a bad name or option fails before anything runs
        sim::FlowSpec f;
        f.client.cc = e.name;
        f.client.cc_options = e.options;
        f.client.max_datagram_size = f.server.max_datagram_size = spec.packet_size;
        f.client.idle_timeout = f.server.idle_timeout = from_seconds(spec.idle_timeout_s);
        f.client.loss_detection = spec.loss_detection;
        f.client.seed = seed * 100 + 2 * i + 1;
        f.server.seed = seed * 100 + 2 * i + 2;
        f.start = from_seconds(spec.stagger_s * static_cast<double>(i));
        f.seed = seed + i;
        s.flows.push_back(f);
    }
    s.send_until = from_seconds(spec.seconds);
    s.interval = from_seconds(spec.interval_s);
    s.deadline = from_seconds(spec.seconds + std::max(60.0, 2 * spec.idle_timeout_s));
    const sim::SharedPathResult r = sim::run_shared_path(s);

    CompeteRun run;
    run.seed = seed;
    run.interval_s = spec.interval_s;
    const double half = spec.seconds / 2;
    std::vector<double> last_half;
    for (std::size_t i = 0; i < r.flows.size(); ++i) {
        const sim::TransferResult& t = r.flows[i];
        CompeteFlow f;
        f.controller = spec.controllers[i];
        f.start_s = spec.stagger_s * static_cast<double>(i);
        double bytes = 0, half_bytes = 0;
        for (const auto& smp : t.samples) {
            const double b = to_seconds(smp.begin), e = to_seconds(smp.end);
            if (b >= spec.seconds - 1e-9) break;  // after sending stopped: draining only
            f.interval_bps.push_back(e > b ? static_cast<double>(smp.bytes) * 8 / (e - b) : 0);
            bytes += static_cast<double>(smp.bytes);
            if (b >= half - 1e-9) half_bytes += static_cast<double>(smp.bytes);
        }
        const double active = spec.seconds - f.start_s;
        f.goodput_bps = active > 0 ? bytes * 8 / active : 0;
        f.last_half_bps = half_bytes * 8 / (spec.seconds - half);
        f.retransmits = t.client_stats.packets_retransmitted;
        f.byte_exact = t.completed && t.hash_match;
        f.error = t.completed ? (t.hash_match ? "" : "received data differs from what was sent") : t.failure;
        last_half.push_back(f.last_half_bps);
        run.flows.push_back(std::move(f));
    }
    run.jain_last_half = jain_index(last_half);
    if (bottleneck) run.path = path_metrics(bottleneck->emu_stats());
    return run;
}

}  // namespace ndm::experiment
