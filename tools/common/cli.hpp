// How every tool reports a bad command line: like any other bad input, one
// line naming the problem and exit code 2 (--help still prints and exits 0).
#pragma once

#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

namespace ndm::tools {

inline int exit_on_parse_error(CLI::App& app, const CLI::ParseError& e, std::string_view tool) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << tool << ": " << e.what() << " (see --help)\n";
    return 2;
}

}  // namespace ndm::tools
