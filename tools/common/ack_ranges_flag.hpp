// --ack-ranges N, shared by the tools whose side sends ACKs: how many ACK
// ranges each ACK frame carries (ConnectionConfig::max_ack_ranges).
#pragma once

#include <cstddef>

#include <CLI/CLI.hpp>

#include "common/cli.hpp"

namespace ndm::tools {

inline CLI::Option* add_ack_ranges_option(CLI::App& app, std::size_t& ranges) {
    return app
        .add_option("--ack-ranges", ranges,
                    "ACK ranges per ACK frame this side sends when it receives (1..32, default 32, which reports "
                    "a loss burst in one ACK); 3 or 4 gives the sender the loss signal TCP's SACK option carries, "
                    "for comparisons with kernel TCP")
        ->type_name("N")
        ->capture_default_str()
        ->check(integer_in(1, 32));
}

}  // namespace ndm::tools
