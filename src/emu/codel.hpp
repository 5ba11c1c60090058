// CoDel (RFC 8289 §5 pseudocode), the second queue discipline after droptail
// (Mahimahi's `--*-queue=codel`). It decides at dequeue, so the bottleneck
// runs it lazily at each service start (rate_queue.cpp). With ECN the drop
// callback may mark the packet instead (RFC 8289 §5: "mark ... instead of
// dropping"): the packet is served, and the control law advances as it does
// for a drop, as in Linux's codel_dequeue with `ecn`.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ndm/time.hpp"

namespace ndm::emu {

class Codel {
public:
    Codel(Duration target, Duration interval, std::size_t mtu = 1500)
        : target_(target), interval_(interval), mtu_(mtu) {}

    // Queue must provide: empty(), pop() -> Item with `.arrival` (Instant), and
    // bytes() (after the pop). drop(item) is called for each packet CoDel
    // drops and returns true if it was dropped, false if it was marked CE
    // instead (then it is served). Returns the packet to serve at `now`, if any.
    template <class Queue, class Drop>
    auto dequeue(Instant now, Queue& q, Drop&& drop) -> std::optional<decltype(q.pop())> {
        auto r = do_dequeue(now, q);
        if (!r.item) {
            dropping_ = false;
            return std::nullopt;
        }
        if (dropping_) {
            if (!r.ok_to_drop) {
                dropping_ = false;
            } else {
                while (now >= drop_next_ && dropping_) {
                    ++count_;
                    if (!drop(*r.item)) {
                        drop_next_ = control_law(drop_next_, count_);
                        return r.item;  // marked, not dropped: served now
                    }
                    r = do_dequeue(now, q);
                    if (!r.item) {
                        dropping_ = false;
                        return std::nullopt;
                    }
                    if (!r.ok_to_drop) {
                        dropping_ = false;
                    } else {
                        drop_next_ = control_law(drop_next_, count_);
                    }
                }
            }
        } else if (r.ok_to_drop) {
            if (drop(*r.item)) r = do_dequeue(now, q);  // a marked packet is served instead
            dropping_ = true;
            // Re-enter with the drop rate that was in force recently (RFC 8289 §5.6).
            const std::uint32_t delta = count_ - last_count_;
            count_ = 1;
            if (delta > 1 && now - drop_next_ < 16 * interval_) count_ = delta;
            drop_next_ = control_law(now, count_);
            last_count_ = count_;
            if (!r.item) {
                dropping_ = false;
                return std::nullopt;
            }
        }
        return r.item;
    }

    [[nodiscard]] bool dropping() const { return dropping_; }

private:
    template <class Queue>
    struct Result {
        std::optional<decltype(std::declval<Queue&>().pop())> item;
        bool ok_to_drop = false;
    };

    template <class Queue>
    Result<Queue> do_dequeue(Instant now, Queue& q) {
        Result<Queue> r;
        if (q.empty()) {
            first_above_ = Instant::min();
            return r;
        }
        r.item = q.pop();
        const Duration sojourn = now - r.item->arrival;
        if (sojourn < target_ || q.bytes() <= mtu_) {
            first_above_ = Instant::min();  // below target, or too little queued to matter
        } else if (first_above_ == Instant::min()) {
            first_above_ = now + interval_;
        } else if (now >= first_above_) {
            r.ok_to_drop = true;
        }
        return r;
    }

    [[nodiscard]] Instant control_law(Instant t, std::uint32_t count) const {
        return t + Duration(static_cast<Duration::rep>(static_cast<double>(interval_.count()) / std::sqrt(count)));
    }

    Duration target_;
    Duration interval_;
    std::size_t mtu_;
    Instant first_above_{Instant::min()};
    Instant drop_next_{};  // RFC 8289 starts it at 0
    std::uint32_t count_ = 0;
    std::uint32_t last_count_ = 0;
    bool dropping_ = false;
};

}  // namespace ndm::emu
