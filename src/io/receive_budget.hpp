// The Endpoint's receive budget (EndpointConfig::receive_budget): the
// flow-control credit its connections give their peers in all, split into
// equal shares, capped at what the socket's receive buffer holds, and cut and
// grown back as the kernel's receive drops say (AIMD). A value the Endpoint
// feeds: it reads the socket's size, its drop count and the clock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::io {

class ReceiveBudget {
public:
    ReceiveBudget() = default;  // no budget: every share unbounded
    // `configured`: EndpointConfig::receive_budget (0: no budget);
    // `socket_bytes`: the socket's receive buffer as the kernel reports it (0: unknown).
    ReceiveBudget(std::uint64_t configured, std::uint64_t socket_bytes);

    [[nodiscard]] bool enabled() const { return max_ != 0; }
    // A connection's share of the budget, with `n` connections.
    [[nodiscard]] std::uint64_t share(std::size_t n) const;
    // Follows the kernel's receive drop count (a running total) at `now`;
    // true when the budget was cut.
    bool adapt(std::uint64_t drops, Instant now);
    // The budget in use now, and its ceiling (EndpointStats::receive_budget*).
    [[nodiscard]] std::uint64_t current() const { return now_; }
    [[nodiscard]] std::uint64_t ceiling() const { return max_; }

private:
    std::uint64_t max_ = 0, now_ = 0;
    std::uint64_t drops_seen_ = 0;  // the kernel's receive drops when last looked at
    Instant changed_{};
};

}  // namespace ndm::io
