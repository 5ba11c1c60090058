// Simulator: the discrete-event loop. Virtual time jumps straight to the
// earliest of four event sources (two link deliveries, two connection timers);
// nothing here reads a clock, so runs are reproducible bit for bit.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "ndm/sim.hpp"

namespace ndm::sim {

namespace {
constexpr int kClient = 0;
constexpr int kServer = 1;
// A correct connection never asks, right after on_timeout(now), to be woken at
// or before now again; a few such answers are tolerated, this many in a row
// mean it would spin forever.
constexpr std::uint32_t kMaxStaleTimeouts = 1000;
// Events at one instant are bounded (queued datagrams, two timers); this many
// means two endpoints ping-pong at zero delay without end.
constexpr std::uint64_t kMaxStepsAtOneInstant = 10'000'000;
constexpr Duration kTick{1};
// 2026-01-01T00:00:00Z: a simulation reads no clock, certificates included.
const std::chrono::system_clock::time_point kSimulationWallTime{std::chrono::seconds(1767225600)};
}  // namespace

Simulator::Simulator(std::unique_ptr<Link> client_to_server, std::unique_ptr<Link> server_to_client,
                     Instant start)
    : links_{std::move(client_to_server), std::move(server_to_client)},
      now_(start),
      tx_buffer_(kMaxDatagramSize) {
    if (!links_[0] || !links_[1]) throw std::invalid_argument("Simulator: both links are required");
}

Simulator::~Simulator() = default;

namespace {
const tls::ServerCredentials& simulation_certificate() {
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"ndm-simulator"}, kSimulationWallTime, std::chrono::hours(24 * 365 * 50));
    return creds;
}
}  // namespace

void simulation_tls(ConnectionConfig& client, ConnectionConfig& server) {
    for (ConnectionConfig* c : {&client, &server}) {
        c->tls.fixed_sizes = true;
        if (c->tls.wall_time == std::chrono::system_clock::time_point{}) c->tls.wall_time = kSimulationWallTime;
    }
    if (!server.tls.certificate) {
        server.tls.certificate = simulation_certificate();
        if (!client.tls.trust) client.tls.trust = tls::ClientCredentials::pinned(simulation_certificate().fingerprint());
    }
}

Connection& Simulator::connect(const ConnectionConfig& client_config, const ConnectionConfig& server_config) {
    if (client_) throw std::logic_error("Simulator::connect called twice");
    ConnectionConfig client = client_config;
    server_config_ = server_config;
    simulation_tls(client, server_config_);
    client_ = Connection::connect(client, now_);
    drain(kClient);
    return *client_;
}

Instant Simulator::timer_of(int side) const {
    const Connection* c = side == kClient ? client_.get() : server_.get();
    if (c == nullptr) return kNever;
    const Instant t = c->next_timeout();
    return t == kNever ? kNever : std::max(t, timer_floor_[side]);
}

Simulator::Next Simulator::next_event() const {
    // Listed in the tie-break order; strict < keeps the first on equal times.
    const Next candidates[] = {
        {links_[0]->next_delivery(), EventKind::to_server},
        {links_[1]->next_delivery(), EventKind::to_client},
        {timer_of(kClient), EventKind::client_timer},
        {timer_of(kServer), EventKind::server_timer},
    };
    Next best = candidates[0];
    for (const Next& n : candidates)
        if (n.at < best.at) best = n;
    return best;
}

Instant Simulator::next_event_time() const { return next_event().at; }

void Simulator::drain(int side) {
    Connection* c = side == kClient ? client_.get() : server_.get();
    if (c == nullptr) return;
    Link& link = *links_[side == kClient ? 0 : 1];
    Ecn ecn = Ecn::not_ect;
    while (const std::size_t n = c->poll_datagram(tx_buffer_, now_, ecn)) link.send({tx_buffer_.data(), n}, now_, ecn);
}

void Simulator::flush() {
    drain(kClient);
    drain(kServer);
}

void Simulator::fire_timer(int side) {
    Connection& c = side == kClient ? *client_ : *server_;
    c.on_timeout(now_);
    drain(side);
    timer_floor_[side] = now_ + kTick;
    if (c.next_timeout() <= now_) {
        if (++stale_timeouts_[side] >= kMaxStaleTimeouts) {
            throw std::logic_error(std::string("Simulator: the ") + (side == kClient ? "client" : "server") +
                                   " connection keeps returning next_timeout() <= now after on_timeout (" +
                                   std::to_string(kMaxStaleTimeouts) + " times in a row at t=" +
                                   std::to_string(now_.time_since_epoch().count()) + " ns)");
        }
    } else {
        stale_timeouts_[side] = 0;
    }
}

bool Simulator::step() {
    flush();  // the application may have written since the last step
    const Next next = next_event();
    if (next.at == kNever) return false;
    if (next.at > now_) {
        now_ = next.at;
        steps_at_instant_ = 0;
    } else if (++steps_at_instant_ >= kMaxStepsAtOneInstant) {
        throw std::logic_error("Simulator: " + std::to_string(kMaxStepsAtOneInstant) +
                               " events at one instant; virtual time does not advance");
    }
    ++steps_;

    Ecn rx_ecn = Ecn::not_ect;
    switch (next.kind) {
        case EventKind::to_server:
            if (!links_[0]->deliver(now_, rx_buffer_, rx_ecn)) break;
            if (!server_) {
                server_ = Connection::accept(server_config_, rx_buffer_, now_, rx_ecn);
                if (!server_) {
                    ++rejected_;
                    spdlog::debug("sim: t={} ns: accept() rejected a {}-byte datagram",
                                  now_.time_since_epoch().count(), rx_buffer_.size());
                    break;
                }
            } else {
                server_->on_datagram(rx_buffer_, now_, rx_ecn);
            }
            drain(kServer);
            break;
        case EventKind::to_client:
            if (!links_[1]->deliver(now_, rx_buffer_, rx_ecn)) break;
            client_->on_datagram(rx_buffer_, now_, rx_ecn);
            drain(kClient);
            break;
        case EventKind::client_timer:
            fire_timer(kClient);
            break;
        case EventKind::server_timer:
            fire_timer(kServer);
            break;
    }
    return true;
}

void Simulator::run_until(Instant t) {
    while (next_event_time() <= t)
        if (!step()) break;
    if (t != kNever) now_ = std::max(now_, t);
}

bool Simulator::run_until(const std::function<bool()>& done, Instant deadline) {
    while (!done()) {
        flush();
        if (next_event_time() > deadline) {
            now_ = std::max(now_, deadline);
            return done();
        }
        if (!step()) return done();
    }
    return true;
}

}  // namespace ndm::sim
