// Ctrl-C and SIGTERM for the tools: a flag their event loops read, so that a
// tool stops as iperf3 does, closing its connections with a reason the peer
// is told, instead of dying and leaving the peer to its idle timeout (a
// listening ndm-recv takes no ICMP errors: docs/security.md).
#pragma once

#include <functional>
#include <stdexcept>

#include "ndm/endpoint.hpp"

namespace ndm::tools {

// From now on SIGINT and SIGTERM set the flag (once: a second one ends the
// process as usual, for a tool that does not stop). The handler does not
// restart system calls, so a waiting event loop wakes up at once.
void catch_interrupts();
[[nodiscard]] bool interrupted();

struct Interrupted : std::runtime_error {
    Interrupted() : std::runtime_error("interrupted") {}
};
// Throws Interrupted once a signal has arrived.
void throw_if_interrupted();
// Endpoint::run_until that also ends at a signal, by throwing Interrupted. It
// waits in slices of at most 100 ms: the epoll backend's wait goes on after
// a signal until its deadline.
bool run_until(Endpoint& ep, const std::function<bool()>& pred, Duration timeout);

}  // namespace ndm::tools
