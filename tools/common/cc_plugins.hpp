// --cc-plugin FILE.so, the same in every tool that runs a controller: loads
// each plugin (ndm/cc_plugin.hpp) before any controller name is checked, so
// its controllers are named, listed (--list-cc) and run like the built-in ones.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ndm/cc_plugin.hpp"

namespace ndm::tools {

inline void add_cc_plugin_option(CLI::App& app, std::vector<std::string>& paths) {
    app.add_option("--cc-plugin", paths,
                   "load congestion controllers from a plugin (a shared object built against ndm's headers, "
                   "ndm/cc_plugin.hpp); repeatable")
        ->type_name("FILE.so");
}

// Throws std::invalid_argument (a bad-input error) naming the file and the problem.
inline void load_cc_plugins(const std::vector<std::string>& paths) {
    for (const std::string& p : paths) (void)cc::load_plugin(p);
}

}  // namespace ndm::tools
