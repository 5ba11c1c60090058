// --idle-timeout, shared by the tools that run connections. The idle timeout
// (RFC 9000 §10.1) is the only limit on how long a connection survives an
// outage: while the path is dead the sender keeps probing (its probe timeout
// backs off up to ConnectionConfig::max_pto_backoff) and the connection ends
// only when nothing has been heard from the peer for this long. Each side
// advertises its own; the smaller of the two applies (RFC 9000 §10.1).
#pragma once

#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "common/cli.hpp"

#include "ndm/time.hpp"

namespace ndm::tools {

// iperf3's own receive timeout (--rcv-timeout, 120 s by default): long enough
// for what kernel TCP rides out in a test (its RTO backs off to 120 s and it
// retries for ~15 min), including a Gilbert–Elliott burst that swallows 66 ACKs
// in a row, which at one ACK per probe period takes 45-60 s to cross
// (tests/tools/test_sim_outage.cpp); a vanished peer still ends a run within minutes.
inline constexpr double kDefaultIdleTimeoutSeconds = 120;
inline constexpr double kMinIdleTimeoutSeconds = 1;
inline constexpr double kMaxIdleTimeoutSeconds = 86400;

// Adds --idle-timeout SECONDS to `app`, storing into `seconds`. A value
// outside [1, 86400] is a parse error (parse_command_line: one line, exit 2).
inline CLI::Option* add_idle_timeout_option(CLI::App& app, double& seconds) {
    return app
        .add_option("--idle-timeout", seconds,
                    "seconds without any packet from the peer before a connection is given up (1..86400); the "
                    "smaller of both sides' values applies, and probes continue until then, so outages shorter "
                    "than this are survived")
        ->capture_default_str()
        ->check(number_in(kMinIdleTimeoutSeconds, kMaxIdleTimeoutSeconds, "seconds"));
}

inline Duration idle_timeout_duration(double seconds) { return from_seconds(seconds); }

}  // namespace ndm::tools
