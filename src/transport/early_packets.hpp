// Packets held until their keys can be used (RFC 9001 §5.7; §4.6.1 for 0-RTT
// that overtakes the ClientHello): a bounded queue of copies, each one
// packet from its first byte to the end of its datagram (a short header is
// always last; a long header's Length ends it within). A packet beyond the
// cap is refused; the caller counts it and the peer sends it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace ndm::transport {

class EarlyPackets {
public:
    explicit EarlyPackets(std::size_t cap) : cap_(cap) {}

    // False: full, not held.
    bool hold(std::span<const std::uint8_t> packet, bool zero_rtt) {
        if (held_.size() >= cap_) return false;
        held_.push_back({{packet.begin(), packet.end()}, zero_rtt});
        return true;
    }
    [[nodiscard]] bool empty() const { return held_.empty(); }
    [[nodiscard]] bool has(bool zero_rtt) const {
        for (const auto& p : held_)
            if (p.zero_rtt == zero_rtt) return true;
        return false;
    }
    // The held packets of one kind, oldest first, removed from the queue.
    std::vector<std::vector<std::uint8_t>> take(bool zero_rtt) {
        std::vector<std::vector<std::uint8_t>> out;
        for (auto it = held_.begin(); it != held_.end();) {
            if (it->zero_rtt == zero_rtt) {
                out.push_back(std::move(it->bytes));
                it = held_.erase(it);
            } else {
                ++it;
            }
        }
        return out;
    }
    // Drops those of one kind (their keys will never come); returns how many.
    std::size_t drop(bool zero_rtt) { return take(zero_rtt).size(); }

private:
    struct Packet {
        std::vector<std::uint8_t> bytes;
        bool zero_rtt = false;
    };
    std::size_t cap_;
    std::deque<Packet> held_;
};

}  // namespace ndm::transport
