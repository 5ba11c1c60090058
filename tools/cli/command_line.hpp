// How every tool reads its command line: like any other bad input, a bad
// value is one line in ndm's words, naming the flag, the value and what is
// expected ("ndm-send: -t/--time 5s: expected seconds, a number from 0.1 to
// 86400"), and exit code 2 (--help still prints and exits 0). CLI11's own
// texts ("Value 5s not in range 0.100000 to 86400.000000", "Could not
// convert") never reach the user: the tools check values with the validators
// below, not CLI::Range or CLI::IsMember, and parse_command_line makes every
// validator's refusal that one line. CLI11 2.1 alone also lets through NaN and
// infinities for every floating option (CLI::Range compares false against
// NaN), "-1" for unsigned ones (strtoull wraps it) and out-of-range integers
// (it ignores ERANGE), so every numeric option is checked for those too.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace ndm::tools {

// Adds to every numeric option of `app` and its subcommands (by CLI11's type
// name: FLOAT, INT, UINT) a check that the text is a finite decimal number
// that fits its type, and makes every validator of every option refuse a
// value by throwing BadValue "FLAG VALUE: what was expected".
void check_numeric_options(CLI::App& app);

// A command-line value a validator refused; what() is the whole line after
// "TOOL: ".
class BadValue : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// check_numeric_options, then app.parse. Empty when the tool goes on, else
// the exit code: 0 after --help or --version, 2 after printing one line
// "TOOL: FLAG VALUE: expected ..." (a bad value) or "TOOL: problem (see
// --help)" (a missing, unknown or conflicting argument).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::string_view tool);

// The validators the tools use. Each refuses with the phrase "expected ...",
// which parse_command_line prefixes with the flag and the value.
//   number_in(0.1, 86400, "seconds"): "expected seconds, a number from 0.1 to 86400"
CLI::Validator number_in(double min, double max, std::string_view unit = {});
//   positive_number(1e6, "seconds"): "expected seconds, a number above 0 and at most 1000000"
CLI::Validator positive_number(double max, std::string_view unit = {});
//   integer_in(1, 128): "expected a whole number from 1 to 128"
CLI::Validator integer_in(std::uint64_t min, std::uint64_t max, std::string_view unit = {});
// A UDP port: 1..65535, or 0..65535 where 0 means "any free port" (binding).
CLI::Validator port_number(bool zero_means_any);
// One of `names` ("expected one of: a, b, c"), with ignore_case whatever the
// case; added with ->transform (not ->check, which keeps the text as typed)
// the value becomes the listed spelling.
CLI::Validator one_of(std::vector<std::string> names, bool ignore_case = false);

int exit_on_parse_error(CLI::App& app, const CLI::ParseError& e, std::string_view tool);

// Prints "TOOL: what" and returns the exit code of the failure `e`: 2 for
// bad input (std::invalid_argument, which the library's parsers and loaders
// throw for a bad value or file, and tls::CredentialError for a certificate or
// key that cannot be used), 1 for everything else: network, peer, I/O.
int report_failure(std::string_view tool, const std::exception& e);

// A byte count as parse_size reads it ("32M", "1.5G"), within [min, max]:
// "expected a size in bytes with an optional K, M, G or T suffix, from 1 to 2T".
CLI::Validator size_in(std::uint64_t min, std::uint64_t max);

}  // namespace ndm::tools
