// Time in ndm is a parameter, never read by the protocol core: callers pass an
// Instant in and the core answers with the Instant it next wants to be woken.
// The same code runs on a real clock (src/io) and in virtual time (src/sim).
#pragma once

#include <chrono>
#include <cstdint>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

using Duration = std::chrono::nanoseconds;

// A clock tag with no now(): only the drivers at the edges know what time it is.
struct Clock {
    using rep = std::int64_t;
    using period = std::nano;
    using duration = Duration;
    using time_point = std::chrono::time_point<Clock, Duration>;
    static constexpr bool is_steady = true;
};

using Instant = Clock::time_point;

inline constexpr Instant kNever = Instant::max();

// The real clock (CLOCK_MONOTONIC), read only by the drivers at the edges:
// the Endpoint, its I/O backends and the tools. The one place it is read is
// src/util/clock.cpp.
Instant steady_now();

// Seconds as a double, for reports and rate arithmetic.
constexpr double to_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
constexpr Duration from_seconds(double s) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace ndm

#pragma GCC visibility pop
