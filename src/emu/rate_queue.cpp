#include "emu/rate_queue.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ndm::emu {

void validate(const QueueConfig& q, const TraceConfig& t) {
    if (!(q.rate_bps >= 0) || std::isinf(q.rate_bps)) throw std::invalid_argument("rate must be finite and >= 0");
    if (q.rate_bps > 0 && q.rate_bps < 1000) throw std::invalid_argument("rate must be at least 1kbit");
    if (q.rate_bps > 0 && t.trace) throw std::invalid_argument("rate and trace are exclusive (the trace is the rate)");
    if (q.overhead < -1400 || q.overhead > 65535) throw std::invalid_argument("overhead must be in [-1400, 65535] bytes");
    if (q.codel_target <= Duration::zero() || q.codel_interval <= Duration::zero())
        throw std::invalid_argument("codel target and interval must be > 0");
    if ((q.rate_bps > 0 || t.trace) && q.packets == 0 && q.bytes == 0)
        throw std::invalid_argument("a rate-limited queue needs a bound (queue=Npkt or queue=Nkb)");
    if (t.trace && t.opportunity_bytes == 0) throw std::invalid_argument("trace opportunity must be > 0 bytes");
    if (q.ecn != EcnMarking::none && q.rate_bps == 0 && !t.trace)
        throw std::invalid_argument("ecn marking needs a bottleneck to mark at (rate or trace)");
    if (q.ecn == EcnMarking::codel && q.discipline != QueueDiscipline::codel)
        throw std::invalid_argument("ecn=codel marks where CoDel drops: it needs aqm=codel");
    if (q.ecn == EcnMarking::red && !(q.red_min < q.red_max))
        throw std::invalid_argument(fmt::format("red-min ({}) must be below red-max ({})", q.red_min, q.red_max));
    if (!(q.red_max_p > 0 && q.red_max_p <= 1)) throw std::invalid_argument("red-p must be in (0, 1]");
    if (!(q.red_wq > 0 && q.red_wq <= 1)) throw std::invalid_argument("red-wq must be in (0, 1]");
    if (q.ecn_step <= Duration::zero()) throw std::invalid_argument("ecn-step must be > 0");
}

Bottleneck::Bottleneck(const QueueConfig& queue, const TraceConfig& trace, Rng red)
    : queue_((validate(queue, trace), queue)),
      trace_cfg_(trace),
      trace_(trace.trace.get()),
      rate_(queue.rate_bps > 0),
      red_rng_(red),
      red_(queue, typical_transmission()) {
    if (queue_.discipline == QueueDiscipline::codel) {
        lazy_ = true;
        codel_ = std::make_unique<Codel>(queue_.codel_target, queue_.codel_interval);
    }
}

Bottleneck::Waiting Bottleneck::WaitingQueue::pop() {
    Waiting w = b.waiting_.front();
    b.waiting_.pop_front();
    b.waiting_bytes_ -= w.bytes;
    b.waiting_places_ -= b.places(w.bytes);
    return w;
}

std::uint32_t Bottleneck::places(std::uint32_t bytes) const {
    if (trace_ == nullptr) return 1;
    const std::int64_t wire = std::max<std::int64_t>(0, std::int64_t{bytes} + queue_.overhead);
    const std::int64_t mtu = trace_cfg_.opportunity_bytes;
    return static_cast<std::uint32_t>(std::max<std::int64_t>(1, (wire + mtu - 1) / mtu));
}

Instant Bottleneck::next_start(Instant ready) const {
    if (rate_) return std::max(ready, free_at_);
    if (leftover_ > 0 && ready < last_opp_) return last_opp_;
    const std::uint64_t g = std::max(next_opp_, trace_->count_through(ready - epoch_));
    return epoch_ + trace_->time_of(g);
}

Bottleneck::Served Bottleneck::serve(std::uint32_t slot, std::uint32_t bytes, Instant arrival, Instant ready) {
    const std::int64_t wire = std::max<std::int64_t>(0, std::int64_t{bytes} + queue_.overhead);
    Served s{slot, arrival, {}, {}, std::nullopt};
    if (rate_) {
        s.start = std::max(ready, free_at_);
        if (ready >= free_at_) carry_ns_ = 0;  // idle transmitter: nothing to carry
        const double exact = static_cast<double>(wire) * 8e9 / queue_.rate_bps + carry_ns_;
        const double whole = std::floor(exact);
        carry_ns_ = exact - whole;
        s.completion = s.start + Duration(static_cast<Duration::rep>(whole));
        free_at_ = s.completion;
    } else {
        // Mahimahi byte accounting: a packet may share an opportunity with the one
        // before it if it was queued before that opportunity; unused bytes are lost.
        auto rem = static_cast<std::uint64_t>(wire);
        const std::uint32_t cap = trace_cfg_.opportunity_bytes;
        if (leftover_ > 0 && ready < last_opp_) {
            s.start = last_opp_;
            const std::uint64_t take = std::min<std::uint64_t>(leftover_, rem);
            leftover_ -= static_cast<std::uint32_t>(take);
            rem -= take;
            if (rem == 0) {
                s.completion = last_opp_;
                return s;
            }
        } else {
            leftover_ = 0;
            next_opp_ = std::max(next_opp_, trace_->count_through(ready - epoch_));
            s.start = epoch_ + trace_->time_of(next_opp_);
        }
        do {
            last_opp_ = epoch_ + trace_->time_of(next_opp_++);
            const std::uint64_t take = std::min<std::uint64_t>(cap, rem);
            leftover_ = static_cast<std::uint32_t>(cap - take);
            rem -= take;
        } while (rem > 0);
        s.completion = last_opp_;
    }
    return s;
}

void Bottleneck::start_service(const Served& s, std::uint32_t bytes) {
    const std::uint32_t p = places(bytes);
    in_service_.push_back({s.completion, bytes, p});
    last_completion_ = std::max(last_completion_, s.completion);
    in_service_bytes_ += bytes;
    in_service_places_ += p;
    served_.push_back(s);
}

void Bottleneck::retire(Instant now) {
    while (!in_service_.empty() && in_service_.front().completion <= now) {
        in_service_bytes_ -= in_service_.front().bytes;
        in_service_places_ -= in_service_.front().places;
        in_service_.pop_front();
    }
}

bool Bottleneck::in_outage(Instant now) const {
    if (trace_ == nullptr) return false;
    const Duration t = now - epoch_;
    return trace_->count_through(t) == trace_->count_through(t - trace_cfg_.outage_gap) &&
           t >= trace_cfg_.outage_gap;
}

Duration Bottleneck::typical_transmission() const {
    if (rate_) return from_seconds(std::max<std::int64_t>(1, 1500 + queue_.overhead) * 8.0 / queue_.rate_bps);
    if (trace_ && trace_->size() > 0) return trace_->period() / static_cast<std::int64_t>(trace_->size());
    return Duration::zero();
}

bool Bottleneck::step_marks(Ecn ecn, Duration delay) const {
    if (queue_.ecn != EcnMarking::step || delay <= queue_.ecn_step) return false;
    return queue_.ecn_step_ect1_only ? ecn == Ecn::ect1 : is_ect(ecn);
}

void Bottleneck::arrive(std::uint32_t slot, std::uint32_t bytes, Instant now, Ecn ecn) {
    if (!started_) {
        started_ = true;
        epoch_ = now;  // a trace starts with the first packet, as mm-link starts with its shell
    }
    if (lazy_) pump(now);  // decisions due at or before an arrival are made first (Mahimahi rationalize())
    retire(now);
    const std::size_t queued_bytes = in_service_bytes_ + waiting_bytes_;
    if (!warned_oversize_ && ((queue_.packets > 0 && places(bytes) > queue_.packets) ||
                              (queue_.bytes > 0 && bytes > queue_.bytes))) {
        warned_oversize_ = true;  // once: a silent black hole would be hard to diagnose
        spdlog::warn("emu: a {}-byte datagram{} never fits the queue bound ({} packets, {} bytes): all are dropped",
                     bytes, trace_ ? fmt::format(" ({} packets of {} bytes)", places(bytes), trace_cfg_.opportunity_bytes) : "",
                     queue_.packets, queue_.bytes);
    }
    if ((queue_.packets > 0 && backlog_places() + places(bytes) > queue_.packets) ||
        (queue_.bytes > 0 && queued_bytes + bytes > queue_.bytes)) {
        dropped_.push_back({slot, in_outage(now) ? DropReason::trace_outage : DropReason::queue_overflow, now});
        return;
    }
    std::optional<MarkReason> mark;
    if (queue_.ecn == EcnMarking::red && red_.picks(backlog_places(), now, last_completion_, red_rng_)) {
        if (!is_ect(ecn)) {
            dropped_.push_back({slot, DropReason::aqm, now});  // RFC 3168 §5: a not-ECT packet is dropped
            return;
        }
        mark = MarkReason::red;
    }
    if (!lazy_) {
        Served s = serve(slot, bytes, now, now);
        if (!mark && step_marks(ecn, s.start - now)) mark = MarkReason::step;
        s.mark = mark;
        start_service(s, bytes);
        return;
    }
    waiting_.push_back({slot, bytes, now, ecn, mark});
    waiting_bytes_ += bytes;
    waiting_places_ += places(bytes);
    pump(now);  // an idle server takes it at once
}

Instant Bottleneck::next_event() const {
    if (!lazy_ || waiting_.empty()) return kNever;
    return next_start(waiting_.front().arrival);
}

void Bottleneck::pump(Instant t) {
    if (!lazy_) return;
    while (!waiting_.empty()) {
        const Instant at = next_start(waiting_.front().arrival);
        if (at > t) break;
        retire(at);
        WaitingQueue q{*this};
        auto item = codel_->dequeue(at, q, [&](Waiting& w) {
            if (queue_.ecn == EcnMarking::codel && is_ect(w.ecn)) {
                if (!w.mark) w.mark = MarkReason::codel;
                return false;
            }
            dropped_.push_back({w.slot, DropReason::aqm, at});
            return true;
        });
        if (!item) continue;
        // Served from its arrival: next_start(arrival) is `at` (all waiting packets arrived by then).
        Served s = serve(item->slot, item->bytes, item->arrival, item->arrival);
        s.mark = item->mark;
        if (!s.mark && step_marks(item->ecn, s.start - item->arrival)) s.mark = MarkReason::step;
        start_service(s, item->bytes);
    }
}

}  // namespace ndm::emu
