// The bytes of losses a controller forgave, so that the transport's loss
// counts "since packet P was sent" (RateSample::lost, PacketLost::lost: the
// connection's lost-bytes count now minus its value at P's send, draft-cheng-
// iccrg-delivery-rate-estimation) can be handed to the model without them.
// After each loss event it records the cumulative lost and forgiven bytes;
// a count since P's send locates P's send among those records by the lost
// count itself (it changes only at loss events, so the match is exact), and
// the forgiven bytes since then are taken off. Older than the ring: the
// oldest record is used, which takes off less, never more.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace ndm::cc::ndm {

class ForgivenLedger {
public:
    static constexpr std::size_t kRecords = 64;

    // Every lost in-flight packet, as the transport counts it.
    void on_lost(std::uint64_t bytes) noexcept { lost_ += bytes; }
    // A loss event ends; `forgiven` of its bytes were forgiven.
    void close_event(std::uint64_t forgiven) noexcept {
        forgiven_ += forgiven;
        rec_[head_] = {lost_, forgiven_};
        head_ = (head_ + 1) % kRecords;
        if (count_ < kRecords) ++count_;
    }

    // `since`: bytes lost from a packet's send until now, every loss counted.
    // Returns the congestive part.
    [[nodiscard]] std::uint64_t congestive(std::uint64_t since) const noexcept {
        if (since == 0 || forgiven_ == 0) return since;
        const std::uint64_t at_send = lost_ - std::min(since, lost_);
        // The forgiven total when the lost total was at_send: the latest
        // record with lost ≤ at_send (records ascend in both).
        std::uint64_t forgiven_then = 0;
        std::size_t lo = 0, hi = count_;  // logical indices, 0 = oldest
        while (lo < hi) {
            const std::size_t mid = (lo + hi) / 2;
            if (at(mid).lost <= at_send) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo > 0) {
            forgiven_then = at(lo - 1).forgiven;
        } else if (count_ == kRecords) {
            forgiven_then = at(0).forgiven;  // older than the ring: take off less
        }
        const std::uint64_t off = forgiven_ - forgiven_then;
        return since - std::min(since, off);
    }

    [[nodiscard]] std::uint64_t lost() const noexcept { return lost_; }
    [[nodiscard]] std::uint64_t forgiven() const noexcept { return forgiven_; }

private:
    struct Record {
        std::uint64_t lost = 0, forgiven = 0;
    };
    [[nodiscard]] const Record& at(std::size_t i) const noexcept {
        return rec_[(head_ + kRecords - count_ + i) % kRecords];
    }

    std::uint64_t lost_ = 0, forgiven_ = 0;
    std::array<Record, kRecords> rec_{};
    std::size_t head_ = 0, count_ = 0;
};

}  // namespace ndm::cc::ndm
