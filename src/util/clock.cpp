#include <chrono>

#include "ndm/time.hpp"

namespace ndm {

// steady_clock is CLOCK_MONOTONIC on Linux: immune to wall-clock steps, so
// timers and rates stay right when NTP adjusts the time.
Instant steady_now() { return Instant(std::chrono::steady_clock::now().time_since_epoch()); }

}  // namespace ndm
