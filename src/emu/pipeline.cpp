#include "emu/pipeline.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ndm::emu {

namespace {
void check_probability(double p, const char* what) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument(std::string(what) + " must be in [0, 1]");
}
const DirectionConfig& validated(const DirectionConfig& c) {
    check_probability(c.duplicate, "duplicate");
    check_probability(c.corrupt, "corrupt");
    if (c.outages.size() > kMaxOutages)
        throw std::invalid_argument("outage: at most " + std::to_string(kMaxOutages) + " phases");
    for (const OutageConfig& o : c.outages)
        if (o.start < Duration::zero() || o.duration <= Duration::zero())
            throw std::invalid_argument("outage: needs a duration > 0 and a start >= 0");
    return c;
}
}  // namespace

Pipeline::Pipeline(const DirectionConfig& config, std::uint64_t seed)
    : config_(validated(config)),
      loss_(config.loss, make_stream(seed, Stream::loss)),
      duplicate_(make_stream(seed, Stream::duplicate)),
      corrupt_(make_stream(seed, Stream::corrupt)),
      bottleneck_(config.queue, config.trace, make_stream(seed, Stream::red)),
      delay_(config.delay, make_stream(seed, Stream::jitter), make_stream(seed, Stream::reorder)) {}

std::uint32_t Pipeline::alloc(std::span<const std::uint8_t> data, std::uint64_t index, std::uint64_t tag, Instant sent,
                              bool duplicate, Ecn ecn) {
    std::uint32_t id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else {
        id = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    }
    Slot& s = slots_[id];
    s.data.assign(data.begin(), data.end());  // reuses the slot's capacity: no allocation in steady state
    s.index = index;
    s.tag = tag;
    s.sent = sent;
    s.duplicate = duplicate;
    s.ecn = ecn;
    s.corrupted = false;
    return id;
}

void Pipeline::emit(PacketEvent::Kind kind, const Slot& s, DropReason reason, Instant at) const {
    if (observer_) observer_({kind, s.index, s.duplicate, s.corrupted, reason, s.sent, at, s.ecn});
}

void Pipeline::drop(std::uint32_t slot, DropReason reason, Instant at) {
    ++stats_.dropped[static_cast<std::size_t>(reason)];
    emit(PacketEvent::Kind::dropped, slots_[slot], reason, at);
    release(slot);
}

void Pipeline::drop_unqueued(std::uint64_t index, bool duplicate, DropReason reason, Instant now) {
    ++stats_.dropped[static_cast<std::size_t>(reason)];
    if (observer_) observer_({PacketEvent::Kind::dropped, index, duplicate, false, reason, now, now, Ecn::not_ect});
}

bool Pipeline::in_outage(Instant t) const {
    if (!epoch_) return false;
    const Duration since = t - *epoch_;
    return std::any_of(config_.outages.begin(), config_.outages.end(),
                       [since](const OutageConfig& o) { return since >= o.start && since - o.start < o.duration; });
}

void Pipeline::schedule(std::uint32_t slot, Instant leaves_bottleneck) {
    const DelayModel::Decision d = delay_.schedule(leaves_bottleneck);
    if (in_outage(d.at)) {
        // It would arrive while the link is dark: lost in flight (decided now,
        // when its arrival time is known, so it is never reported as scheduled).
        drop(slot, DropReason::blackhole, d.at);
        return;
    }
    if (d.immediate) ++stats_.reorder_immediate;
    heap_.push_back({d.at, next_seq_++, slot});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
    emit(PacketEvent::Kind::scheduled, slots_[slot], DropReason::random, d.at);
}

void Pipeline::drain_bottleneck() {
    // Drops and departures are each in time order; departures feed the delay
    // stage in bottleneck order, which keeps its input times non-decreasing.
    for (const auto& d : bottleneck_.dropped()) drop(d.slot, d.reason, d.at);
    bottleneck_.dropped().clear();
    for (const auto& s : bottleneck_.served()) {
        stats_.queue_delay.add(s.start - s.arrival);
        if (s.mark) {
            slots_[s.slot].ecn = Ecn::ce;
            ++stats_.marked[static_cast<std::size_t>(*s.mark)];
        }
        schedule(s.slot, s.completion);
    }
    bottleneck_.served().clear();
}

void Pipeline::send(std::span<const std::uint8_t> datagram, Instant now, std::uint64_t tag, Ecn ecn) {
    now = std::max(now, last_send_);  // callers must not go back in time; stay sorted if they do
    last_send_ = now;
    ++stats_.sent;
    const std::uint64_t index = next_index_++;
    if (!epoch_) epoch_ = now;
    if (in_outage(now)) {
        // Before any random draw, so the loss, duplicate and corrupt streams
        // resume after the outage where they left off.
        drop_unqueued(index, false, DropReason::blackhole, now);
        return;
    }
    if (config_.ecn_bleach && ecn != Ecn::not_ect) {
        ecn = Ecn::not_ect;  // cleared before anything may mark it
        ++stats_.bleached;
    }
    // netem order (docs/emulator.md R1): duplicate first; the clone runs the
    // whole pipeline (netem re-enqueues it at the root), duplicates of
    // duplicates are not made.
    const int copies = duplicate_.chance(config_.duplicate) ? 2 : 1;
    if (copies == 2) ++stats_.duplicated;
    for (int c = 0; c < copies; ++c) {
        const bool dup = c == 1;
        if (const auto reason = loss_.next()) {
            drop_unqueued(index, dup, *reason, now);
            continue;
        }
        const std::uint32_t slot = alloc(datagram, index, tag, now, dup, ecn);
        Slot& s = slots_[slot];
        if (!s.data.empty() && corrupt_.chance(config_.corrupt)) {
            // One bit of one byte, like netem's corrupt (a detectable single-bit error).
            const std::uint64_t bit = corrupt_.below(s.data.size() * 8);
            s.data[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            s.corrupted = true;
            ++stats_.corrupted;
        }
        if (bottleneck_.enabled()) {
            bottleneck_.arrive(slot, static_cast<std::uint32_t>(s.data.size()), now, s.ecn);
            drain_bottleneck();
        } else {
            schedule(slot, now);
        }
    }
}

Instant Pipeline::next_delivery() const {
    const Instant t = heap_.empty() ? kNever : heap_.front().at;
    return std::min(t, bottleneck_.next_event());
}

bool Pipeline::deliver(Instant now, std::vector<std::uint8_t>& out, std::uint64_t* tag, Ecn* ecn) {
    if (bottleneck_.next_event() <= now) {
        bottleneck_.pump(now);
        drain_bottleneck();
    }
    if (heap_.empty() || heap_.front().at > now) return false;
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
    const Due due = heap_.back();
    heap_.pop_back();
    Slot& s = slots_[due.slot];
    out.swap(s.data);  // the caller's old buffer becomes the slot's, reused later
    if (tag != nullptr) *tag = s.tag;
    if (ecn != nullptr) *ecn = s.ecn;
    ++stats_.delivered;
    if (any_delivered_ && s.index < max_delivered_index_) ++stats_.reordered;
    if (!any_delivered_ || s.index > max_delivered_index_) max_delivered_index_ = s.index;
    any_delivered_ = true;
    stats_.one_way_delay.add(due.at - s.sent);
    emit(PacketEvent::Kind::delivered, s, DropReason::random, due.at);
    release(due.slot);
    return true;
}

}  // namespace ndm::emu
