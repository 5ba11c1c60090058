// The flags iperf3 has in its general section, the same in every tool that
// has them: -T/--logfile/--forceflush, -4/-6, -v/--version, and the way out
// of ndm-sim's and ndm-train's old -v.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace ndm::tools {

// iperf3's -T TITLE, --logfile FILE and --forceflush (output.hpp does them).
struct OutputFlags {
    std::string title;
    std::string logfile;
    bool force_flush = false;
};
void add_output_flags(CLI::App& app, OutputFlags& flags);

// iperf3's -4 / -6: a numeric `host` must be of that family ("localhost"
// becomes 127.0.0.1 or ::1; a host name is looked up in that family only, by
// resolve_host) and an unset `bind` becomes that family's any-address.
// Throws std::invalid_argument naming the mismatch.
void apply_address_family(bool v4, bool v6, std::string& host, std::string& bind);

// -v, --version: prints "TOOL VERSION (git COMMIT)" and exits 0, as iperf3's
// -v. Every tool's verbose flag is -V, --verbose, as iperf3's.
void add_version_flag(CLI::App& app, std::string_view tool);

// The deprecation path of ndm-sim's and ndm-train's old -v (= --verbose,
// before they took iperf3's -v = --version): a -v among other arguments is
// read as -V, with one warning line on standard error; -v alone prints the
// version. Rewrites argv in place.
void deprecated_verbose_v(int argc, char** argv, std::string_view tool);

}  // namespace ndm::tools
