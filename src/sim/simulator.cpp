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

// The datagram being sealed and the one being opened: one buffer each per
// thread, not per simulator. Nothing keeps them past a call (poll_datagram's
// bytes go into the link at once, on_datagram keeps no reference), and with
// many flows on a thread (run_shared_path) buffers of their own were cold at
// each flow's next packet: 100 flows' buffers missed the cache twice a packet.
std::vector<std::uint8_t>& tx_scratch() {
    thread_local std::vector<std::uint8_t> buffer(kMaxDatagramSize);
    return buffer;
}
// Links deliver by swapping their buffer with this one, so its storage
// rotates through theirs, and what it hands a link was just read (hot). One
// per direction: a return link keeps what it is handed for that flow's next
// ACK, which left a small ACK's cold buffer for the next full datagram.
Datagram& rx_scratch(int side) {
    thread_local Datagram buffers[2];
    return buffers[side];
}
}  // namespace

Simulator::Simulator(std::unique_ptr<Link> client_to_server, std::unique_ptr<Link> server_to_client,
                     Instant start)
    : links_{std::move(client_to_server), std::move(server_to_client)},
      now_(start) {
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
    if (timer_known_[side]) return timer_[side];
    const Connection* c = side == kClient ? client_.get() : server_.get();
    const Instant t = c == nullptr ? kNever : c->next_timeout();
    timer_[side] = t == kNever ? kNever : std::max(t, timer_floor_[side]);
    timer_known_[side] = true;
    return timer_[side];
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
    timer_known_[side] = false;  // sending moves it, and so may what the caller did before
    Connection* c = side == kClient ? client_.get() : server_.get();
    if (c == nullptr) return;
    Link& link = *links_[side == kClient ? 0 : 1];
    Ecn ecn = Ecn::not_ect;
    std::vector<std::uint8_t>& tx = tx_scratch();
    while (const std::size_t n = c->poll_datagram(tx, now_, ecn)) link.send({{tx.data(), n}, ecn}, now_);
}

void Simulator::flush() { flush(kClientSide | kServerSide); }

void Simulator::flush(unsigned sides) {
    if (sides & kClientSide) drain(kClient);
    if (sides & kServerSide) drain(kServer);
}

void Simulator::fire_timer(int side) {
    Connection& c = side == kClient ? *client_ : *server_;
    c.on_timeout(now_);
    drain(side);
    timer_floor_[side] = now_ + kTick;
    timer_known_[side] = false;
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
    process(next);
    return true;
}

unsigned Simulator::advance() {
    const Next next = next_event();
    return next.at == kNever ? 0 : process(next);
}

unsigned Simulator::process(const Next& next) {
    if (next.at > now_) {
        now_ = next.at;
        steps_at_instant_ = 0;
    } else if (++steps_at_instant_ >= kMaxStepsAtOneInstant) {
        throw std::logic_error("Simulator: " + std::to_string(kMaxStepsAtOneInstant) +
                               " events at one instant; virtual time does not advance");
    }
    ++steps_;

    switch (next.kind) {
        case EventKind::to_server: {
            Datagram& rx = rx_scratch(kServer);
            if (!links_[0]->deliver(now_, rx)) return 0;
            if (!server_) {
                server_ = Connection::accept(server_config_, rx.bytes, now_, rx.ecn);
                if (!server_) {
                    ++rejected_;
                    spdlog::debug("sim: t={} ns: accept() rejected a {}-byte datagram",
                                  now_.time_since_epoch().count(), rx.bytes.size());
                    return 0;
                }
            } else {
                server_->on_datagram(rx.bytes, now_, rx.ecn);
            }
            drain(kServer);
            return kServerSide;
        }
        case EventKind::to_client: {
            Datagram& rx = rx_scratch(kClient);
            if (!links_[1]->deliver(now_, rx)) return 0;
            client_->on_datagram(rx.bytes, now_, rx.ecn);
            drain(kClient);
            return kClientSide;
        }
        case EventKind::client_timer:
            fire_timer(kClient);
            return kClientSide;
        case EventKind::server_timer:
            fire_timer(kServer);
            return kServerSide;
    }
    return 0;
}

void Simulator::run_until(Instant t) {
    // Written to through a kept reference since the last step? Read afresh.
    timer_known_[kClient] = timer_known_[kServer] = false;
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
