// The bottleneck: a FIFO served at a fixed rate (netem `rate`, with per-packet
// overhead) or by a Mahimahi trace's delivery opportunities, behind a finite
// queue (droptail in packets and/or bytes, or CoDel).
//
// Queue bounds. With a trace the packet bound counts MTU-sized packets of the
// trace's opportunity size: a datagram of B bytes holds ceil(B / 1500) of the
// `queue=Npkt` places, as its IP fragments would in mm-link's droptail queue
// (Mahimahi's TUN has a 1500-byte MTU; the kernel fragments a 64 KB datagram
// into ~44 packets before mm-link sees it) and as it needs that many
// opportunities. A rate link counts datagrams, as netem does on the interface
// the datagram is sent on (the seed's loopback carries 64 KB unfragmented).
// The byte bound counts datagram bytes either way.
//
// Droptail decides everything at arrival: with a FIFO and a fixed service
// process a packet's service start and completion are known when it arrives,
// so no later event is needed. CoDel decides at dequeue, when later arrivals
// matter (its "bytes queued" test), so it is run lazily by pump().
//
// ECN marking (QueueConfig::ecn, RFC 3168 §5): RED decides at arrival on the
// backlog it finds (or its average, emu/red.hpp), the step when the packet's queueing delay is known (at
// arrival for droptail, at dequeue under CoDel), CoDel at dequeue. A marked
// packet is served with Served::mark set; a not-ECT packet RED picks is
// dropped (DropReason::aqm).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "emu/codel.hpp"
#include "emu/red.hpp"
#include "emu/streams.hpp"
#include "emu/delivery_trace.hpp"
#include "ndm/emu.hpp"

namespace ndm::emu {

class Bottleneck {
public:
    // `red` draws RED's marking decisions (its own stream, emu/streams.hpp).
    Bottleneck(const QueueConfig& queue, const TraceConfig& trace, Rng red);

    [[nodiscard]] bool enabled() const { return rate_ || trace_; }

    struct Served {
        std::uint32_t slot;
        Instant arrival;
        Instant start;       // service start: arrival + queueing delay
        Instant completion;  // leaves the bottleneck
        std::optional<MarkReason> mark;  // marked CE on the way (it was ECT)
    };
    struct Dropped {
        std::uint32_t slot;
        DropReason reason;
        Instant at;
    };

    // A packet of `bytes` with codepoint `ecn` arrives at `now` (non-decreasing).
    // Results are appended to served()/dropped(); the caller clears them after reading.
    void arrive(std::uint32_t slot, std::uint32_t bytes, Instant now, Ecn ecn = Ecn::not_ect);
    // Lazy disciplines: make every dequeue decision due at or before t.
    void pump(Instant t);
    // The next instant pump() has work (a pending dequeue), or kNever.
    [[nodiscard]] Instant next_event() const;
    [[nodiscard]] std::size_t backlog_packets() const { return in_service_.size() + waiting_.size(); }
    // Places in the packet bound the queued datagrams hold (see above).
    [[nodiscard]] std::size_t backlog_places() const { return in_service_places_ + waiting_places_; }
    // The places a datagram of `bytes` holds: 1 on a rate link, its MTU-sized packets on a trace.
    [[nodiscard]] std::uint32_t places(std::uint32_t bytes) const;

    std::vector<Served>& served() { return served_; }
    std::vector<Dropped>& dropped() { return dropped_; }

private:
    struct Waiting {
        std::uint32_t slot;
        std::uint32_t bytes;
        Instant arrival;
        Ecn ecn;
        std::optional<MarkReason> mark;
    };
    struct InService {
        Instant completion;
        std::uint32_t bytes;
        std::uint32_t places;
    };
    // CoDel's view of the waiting queue.
    struct WaitingQueue {
        Bottleneck& b;
        [[nodiscard]] bool empty() const { return b.waiting_.empty(); }
        Waiting pop();
        [[nodiscard]] std::size_t bytes() const { return b.waiting_bytes_; }
    };

    [[nodiscard]] Instant next_start(Instant ready) const;
    Served serve(std::uint32_t slot, std::uint32_t bytes, Instant arrival, Instant ready);
    void start_service(const Served& s, std::uint32_t bytes);
    void retire(Instant now);
    [[nodiscard]] bool in_outage(Instant now) const;
    // The transmission time of a 1500-byte packet: RED's idle decay unit.
    [[nodiscard]] Duration typical_transmission() const;
    // Whether the step marks a packet of codepoint `ecn` that waited `delay`.
    [[nodiscard]] bool step_marks(Ecn ecn, Duration delay) const;

    QueueConfig queue_;
    TraceConfig trace_cfg_;
    const Trace* trace_ = nullptr;
    bool rate_ = false;
    bool lazy_ = false;
    bool warned_oversize_ = false;
    std::unique_ptr<Codel> codel_;
    Rng red_rng_;
    RedMarker red_;
    Instant last_completion_{Instant::min()};  // when the queue last emptied, once it is empty

    // Rate service.
    Instant free_at_{Instant::min()};
    double carry_ns_ = 0;  // sub-ns remainder of back-to-back serialization
    // Trace service (Mahimahi link_queue: opportunities at or before an arrival are burned first).
    bool started_ = false;
    Instant epoch_{};
    std::uint64_t next_opp_ = 0;  // index of the first unused opportunity
    Instant last_opp_{Instant::min()};
    std::uint32_t leftover_ = 0;  // bytes left in the opportunity at last_opp_

    std::deque<InService> in_service_;  // served, completion in the future
    std::size_t in_service_bytes_ = 0;
    std::size_t in_service_places_ = 0;
    std::deque<Waiting> waiting_;       // lazy mode only
    std::size_t waiting_bytes_ = 0;
    std::size_t waiting_places_ = 0;
    std::vector<Served> served_;
    std::vector<Dropped> dropped_;
};

// Throws std::invalid_argument for a bad rate, queue bound or CoDel setting.
void validate(const QueueConfig& queue, const TraceConfig& trace);

}  // namespace ndm::emu
