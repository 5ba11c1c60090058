// --receive-budget SIZE: EndpointConfig::receive_budget, the flow-control
// credit all of one side's connections share (each gets an equal part as
// its receive window cap). Both tools have it: ndm-recv receives in a
// normal test, ndm-send with -R.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/cli.hpp"
#include "common/units.hpp"
#include "ndm/endpoint.hpp"

namespace ndm::tools {

inline CLI::Option* add_receive_budget_option(CLI::App& app, std::string& value) {
    return app
        .add_option("--receive-budget", value,
                    "flow-control credit this side's connections share (K/M/G binary; 0 = no budget): each "
                    "connection's receive window, -w's included, is capped at an equal part, never below 64K. "
                    "Bounds what peers can make this side buffer, and keeps many connections (-P) from together "
                    "overrunning the socket's receive buffer, which also caps it (default: 64M)")
        ->check(size_in(0, std::uint64_t{1} << 40));
}

// Sets cfg.receive_budget from the option's value (unset: the default stays).
inline void apply_receive_budget(const std::string& value, EndpointConfig& cfg) {
    if (!value.empty()) cfg.receive_budget = parse_size(value);
}

}  // namespace ndm::tools
