// One direction's stage pipeline (see include/ndm/emu.hpp for the order):
// owns the packets in flight, runs the stages, tags every drop with its reason
// and keeps the statistics. EmulatedLink is its public face.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "emu/delay_model.hpp"
#include "emu/loss_model.hpp"
#include "emu/rate_queue.hpp"
#include "emu/streams.hpp"
#include "ndm/emu.hpp"

namespace ndm::emu {

class Pipeline {
public:
    Pipeline(const DirectionConfig& config, std::uint64_t seed);

    // `tag` travels with the datagram and its duplicate (EmulatedLink::send_tagged),
    // and so does its ECN codepoint, unless cleared (ecn_bleach) or marked CE.
    void send(std::span<const std::uint8_t> datagram, Instant now, std::uint64_t tag = 0, Ecn ecn = Ecn::not_ect);
    [[nodiscard]] Instant next_delivery() const;
    bool deliver(Instant now, std::vector<std::uint8_t>& out, std::uint64_t* tag = nullptr, Ecn* ecn = nullptr);

    [[nodiscard]] const EmuStats& stats() const { return stats_; }
    [[nodiscard]] std::size_t in_flight() const { return slots_.size() - free_.size(); }
    void set_observer(std::function<void(const PacketEvent&)> f) { observer_ = std::move(f); }

private:
    struct Slot {
        std::vector<std::uint8_t> data;
        std::uint64_t index = 0;
        std::uint64_t tag = 0;
        Instant sent{};
        Ecn ecn = Ecn::not_ect;
        bool duplicate = false;
        bool corrupted = false;
    };
    struct Due {
        Instant at;
        std::uint64_t seq;  // ties leave in scheduling order
        std::uint32_t slot;
        bool operator>(const Due& o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };

    std::uint32_t alloc(std::span<const std::uint8_t> data, std::uint64_t index, std::uint64_t tag, Instant sent,
                        bool duplicate, Ecn ecn);
    void release(std::uint32_t slot) { free_.push_back(slot); }
    void drop(std::uint32_t slot, DropReason reason, Instant at);
    void drop_unqueued(std::uint64_t index, bool duplicate, DropReason reason, Instant now);
    void schedule(std::uint32_t slot, Instant leaves_bottleneck);
    void drain_bottleneck();
    void emit(PacketEvent::Kind kind, const Slot& s, DropReason reason, Instant at) const;
    // Whether `t` falls in one of config_.outages (counted from epoch_).
    [[nodiscard]] bool in_outage(Instant t) const;

    DirectionConfig config_;
    LossModel loss_;
    Rng duplicate_;
    Rng corrupt_;
    Bottleneck bottleneck_;
    DelayModel delay_;

    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;
    std::vector<Due> heap_;  // min-heap on (at, seq)
    std::uint64_t next_index_ = 0;
    std::uint64_t next_seq_ = 0;
    std::uint64_t max_delivered_index_ = 0;
    bool any_delivered_ = false;
    Instant last_send_{Instant::min()};
    std::optional<Instant> epoch_;  // the first datagram's send time: outages count from it
    EmuStats stats_;
    std::function<void(const PacketEvent&)> observer_;
};

}  // namespace ndm::emu
