// --loss-detection MODE, shared by the tools that run connections: which
// thresholds tell a lost packet from a reordered one (ndm/loss_detection.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli.hpp"

#include "ndm/loss_detection.hpp"

namespace ndm::tools {

// Adds --loss-detection to `app`, storing into `mode`; an unknown mode is a
// parse error (one line, exit 2).
inline CLI::Option* add_loss_detection_option(CLI::App& app, LossDetection& mode) {
    return app
        .add_option_function<std::string>(
            "--loss-detection",
            [&mode](const std::string& s) {
                if (auto m = parse_loss_detection(s)) mode = *m;
            },
            "how the sender tells loss from reordering: adaptive = RFC 9002's thresholds, widened when a loss "
            "proves spurious (default); rfc9002 = its fixed 3 packets and 9/8 RTT; rack = RFC 8985's reordering "
            "window as Linux TCP uses it (for comparisons with kernel TCP on reordering paths)")
        ->type_name("MODE")
        ->check(one_of({"adaptive", "rfc9002", "rack"}));
}

}  // namespace ndm::tools
