// Bash completion for a tool, written from its own CLI11 option list so it
// cannot drift from the options the tool takes: `TOOL --bash-completion`
// prints it (parse_command_line answers it, for every tool), and the build
// installs it as share/bash-completion/completions/TOOL.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace ndm::tools {

// The hidden argument, alone on the command line, that prints the script.
inline constexpr std::string_view kBashCompletionFlag = "--bash-completion";

// A bash script defining the completion of `tool`: its flags and options
// (and, once a subcommand is on the line, that subcommand's), its
// subcommands, and file names after an option that takes a value.
std::string bash_completion(const CLI::App& app, std::string_view tool);

}  // namespace ndm::tools
