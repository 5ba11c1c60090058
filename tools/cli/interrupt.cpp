#include "tools/cli/interrupt.hpp"

#include <algorithm>
#include <csignal>

namespace ndm::tools {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }
}  // namespace

void catch_interrupts() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // no SA_RESTART: epoll_wait / io_uring_enter return EINTR
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

void throw_if_interrupted() {
    if (interrupted()) throw Interrupted();
}

bool run_until(Endpoint& ep, const std::function<bool()>& pred, Duration timeout) {
    const Instant end = steady_now() + timeout;
    for (;;) {
        throw_if_interrupted();
        const Instant now = steady_now();
        if (now >= end) return pred();
        if (ep.run_until(pred, std::min<Duration>(end - now, std::chrono::milliseconds(100)))) return true;
    }
}

}  // namespace ndm::tools
