// The emulator as the tools use it: a Link that forwards to an emulator
// link shared with the caller, so the caller can still read the emulator's
// statistics after the simulator or endpoint that drove it is gone, and the
// path metrics the reports print from those statistics.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "common/report.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/sim.hpp"

namespace ndm::tools {

class EmuLinkRef final : public Link {
public:
    explicit EmuLinkRef(std::shared_ptr<emu::EmulatedLink> link) : link_(std::move(link)) {}
    void send(std::span<const std::uint8_t> datagram, Instant now) override { link_->send(datagram, now); }
    void send(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) override {
        link_->send(datagram, now, ecn);
    }
    [[nodiscard]] Instant next_delivery() const override { return link_->next_delivery(); }
    bool deliver(Instant now, std::vector<std::uint8_t>& out) override { return link_->deliver(now, out); }
    bool deliver(Instant now, std::vector<std::uint8_t>& out, Ecn& ecn) override {
        return link_->deliver(now, out, ecn);
    }
    [[nodiscard]] LinkStats stats() const override { return link_->stats(); }

private:
    std::shared_ptr<emu::EmulatedLink> link_;
};

// One emulated path per direction for all the connections an endpoint makes
// or accepts: the connections of one test share the bottleneck (its queue,
// rate or trace and random streams), as they would on a real network, rather
// than each getting its own copy of it. `egress` is the direction this
// endpoint's sends take: up for a client, down for a server.
struct SharedEmuPath {
    std::shared_ptr<emu::SharedLink> egress, ingress;
};
inline SharedEmuPath share_emulated_path(EndpointConfig& cfg, const emu::Profile& profile, std::uint64_t seed,
                                         emu::Direction egress = emu::Direction::up) {
    const emu::Direction ingress = egress == emu::Direction::up ? emu::Direction::down : emu::Direction::up;
    SharedEmuPath p{std::make_shared<emu::SharedLink>(emu::make_link(profile, egress, seed)),
                    std::make_shared<emu::SharedLink>(emu::make_link(profile, ingress, seed))};
    cfg.egress_link = [l = p.egress] { return l->port(); };
    cfg.ingress_link = [l = p.ingress] { return l->port(); };
    return p;
}

// Queue overflow and AQM drops are congestion; random, burst and trace-outage
// drops are not.
inline PathMetrics path_metrics(const emu::EmuStats& s) {
    auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    PathMetrics m;
    m.measured = true;
    m.queue_delay_p95_ms = ms(s.queue_delay.quantile(0.95));
    m.one_way_delay_p95_ms = ms(s.one_way_delay.quantile(0.95));
    m.sent = s.sent;
    m.dropped_queue = s.drops(emu::DropReason::queue_overflow) + s.drops(emu::DropReason::aqm);
    m.dropped_other = s.total_dropped() - m.dropped_queue;
    m.ce_marked = s.total_marked();
    return m;
}

}  // namespace ndm::tools
