// How every tool reads its command line: like any other bad input, a bad
// value is one line naming the flag and exit code 2 (--help still prints and
// exits 0). CLI11 2.1 alone lets through NaN and infinities for every floating
// option (CLI::Range compares false against NaN), "-1" for unsigned ones
// (strtoull wraps it) and out-of-range integers (it ignores ERANGE), so
// parse_command_line adds those checks to every numeric option first.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace ndm::tools {

// Adds to every numeric option of `app` and its subcommands (by CLI11's type
// name: FLOAT, INT, UINT) a check that the text is a finite decimal number
// that fits its type.
void check_numeric_options(CLI::App& app);

// check_numeric_options, then app.parse. Empty when the tool goes on, else
// the exit code: 0 after --help, 2 after printing "TOOL: --flag: problem (see --help)".
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::string_view tool);

int exit_on_parse_error(CLI::App& app, const CLI::ParseError& e, std::string_view tool);

// Prints "TOOL: what" and returns the exit code of the failure `e`: 2 for
// bad input (std::invalid_argument, which the library's parsers and loaders
// throw for a bad value or file, and tls::CredentialError for a certificate or
// key that cannot be used), 1 for everything else: network, peer, I/O.
int report_failure(std::string_view tool, const std::exception& e);

// iperf3's -T TITLE, --logfile FILE and --forceflush (common/output.hpp does them).
struct OutputFlags {
    std::string title;
    std::string logfile;
    bool force_flush = false;
};
void add_output_flags(CLI::App& app, OutputFlags& flags);

// iperf3's -4 / -6: `host` must be of that family ("localhost" becomes
// 127.0.0.1 or ::1) and an unset `bind` becomes that family's any-address.
// Throws std::invalid_argument naming the mismatch.
void apply_address_family(bool v4, bool v6, std::string& host, std::string& bind);

// --version: prints "TOOL VERSION (git COMMIT)" and exits 0, as iperf3's -v
// (-v too, where the tool does not use it for something else).
void add_version_flag(CLI::App& app, std::string_view tool, bool short_v = true);

// A byte count as parse_size reads it ("32M", "1.5G"), within [min, max].
CLI::Validator size_in(std::uint64_t min, std::uint64_t max);

}  // namespace ndm::tools
