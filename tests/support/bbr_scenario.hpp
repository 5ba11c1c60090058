// A scripted path and application for BBRv3's example cases
// (draft-ietf-ccwg-bbr-06 Appendix A) in deterministic virtual time: one
// real Connection pair in the Simulator, a data-direction bottleneck whose
// rate, loss, policer and delay a test may change at any ACK, an ACK
// direction that can batch deliveries (aggregation), and an application
// that writes in bulk, at a fixed rate, or not at all. After every ACK the
// sender's controller hands its model to the test's hook. The sender runs
// bbr, or ndm (the BBRv3 it embeds is the model the hook sees).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cc/bbr.hpp"
#include "cc/forwarding.hpp"
#include "cc/ndm/ndm_bbr.hpp"
#include "ndm/sim.hpp"
#include "util/rng.hpp"

namespace ndm::test::bbr {

using namespace std::chrono_literals;
using State = cc::Bbr::State;

// The data direction: FIFO serialization at `rate_bps` behind a droptail
// bound, then `delay`. A token-bucket policer (no queue of its own) drops
// what exceeds its bucket before the queue. Datagrams sent before
// `hold_until` take `hold_extra` longer and are not delivered before
// `release_at` (a link that stalls and then flushes), so later ones overtake them.
struct Bottleneck {
    double rate_bps = 10e6;
    std::uint64_t queue_bytes = 150'000;
    Duration delay = 20ms;
    double loss = 0;
    double policer_bps = 0;  // 0: none
    double policer_burst = 0;
    Instant hold_until{};
    Duration hold_extra{0};
    Instant release_at{};
};

// The ACK direction: `delay`, and with a positive `batch` every datagram
// waits for the next multiple of it (L2 slotting, as on cellular and Wi-Fi).
struct ReturnPath {
    Duration delay = 20ms;
    Duration batch{0};
};

namespace detail {

struct Queued {
    Instant at;
    std::uint64_t seq;
    std::vector<std::uint8_t> bytes;
    bool operator<(const Queued& o) const { return at != o.at ? at < o.at : seq < o.seq; }
};

// Datagrams ordered by delivery time (ties by send order).
class DeliveryQueue {
public:
    void push(Instant at, std::span<const std::uint8_t> d) {
        Queued q{at, seq_++, {d.begin(), d.end()}};
        items_.insert(std::upper_bound(items_.begin(), items_.end(), q), std::move(q));
    }
    [[nodiscard]] Instant next() const { return items_.empty() ? kNever : items_.front().at; }
    bool pop(Instant now, std::vector<std::uint8_t>& out) {
        if (items_.empty() || items_.front().at > now) return false;
        out = std::move(items_.front().bytes);
        items_.pop_front();
        return true;
    }

private:
    std::deque<Queued> items_;
    std::uint64_t seq_ = 0;
};

}  // namespace detail

// A Link whose datagrams wait in a DeliveryQueue until the time send() gave
// them. It does not model ECN: what it delivers is not-ECT.
class QueuedLink : public Link {
public:
    [[nodiscard]] Instant next_delivery() const override { return queue_.next(); }
    bool deliver(Instant now, Datagram& out) override {
        if (!queue_.pop(now, out.bytes)) return false;
        out.ecn = Ecn::not_ect;
        ++stats_.delivered;
        return true;
    }
    [[nodiscard]] LinkStats stats() const override { return stats_; }

protected:
    detail::DeliveryQueue queue_;
    LinkStats stats_;
};

class BottleneckLink final : public QueuedLink {
public:
    BottleneckLink(std::shared_ptr<Bottleneck> cfg, std::uint64_t seed) : cfg_(std::move(cfg)), rng_(seed) {}

    void send(const DatagramView& datagram, Instant now) override {
        const std::span<const std::uint8_t> d = datagram.bytes;
        ++stats_.sent;
        const Bottleneck& c = *cfg_;
        const double bytes = static_cast<double>(d.size());
        if (c.loss > 0 && uniform() < c.loss) {
            ++stats_.dropped_random;
            return;
        }
        if (c.policer_bps > 0 && !police(bytes, now)) {
            ++stats_.dropped_queue;
            return;
        }
        // Bytes still waiting to be serialized at `now`.
        const double backlog = busy_until_ > now ? to_seconds(busy_until_ - now) * c.rate_bps / 8 : 0;
        if (backlog + bytes > static_cast<double>(c.queue_bytes)) {
            ++stats_.dropped_queue;
            return;
        }
        const Instant start = std::max(now, busy_until_);
        busy_until_ = start + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(bytes * 8 / c.rate_bps));
        Instant at = busy_until_ + c.delay;
        if (now < c.hold_until) {
            at = std::max(at + c.hold_extra, c.release_at);
            ++stats_.reordered;
        }
        queue_.push(at, d);
    }

private:
    double uniform() { return static_cast<double>(util::splitmix64_next(rng_) >> 11) * 0x1.0p-53; }
    bool police(double bytes, Instant now) {
        const Bottleneck& c = *cfg_;
        if (!policer_started_) {
            tokens_ = c.policer_burst;
            policer_started_ = true;
        } else {
            tokens_ = std::min(c.policer_burst, tokens_ + to_seconds(now - last_fill_) * c.policer_bps / 8);
        }
        last_fill_ = now;
        if (tokens_ < bytes) return false;
        tokens_ -= bytes;
        return true;
    }

    std::shared_ptr<Bottleneck> cfg_;
    std::uint64_t rng_;
    Instant busy_until_{};
    bool policer_started_ = false;
    double tokens_ = 0;
    Instant last_fill_{};
};

class ReturnLink final : public QueuedLink {
public:
    explicit ReturnLink(std::shared_ptr<ReturnPath> cfg) : cfg_(std::move(cfg)) {}
    void send(const DatagramView& d, Instant now) override {
        ++stats_.sent;
        Instant at = now + cfg_->delay;
        if (const Duration b = cfg_->batch; b > Duration::zero()) {
            const auto slots = (at.time_since_epoch() + b - Duration{1}) / b;
            at = Instant{} + slots * b;
        }
        last_ = std::max(at, last_);  // a batch never reorders
        queue_.push(last_, d.bytes);
    }

private:
    std::shared_ptr<ReturnPath> cfg_;
    Instant last_{};
};

// What the hook sees after each ACK.
struct Tick {
    Instant now;
    const cc::Bbr& bbr;
    cc::Bbr::Model m;
    const cc::AckEvent& ack;
};

using AckHook = std::function<void(const Tick&)>;
using SendHook = std::function<void(const cc::Bbr&, const cc::PacketSent&)>;

// The sender's controller: a Bbr that calls the scenario's hooks after each
// ACK and each packet sent.
class Tap final : public cc::Forwarding {
public:
    Tap(std::unique_ptr<cc::Controller> inner, AckHook* ack, SendHook* sent)
        : Forwarding(std::move(inner)), ack_(ack), sent_(sent) {}
    void on_ack(const cc::AckEvent& ev) override {
        Forwarding::on_ack(ev);
        if (ack_ && *ack_) (*ack_)(Tick{ev.now, bbr(), bbr().model(), ev});
    }
    void on_packet_sent(const cc::PacketSent& p) override {
        Forwarding::on_packet_sent(p);
        if (sent_ && *sent_) (*sent_)(bbr(), p);
    }

private:
    [[nodiscard]] const cc::Bbr& bbr() const {
        if (const auto* n = dynamic_cast<const cc::ndm::NdmBbr*>(&inner())) return n->bbr();
        return static_cast<const cc::Bbr&>(inner());
    }
    AckHook* ack_;
    SendHook* sent_;
};

// One run: the application writes `app_rate_bps` (0: as fast as the
// connection takes it) except while `paused(now)` holds, for `duration`.
struct Scenario {
    std::shared_ptr<Bottleneck> path = std::make_shared<Bottleneck>();
    std::shared_ptr<ReturnPath> ret = std::make_shared<ReturnPath>();
    double app_rate_bps = 0;
    std::function<bool(Instant)> paused;
    // Unsent bytes the application keeps queued (0: two windows, as a socket buffer would).
    std::uint64_t send_buffer = 0;
    Duration duration = 10s;
    std::string cc_options;
    bool run_ndm = false;  // the sender runs ndm instead of bbr
    std::uint64_t seed = 1;
    std::size_t datagram = 1200;
    AckHook on_ack;  // may change path, ret, app_rate_bps, paused
    SendHook on_sent;

    // Each second of the run.
    struct Second {
        std::uint64_t delivered = 0;  // bytes the server read
        std::uint64_t sent = 0, dropped = 0;  // datagrams on the data path
    };
    struct Result {
        std::uint64_t delivered = 0;
        LinkStats data;
        ConnectionStats sender;
        std::vector<Second> seconds;
        // Goodput in Mbit/s over seconds [from, to) of the run.
        [[nodiscard]] double mbps(std::size_t from, std::size_t to) const {
            to = std::min(to, seconds.size());
            std::uint64_t b = 0;
            for (std::size_t i = from; i < to; ++i) b += seconds[i].delivered;
            return to > from ? static_cast<double>(b) * 8 / 1e6 / static_cast<double>(to - from) : 0;
        }
    };
    Result run();
};

namespace detail {

inline AckHook* g_ack = nullptr;
inline SendHook* g_sent = nullptr;

inline void register_tap() {
    cc::register_controller({"bbr-scenario", "bbr with per-ACK and per-send hooks (tests)",
                             [](const cc::Params& p, const cc::Options& o) {
                                 return std::make_unique<Tap>(std::make_unique<cc::Bbr>(p, o), g_ack, g_sent);
                             }});
    cc::register_controller({"ndm-scenario", "ndm with per-ACK and per-send hooks (tests)",
                             [](const cc::Params& p, const cc::Options& o) {
                                 return std::make_unique<Tap>(std::make_unique<cc::ndm::NdmBbr>(p, o), g_ack, g_sent);
                             }});
}

}  // namespace detail

inline Scenario::Result Scenario::run() {
    detail::register_tap();
    detail::g_ack = &on_ack;
    detail::g_sent = &on_sent;
    sim::Simulator sim(std::make_unique<BottleneckLink>(path, seed), std::make_unique<ReturnLink>(ret));
    ConnectionConfig client, server;
    client.cc = run_ndm ? "ndm-scenario" : "bbr-scenario";
    client.cc_options = cc_options;
    client.max_datagram_size = server.max_datagram_size = datagram;
    client.seed = seed;
    server.seed = seed + 1;
    Connection& c = sim.connect(client, server);
    const Instant end = sim.now() + duration;
    std::optional<StreamId> tx, rx;
    std::vector<std::uint8_t> buf(64 * 1024, 0x5a);
    double allowance = 0;  // bytes the application may still write at its rate
    std::uint64_t written = 0;
    Instant last = sim.now();
    Result r;
    const Instant start = sim.now();
    Instant next_second = start + 1s;
    std::uint64_t prev_delivered = 0, prev_sent = 0, prev_dropped = 0;
    auto close_second = [&] {
        const LinkStats l = sim.client_to_server_stats();
        const std::uint64_t dropped = l.dropped_queue + l.dropped_random;
        r.seconds.push_back({r.delivered - prev_delivered, l.sent - prev_sent, dropped - prev_dropped});
        prev_delivered = r.delivered;
        prev_sent = l.sent;
        prev_dropped = dropped;
    };
    while (sim.now() < end) {
        const Instant now = sim.now();
        if (now >= next_second) {
            close_second();
            next_second += 1s;
        }
        if (!tx && c.is_established()) tx = c.open_stream();
        const bool pause = paused && paused(now);
        // A rate-limited application writes once a millisecond what its rate
        // allows (writing a few bytes at every event would make tiny packets).
        const bool tick = now >= last + 1ms;
        if (app_rate_bps > 0 && tick) {
            allowance = std::min(allowance + to_seconds(now - last) * app_rate_bps / 8, 64e3);
            last = now;
        }
        if (tx && !pause && (app_rate_bps == 0 || tick)) {
            // Keep about two windows queued ahead of the network, as a socket
            // buffer would, so a change of the application's pace (or a
            // pause) reaches the wire within a round trip or two.
            const ConnectionStats st = c.stats(now);
            const std::uint64_t unsent = written - std::min(written, st.stream_bytes_sent);
            const std::uint64_t ahead = send_buffer > 0 ? send_buffer : std::max<std::uint64_t>(2 * st.cwnd, 16 * 1024);
            std::size_t want = std::min({buf.size(), c.stream_send_capacity(*tx),
                                         static_cast<std::size_t>(ahead - std::min(ahead, unsent))});
            if (app_rate_bps > 0) want = std::min(want, static_cast<std::size_t>(allowance));
            if (want > 0) {
                const std::size_t n = c.write(*tx, {buf.data(), want});
                written += n;
                if (app_rate_bps > 0) allowance = std::max(0.0, allowance - static_cast<double>(n));
            }
        }
        if (Connection* s = sim.server()) {
            while (auto ev = s->poll_event()) {
                if (const auto* o = std::get_if<event::StreamOpened>(&*ev)) rx = o->id;
                if (const auto* rd = std::get_if<event::StreamReadable>(&*ev)) rx = rd->id;
            }
            if (rx)
                while (const std::size_t n = s->read(*rx, buf)) r.delivered += n;
        }
        sim.flush();
        // Wake at least every millisecond so the application can write.
        sim.run_until(std::min(sim.next_event_time(), now + 1ms));
        if (c.is_closed()) break;
    }
    detail::g_ack = nullptr;
    detail::g_sent = nullptr;
    r.data = sim.client_to_server_stats();
    r.sender = c.stats(sim.now());
    return r;
}

}  // namespace ndm::test::bbr
