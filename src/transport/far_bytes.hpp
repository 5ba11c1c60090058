// Stream bytes received far beyond the receive ring's reach (RecvStream):
// disjoint chunks keyed by stream offset, memory proportional to the bytes
// held. Adjacent chunks merge whenever the left one is at least half the
// right one's size, so a range the peer fills a byte at a time, in any
// order, ends up in O(log n) chunks and each byte is copied O(log n) times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace ndm::transport {

class FarBytes {
public:
    [[nodiscard]] bool empty() const { return chunks_.empty(); }
    [[nodiscard]] std::size_t chunks() const { return chunks_.size(); }
    // Stores bytes at [offset, offset + size), which no chunk overlaps.
    void insert(std::uint64_t offset, std::span<const std::uint8_t> bytes);
    // Hands each chunk that ends at or before `reach`, lowest first, to
    // take(offset, bytes), and forgets it.
    template <typename Take>
    void take_below(std::uint64_t reach, Take&& take) {
        for (auto it = chunks_.begin(); it != chunks_.end();) {
            if (it->first + it->second.size() > reach) break;
            take(it->first, std::span<const std::uint8_t>(it->second));
            it = chunks_.erase(it);
        }
    }
    // Heap bytes held: the chunks' storage and a node each.
    [[nodiscard]] std::size_t memory() const;

private:
    using Map = std::map<std::uint64_t, std::vector<std::uint8_t>>;
    // Merges `it` with its neighbours while the merge rule holds; returns
    // the chunk that now holds its bytes.
    Map::iterator merge_around(Map::iterator it);
    Map chunks_;
};

}  // namespace ndm::transport
