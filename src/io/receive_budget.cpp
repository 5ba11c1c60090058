// The receive budget's ceiling, shares and AIMD (receive_budget.hpp).
#include "io/receive_budget.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "ndm/endpoint.hpp"

namespace ndm::io {

namespace {

// The AIMD's pace (adapt): credit given before a cut still arrives for about
// a window's time, so cuts are spaced; the floor keeps every share of a few
// connections above kMinReceiveShare.
constexpr Duration kBudgetCutInterval = std::chrono::milliseconds(20);
constexpr Duration kBudgetRaiseInterval = std::chrono::milliseconds(50);
constexpr std::uint64_t kMinReceiveBudget = 4u << 20;

// The configured receive budget, but no more than the socket's receive
// buffer: while the endpoint reads slower than its peers send, what they
// were given credit for waits in that buffer, and more credit than it holds
// is dropped by the kernel. 128 connections sharing 64 MiB over a socket of
// 16 MiB lost whole GSO batches every few hundred ms (3.2-6.0 Gbit/s, up to
// 27 000 retransmissions in 3 s); with the budget at the socket's size, none
// (bench/RESULTS.md, "Connections on one endpoint"). Raising
// socket_buffer_bytes raises the ceiling. An unprivileged socket may get only
// twice net.core.rmem_max (416 KiB by the kernel's default): the ceiling is
// then kMinReceiveBudget, as a window that small would cap one connection at
// 34 Mbit/s over 100 ms, and the budget's cuts handle the drops.
std::uint64_t budget_ceiling(std::uint64_t configured, std::uint64_t socket) {
    if (configured == 0 || socket == 0) return configured;
    return std::min(configured, std::max(socket, kMinReceiveBudget));
}

}  // namespace

ReceiveBudget::ReceiveBudget(std::uint64_t configured, std::uint64_t socket_bytes)
    : max_(budget_ceiling(configured, socket_bytes)), now_(max_) {}

std::uint64_t ReceiveBudget::share(std::size_t n) const {
    if (max_ == 0) return std::numeric_limits<std::uint64_t>::max();
    return std::max(now_ / std::max<std::size_t>(n, 1), kMinReceiveShare);
}

// The budget in use follows the socket: halved when the kernel still dropped
// receives for a full buffer (the buffer's bookkeeping takes more than the
// data when datagrams arrive one by one; credit given stays, so at most one
// cut per kBudgetCutInterval), down to half the ceiling or kMinReceiveBudget,
// and raised by an eighth of the ceiling per kBudgetRaiseInterval without
// drops, back to it (AIMD, as a congestion window; only flow control can slow
// the peers down for a queue that is ours, not the network's).
bool ReceiveBudget::adapt(std::uint64_t drops, Instant now) {
    if (max_ == 0) return false;
    if (drops != drops_seen_) {
        drops_seen_ = drops;
        if (now - changed_ >= kBudgetCutInterval) {
            now_ = std::max(now_ / 2, std::min(max_ / 2, kMinReceiveBudget));
            changed_ = now;
            return true;
        }
    } else if (now_ < max_ && now - changed_ >= kBudgetRaiseInterval) {
        now_ = std::min(max_, now_ + max_ / 8);
        changed_ = now;
    }
    return false;
}

}  // namespace ndm::io
