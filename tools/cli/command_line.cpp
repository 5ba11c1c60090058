#include "tools/cli/command_line.hpp"

#include <cerrno>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "ndm/tls.hpp"
#include "tools/cli/completion.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/units.hpp"

namespace ndm::tools {

namespace {

// The number `text` is in full, if it is one and finite.
std::optional<double> finite_number(const std::string& text) {
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v) || errno == ERANGE) return std::nullopt;
    return v;
}

// Empty when `text` is a finite decimal number, else what is expected.
std::string check_float(const std::string& text) { return finite_number(text) ? std::string() : "expected a number"; }

// Empty when `text` is a decimal integer that fits 64 bits of the signedness
// asked (narrower types carry an integer_in or port_number range), else what
// is expected.
std::string check_integer(const std::string& text, bool is_signed) {
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (first != last && *first == '+') ++first;
    std::from_chars_result r{};
    if (is_signed) {
        std::int64_t v = 0;
        r = std::from_chars(first, last, v);
    } else {
        if (first != last && *first == '-') return "expected a whole number, 0 or more";
        std::uint64_t v = 0;
        r = std::from_chars(first, last, v);
    }
    if (r.ec == std::errc::result_out_of_range)
        return is_signed ? "expected a whole number of at most 19 digits" : "expected a whole number below 2^64";
    if (r.ec != std::errc() || r.ptr != last || first == last) return "expected a whole number";
    return {};
}

// How a refusal names the option: "-t/--time", "--seed", or a positional's name.
std::string option_label(const CLI::Option& opt) {
    std::string label;
    for (const auto& s : opt.get_snames()) label += (label.empty() ? "-" : "/-") + s;
    for (const auto& l : opt.get_lnames()) label += (label.empty() ? "--" : "/--") + l;
    return label.empty() ? opt.get_name(true) : label;
}

// `v` made to throw BadValue "LABEL VALUE: PROBLEM" when it refuses a value,
// so CLI11 neither rewords nor prefixes the validator's text.
void throw_on_refusal(CLI::Validator& v, const std::string& label) {
    v.operation([inner = v, label](std::string& text) -> std::string {
        const std::string problem = inner(text);
        if (problem.empty()) return {};
        const std::string shown = text.empty() ? std::string("''") : printable(text);
        throw BadValue(label + " " + shown + ": " + problem);
    });
}

void check_options_of(CLI::App& app) {
    for (CLI::Option* opt : app.get_options()) {
        const std::string type = opt->get_type_name();
        const std::string base = type.substr(0, type.find(':'));
        // After the tool's own validators (which say more: a range, a unit).
        if (base == "FLOAT")
            opt->check(CLI::Validator([](std::string& s) { return check_float(s); }, ""));
        else if (base == "INT" || base == "UINT")
            opt->check(CLI::Validator([signed_ = base == "INT"](std::string& s) { return check_integer(s, signed_); },
                                      ""));
        const std::string label = option_label(*opt);
        for (int i = 0;; ++i) {
            CLI::Validator* v = nullptr;
            try {
                v = opt->get_validator(i);
            } catch (const CLI::OptionNotFound&) {
                break;
            }
            throw_on_refusal(*v, label);
        }
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_options_of(*sub);
}

// A byte count as -n would take it: "2T", "64K", "1452".
std::string size_text(std::uint64_t v) {
    int suffix = 0;
    while (suffix < 4 && v >= 1024 && v % 1024 == 0) v /= 1024, ++suffix;
    return fmt::format("{}{}", v, suffix == 0 ? "" : std::string(1, "KMGT"[suffix - 1]));
}

// "0.1", "86400", "1e-06": the shortest text that reads back as `v`.
std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace

void check_numeric_options(CLI::App& app) { check_options_of(app); }

namespace {

// The words after CLI11's "NAME: " prefix, or all of them.
std::string after_colon(const std::string& what) {
    const auto colon = what.find(": ");
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

// ndm's words for the argument errors that carry no value (the values are
// BadValue's), from CLI11's error type; the names in them are CLI11's.
std::string argument_problem(const CLI::App& app, const CLI::ParseError& e) {
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        const std::string args = after_colon(what);
        return (args.find(' ') == std::string::npos ? "unexpected argument: " : "unexpected arguments: ") + args;
    }
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
        const std::string name = what.substr(0, what.find(':'));
        if (what.find("missing") != std::string::npos) return name + ": the value is missing";
        return name + ": given more than once";
    }
    if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr)  // a value no validator covered
        return "bad value: " + after_colon(what);
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && what.find("subcommand") != std::string::npos) {
        std::string names;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
            names += (names.empty() ? "" : ", ") + sub->get_name();
        return "a subcommand is required: " + names;
    }
    return what;
}

}  // namespace

int exit_on_parse_error(CLI::App& app, const CLI::ParseError& e, std::string_view tool) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string what = argument_problem(app, e);
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
    } catch (const BadValue& e) {
        std::cerr << tool << ": " << e.what() << '\n';
        return 2;
    } catch (const CLI::ParseError& e) {
        return exit_on_parse_error(app, e, tool);
    }
    return std::nullopt;
}

CLI::Validator number_in(double min, double max, std::string_view unit) {
    std::string expected = fmt::format("expected {}{}a number from {} to {}", unit, unit.empty() ? "" : ", ",
                                       number_text(min), number_text(max));
    return CLI::Validator(
        [min, max, expected](std::string& text) -> std::string {
            const auto v = finite_number(text);
            return v && *v >= min && *v <= max ? std::string() : expected;
        },
        fmt::format("{}..{}", number_text(min), number_text(max)));
}

CLI::Validator positive_number(double max, std::string_view unit) {
    std::string expected =
        fmt::format("expected {}{}a number above 0 and at most {}", unit, unit.empty() ? "" : ", ", number_text(max));
    return CLI::Validator(
        [max, expected](std::string& text) -> std::string {
            const auto v = finite_number(text);
            return v && *v > 0 && *v <= max ? std::string() : expected;
        },
        fmt::format("(0..{}]", number_text(max)));
}

CLI::Validator integer_in(std::uint64_t min, std::uint64_t max, std::string_view unit) {
    std::string expected =
        fmt::format("expected {}{}a whole number from {} to {}", unit, unit.empty() ? "" : ", ", min, max);
    return CLI::Validator(
        [min, max, expected](std::string& text) -> std::string {
            const char* first = text.data();
            const char* last = text.data() + text.size();
            if (first != last && *first == '+') ++first;
            std::uint64_t v = 0;
            const auto r = std::from_chars(first, last, v);
            const bool ok = r.ec == std::errc() && r.ptr == last && first != last && v >= min && v <= max;
            return ok ? std::string() : expected;
        },
        fmt::format("{}..{}", min, max));
}

CLI::Validator port_number(bool zero_means_any) {
    CLI::Validator v = integer_in(zero_means_any ? 0 : 1, 65535, "a UDP port");
    if (zero_means_any) {
        const CLI::Validator range = v;
        v.operation([range](std::string& text) -> std::string {
            return range(text).empty() ? std::string() : "expected a UDP port, a whole number from 0 (any free port) to 65535";
        });
    }
    return v;
}

CLI::Validator one_of(std::vector<std::string> names, bool ignore_case) {
    std::string expected = "expected one of: ";
    std::string description;
    for (const auto& n : names) {
        expected += (&n == &names.front() ? "" : ", ") + n;
        description += (&n == &names.front() ? "" : "|") + n;
    }
    auto lower = [](std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    return CLI::Validator(
        [names = std::move(names), ignore_case, expected, lower](std::string& text) -> std::string {
            for (const auto& n : names) {
                if (n == text || (ignore_case && lower(n) == lower(text))) {
                    text = n;
                    return {};
                }
            }
            return expected;
        },
        description);
}

int report_failure(std::string_view tool, const std::exception& e) {
    std::cerr << tool << ": " << e.what() << '\n';
    const bool bad_input = dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||
                           dynamic_cast<const tls::CredentialError*>(&e) != nullptr;
    return bad_input ? 2 : 1;
}

CLI::Validator size_in(std::uint64_t min, std::uint64_t max) {
    const std::string expected =
        fmt::format("expected a size in bytes with an optional K, M, G or T suffix (binary), from {} to {}",
                    size_text(min), size_text(max));
    return CLI::Validator(
        [min, max, expected](std::string& text) -> std::string {
            try {
                const std::uint64_t v = parse_size(text);
                if (v >= min && v <= max) return {};
            } catch (const std::invalid_argument&) {
            }
            return expected;
        },
        "SIZE");
}

}  // namespace ndm::tools
