#include "transport/stateless_reset_responder.hpp"

#include <algorithm>

namespace ndm::transport {

namespace {
constexpr std::size_t kMinResetSize = 5 + crypto::kStatelessResetTokenSize;  // RFC 9000 §10.3
}  // namespace

namespace {
crypto::StatelessResetKey make_key(const std::optional<std::array<std::uint8_t, crypto::StatelessResetKey::kSize>>& secret,
                                   crypto::RandomSource& random) {
    if (secret) return crypto::StatelessResetKey(std::span<const std::uint8_t, crypto::StatelessResetKey::kSize>(*secret));
    return crypto::StatelessResetKey(random);
}
}  // namespace

StatelessResetResponder::StatelessResetResponder(
    const std::optional<std::array<std::uint8_t, crypto::StatelessResetKey::kSize>>& secret)
    : key_(make_key(secret, random_)) {}

std::size_t StatelessResetResponder::answer(std::span<const std::uint8_t> datagram, std::size_t cid_length,
                                            Instant now, std::span<std::uint8_t> out) {
    // §10.3: only a short header can be answered; §10.3.3: the answer must be
    // smaller than what prompted it.
    if (datagram.empty() || (datagram[0] & 0x80) != 0 || datagram.size() <= kMinResetSize ||
        datagram.size() < 1 + cid_length || out.size() < kMaxResetSize)
        return 0;
    if (now - window_start_ >= std::chrono::seconds(1)) {
        window_start_ = now;
        sent_in_window_ = 0;
    }
    if (sent_in_window_ >= kMaxResetsPerSecond) return 0;
    ++sent_in_window_;
    const std::size_t size = std::min(datagram.size() - 1, kMaxResetSize);
    const auto reset = out.first(size);
    random_.fill(reset.first(size - crypto::kStatelessResetTokenSize));
    reset[0] = static_cast<std::uint8_t>(0x40 | (reset[0] & 0x3f));  // looks like a short header (§10.3)
    const auto token = key_.token_for(datagram.subspan(1, cid_length));
    std::copy(token.begin(), token.end(), reset.end() - static_cast<std::ptrdiff_t>(token.size()));
    return size;
}

}  // namespace ndm::transport
