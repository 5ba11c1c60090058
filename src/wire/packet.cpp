#include "wire/packet.hpp"

#include <algorithm>

namespace ndm::wire {

ConnectionId ConnectionId::from(std::span<const std::uint8_t> b) {
    ConnectionId c;
    c.length = static_cast<std::uint8_t>(std::min(b.size(), kMaxCidLength));
    std::copy_n(b.begin(), c.length, c.bytes.begin());
    return c;
}

bool ConnectionId::operator==(const ConnectionId& o) const {
    return length == o.length && std::equal(bytes.begin(), bytes.begin() + length, o.bytes.begin());
}

// RFC 9000 §A.2: enough bits to represent twice the number of packets in
// flight, so the receiver's window (centred on its expectation) covers pn.
std::size_t packet_number_length(std::uint64_t pn, std::uint64_t largest_acked, bool has_acked) {
    const std::uint64_t num_unacked =
        has_acked ? (pn > largest_acked ? pn - largest_acked : 1) : pn + 1;
    std::size_t n = 1;
    // n bytes suffice when num_unacked < 2^(8n-1), i.e. 2*num_unacked < 2^(8n).
    while (n < 4 && num_unacked >= (std::uint64_t{1} << (8 * n - 1))) ++n;
    return n;  // capped at 4: senders must keep fewer than 2^31 packets unacknowledged
}

// RFC 9000 §A.3, with the signed comparisons of the pseudocode made safe for
// unsigned arithmetic.
std::uint64_t decode_packet_number(std::uint64_t largest_received, bool has_received,
                                   std::uint64_t truncated, std::size_t pn_length) {
    pn_length = std::clamp<std::size_t>(pn_length, 1, 4);
    const std::uint64_t expected = has_received ? largest_received + 1 : 0;
    const std::uint64_t win = std::uint64_t{1} << (8 * pn_length);
    const std::uint64_t hwin = win / 2;
    const std::uint64_t mask = win - 1;
    const std::uint64_t candidate = (expected & ~mask) | (truncated & mask);
    if (expected >= hwin && candidate <= expected - hwin && candidate < (std::uint64_t{1} << 62) - win)
        return candidate + win;
    if (candidate > expected + hwin && candidate >= win) return candidate - win;
    return candidate;
}

}  // namespace ndm::wire
