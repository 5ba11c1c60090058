#include "tools/cli/general_flags.hpp"

#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "ndm/endpoint.hpp"
#include "ndm/version.hpp"

namespace ndm::tools {

void add_output_flags(CLI::App& app, OutputFlags& flags) {
    app.add_option("-T,--title", flags.title,
                   "prefix every output line with \"TITLE:  \" (with -J: a top-level \"title\" key instead)");
    app.add_option("--logfile", flags.logfile,
                   "append the output to FILE instead of standard output (errors still go to standard error)");
    app.add_flag("--forceflush", flags.force_flush, "flush the output after every line (else, as iperf3, rows reach a pipe or file as its buffer fills; a terminal gets every line)");
}

void apply_address_family(bool v4, bool v6, std::string& host, std::string& bind) {
    if (!v4 && !v6) return;
    const char* flag = v4 ? "-4" : "-6";
    auto check = [&](std::string& a, const char* what) {
        if (a == "localhost") a = v4 ? "127.0.0.1" : "::1";
        try {
            check_numeric_address(a, what);
        } catch (const std::invalid_argument&) {
            return;  // a host name: resolve_host looks up that family only
        }
        if ((a.find(':') != std::string::npos) == v4)
            throw std::invalid_argument(fmt::format("{}: {} {} is not an IPv{} address", flag, what, a, v4 ? 4 : 6));
    };
    if (!host.empty()) check(host, "address");
    if (bind.empty()) bind = v4 ? "0.0.0.0" : "::";
    check(bind, "bind address");
}

void add_version_flag(CLI::App& app, std::string_view tool) {
    app.set_version_flag("-v,--version", fmt::format("{} {} (git {})", tool, version(), git_commit()),
                         "print the version and the git commit it was built from, and exit (as iperf3's -v; "
                         "a tool's verbose flag is -V)");
}

void deprecated_verbose_v(int argc, char** argv, std::string_view tool) {
    if (argc <= 2) return;  // "-v" alone (or nothing): the version
    static char kVerbose[] = "-V";
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--") break;
        if (std::string_view(argv[i]) == "-v") {
            argv[i] = kVerbose;
            std::cerr << tool << ": warning: -v among other arguments is read as -V (--verbose), as before; "
                      << "it will mean --version as in iperf3 (-v alone already does): use -V\n";
        }
    }
}

}  // namespace ndm::tools
