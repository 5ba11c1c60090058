#include "common/cli.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "common/completion.hpp"
#include "common/units.hpp"
#include "ndm/tls.hpp"
#include "ndm/version.hpp"

namespace ndm::tools {

namespace {

// Empty when `text` is a finite decimal number, else why not.
std::string check_float(const std::string& text) {
    if (text.empty()) return "empty value";
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return "'" + text + "' is not a number";
    if (!std::isfinite(v) || errno == ERANGE) return "'" + text + "' is not a finite number in range";
    return {};
}

// Empty when `text` is a decimal integer that fits 64 bits of the signedness
// asked (narrower types CLI11 checks itself), else why not.
std::string check_integer(const std::string& text, bool is_signed) {
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (first != last && *first == '+') ++first;
    std::from_chars_result r{};
    if (is_signed) {
        std::int64_t v = 0;
        r = std::from_chars(first, last, v);
    } else {
        if (first != last && *first == '-') return "'" + text + "' is negative";
        std::uint64_t v = 0;
        r = std::from_chars(first, last, v);
    }
    if (r.ec == std::errc::result_out_of_range) return "'" + text + "' is out of range";
    if (r.ec != std::errc() || r.ptr != last || first == last) return "'" + text + "' is not an integer";
    return {};
}

void check_options_of(CLI::App& app) {
    for (CLI::Option* opt : app.get_options()) {
        const std::string type = opt->get_type_name();
        const std::string base = type.substr(0, type.find(':'));
        if (base == "FLOAT")
            opt->check(CLI::Validator([](std::string& s) { return check_float(s); }, ""));
        else if (base == "INT" || base == "UINT")
            opt->check(CLI::Validator([signed_ = base == "INT"](std::string& s) { return check_integer(s, signed_); },
                                      ""));
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_options_of(*sub);
}

}  // namespace

void check_numeric_options(CLI::App& app) { check_options_of(app); }

int exit_on_parse_error(CLI::App& app, const CLI::ParseError& e, std::string_view tool) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string what = e.what();
    for (char& c : what)  // one line, whatever CLI11 composed
        if (c == '\n') c = ' ';
    std::cerr << tool << ": " << what << " (see --help)\n";
    return 2;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::string_view tool) {
    if (argc == 2 && argv[1] == kBashCompletionFlag) {  // for the build (common/completion.hpp)
        std::cout << bash_completion(app, tool);
        return 0;
    }
    check_numeric_options(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return exit_on_parse_error(app, e, tool);
    }
    return std::nullopt;
}

int report_failure(std::string_view tool, const std::exception& e) {
    std::cerr << tool << ": " << e.what() << '\n';
    const bool bad_input = dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||
                           dynamic_cast<const tls::CredentialError*>(&e) != nullptr;
    return bad_input ? 2 : 1;
}

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
        if ((a.find(':') != std::string::npos) == v4)
            throw std::invalid_argument(fmt::format("{}: {} {} is not an IPv{} address", flag, what, a, v4 ? 4 : 6));
    };
    if (!host.empty()) check(host, "address");
    if (bind.empty()) bind = v4 ? "0.0.0.0" : "::";
    check(bind, "bind address");
}

void add_version_flag(CLI::App& app, std::string_view tool, bool short_v) {
    app.set_version_flag(short_v ? "-v,--version" : "--version", fmt::format("{} {} (git {})", tool, version(), git_commit()),
                         "print the version and the git commit it was built from, and exit");
}

CLI::Validator size_in(std::uint64_t min, std::uint64_t max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            std::uint64_t v = 0;
            try {
                v = parse_size(text);
            } catch (const std::invalid_argument& e) {
                return e.what();
            }
            if (v < min || v > max) return fmt::format("size \"{}\" ({} bytes) is outside {}..{} bytes", text, v, min, max);
            return {};
        },
        "SIZE");
}

}  // namespace ndm::tools
