#include "transport/far_bytes.hpp"

#include <iterator>

namespace ndm::transport {

namespace {
// A map node and a vector header, roughly: what a chunk costs beyond its bytes.
constexpr std::size_t kChunkOverhead = 64;

bool adjacent(std::uint64_t off, const std::vector<std::uint8_t>& left, std::uint64_t next_off) {
    return off + left.size() == next_off;
}
}  // namespace

void FarBytes::insert(std::uint64_t offset, std::span<const std::uint8_t> bytes) {
    if (bytes.empty()) return;
    auto it = chunks_.emplace_hint(chunks_.lower_bound(offset), offset,
                                   std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
    merge_around(it);
}

FarBytes::Map::iterator FarBytes::merge_around(Map::iterator it) {
    for (;;) {
        if (it != chunks_.begin()) {
            auto prev = std::prev(it);
            if (adjacent(prev->first, prev->second, it->first) && 2 * prev->second.size() >= it->second.size()) {
                prev->second.insert(prev->second.end(), it->second.begin(), it->second.end());
                chunks_.erase(it);
                it = prev;
                continue;
            }
        }
        auto next = std::next(it);
        if (next != chunks_.end() && adjacent(it->first, it->second, next->first) &&
            2 * it->second.size() >= next->second.size()) {
            it->second.insert(it->second.end(), next->second.begin(), next->second.end());
            chunks_.erase(next);
            continue;
        }
        return it;
    }
}

std::size_t FarBytes::memory() const {
    std::size_t n = 0;
    for (const auto& [off, bytes] : chunks_) n += bytes.capacity() + kChunkOverhead;
    return n;
}

}  // namespace ndm::transport
