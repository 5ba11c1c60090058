// EmulatedLink: the ndm::Link face of one direction's Pipeline, plus
// make_link() and the statistics' plumbing.
#include <stdexcept>

#include "emu/pipeline.hpp"
#include "ndm/emu.hpp"
#include "util/rng.hpp"

namespace ndm::emu {

EmulatedLink::EmulatedLink(const DirectionConfig& config, std::uint64_t seed)
    : pipeline_(std::make_unique<Pipeline>(config, seed)) {}

EmulatedLink::~EmulatedLink() = default;

void EmulatedLink::send(const DatagramView& datagram, Instant now) {
    pipeline_->send(datagram.bytes, now, 0, datagram.ecn);
}
Instant EmulatedLink::next_delivery() const { return pipeline_->next_delivery(); }
bool EmulatedLink::deliver(Instant now, Datagram& out) { return pipeline_->deliver(now, out.bytes, nullptr, &out.ecn); }
void EmulatedLink::send_tagged(const DatagramView& datagram, Instant now, std::uint64_t tag) {
    pipeline_->send(datagram.bytes, now, tag, datagram.ecn);
}
bool EmulatedLink::deliver_tagged(Instant now, Datagram& out, std::uint64_t& tag) {
    return pipeline_->deliver(now, out.bytes, &tag, &out.ecn);
}
const EmuStats& EmulatedLink::emu_stats() const { return pipeline_->stats(); }
std::size_t EmulatedLink::in_flight() const { return pipeline_->in_flight(); }
void EmulatedLink::set_observer(std::function<void(const PacketEvent&)> observer) {
    pipeline_->set_observer(std::move(observer));
}

LinkStats EmulatedLink::stats() const {
    const EmuStats& e = pipeline_->stats();
    LinkStats s;
    s.sent = e.sent;
    s.delivered = e.delivered;
    s.dropped_random = e.drops(DropReason::random) + e.drops(DropReason::burst);
    s.dropped_queue = e.drops(DropReason::queue_overflow) + e.drops(DropReason::aqm);
    s.dropped_outage = e.drops(DropReason::trace_outage) + e.drops(DropReason::blackhole);
    s.duplicated = e.duplicated;
    s.corrupted = e.corrupted;
    s.reordered = e.reordered;
    s.ce_marked = e.total_marked();
    return s;
}

std::unique_ptr<EmulatedLink> make_link(const Profile& profile, Direction direction, std::uint64_t seed) {
    // Mix the direction in, so one run seed gives both directions independent streams.
    const std::uint64_t dir_seed = util::splitmix64(seed ^ (direction == Direction::up ? 0x7570ull : 0x646f776eull));
    return std::make_unique<EmulatedLink>(profile[direction], dir_seed);
}

const char* to_string(DropReason r) {
    switch (r) {
        case DropReason::random: return "random";
        case DropReason::burst: return "burst";
        case DropReason::queue_overflow: return "queue_overflow";
        case DropReason::aqm: return "aqm";
        case DropReason::trace_outage: return "trace_outage";
        case DropReason::blackhole: return "blackhole";
    }
    return "?";
}

const char* to_string(MarkReason r) {
    switch (r) {
        case MarkReason::red: return "red";
        case MarkReason::codel: return "codel";
        case MarkReason::step: return "step";
    }
    return "?";
}

std::uint64_t EmuStats::total_marked() const {
    std::uint64_t n = 0;
    for (auto m : marked) n += m;
    return n;
}

std::uint64_t EmuStats::total_dropped() const {
    std::uint64_t n = 0;
    for (auto d : dropped) n += d;
    return n;
}

}  // namespace ndm::emu
