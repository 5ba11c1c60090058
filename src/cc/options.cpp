// Parsing of "key=value,key2=value2" option strings and the typed getters of
// option_values.hpp.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <system_error>

#include "cc/option_values.hpp"
#include "ndm/cc.hpp"

namespace ndm::cc {

namespace {

constexpr bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

std::string quoted(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += s;
    out += '"';
    return out;
}

[[noreturn]] void parse_error(std::string_view item, std::string_view problem) {
    throw std::invalid_argument("congestion-control option " + quoted(item) + ": " +
                                std::string(problem));
}

// Shortest round-trip form, so a range prints as written in the code ("0.95").
std::string format_number(double v) {
    std::array<char, 32> buf{};
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    if (ec != std::errc{}) return "?";
    return std::string(buf.data(), end);
}

[[noreturn]] void value_error(std::string_view controller, std::string_view key,
                              std::string_view expected, std::string_view got) {
    throw std::invalid_argument("congestion controller " + quoted(controller) + ": option " +
                                quoted(key) + " must be " + std::string(expected) + ", got " +
                                quoted(got));
}

const std::string* find(const Options& opts, std::string_view key) {
    auto it = opts.find(key);
    return it == opts.end() ? nullptr : &it->second;
}

}  // namespace

Options parse_options(std::string_view text) {
    Options out;
    const auto whole = trim(text);
    if (whole.empty()) return out;
    for (;;) {
        const auto comma = text.find(',');
        const auto item = trim(text.substr(0, comma));
        // A stray comma is rejected rather than skipped: "beta=0.7,,x" is more
        // likely a mangled setting than an intended empty one.
        if (item.empty()) {
            throw std::invalid_argument("congestion-control options " + quoted(whole) +
                                        ": empty item (stray \",\")");
        }
        const auto eq = item.find('=');
        if (eq == std::string_view::npos) parse_error(item, "missing \"=\"");
        const auto key = trim(item.substr(0, eq));
        if (key.empty()) parse_error(item, "empty key");
        const auto value = trim(item.substr(eq + 1));
        if (!out.emplace(std::string(key), std::string(value)).second) {
            parse_error(key, "duplicate key");
        }
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return out;
}

double get_double(const Options& opts, std::string_view key, double def, double min, double max,
                  std::string_view controller) {
    const auto* s = find(opts, key);
    if (s == nullptr) return def;
    double v = 0;
    const auto* first = s->data();
    const auto* last = first + s->size();
    auto [end, ec] = std::from_chars(first, last, v);
    // The negated comparison also rejects NaN; from_chars rejects "+1" and
    // "0x1", and trailing characters ("0.5x") are caught by end != last.
    if (ec != std::errc{} || end != last || !std::isfinite(v) || !(v >= min && v <= max)) {
        value_error(controller, key,
                    "a number in [" + format_number(min) + ", " + format_number(max) + "]", *s);
    }
    return v;
}

std::uint64_t get_uint(const Options& opts, std::string_view key, std::uint64_t def,
                       std::uint64_t min, std::uint64_t max, std::string_view controller) {
    const auto* s = find(opts, key);
    if (s == nullptr) return def;
    std::uint64_t v = 0;
    const auto* first = s->data();
    const auto* last = first + s->size();
    auto [end, ec] = std::from_chars(first, last, v, 10);
    if (ec != std::errc{} || end != last || v < min || v > max) {
        value_error(controller, key,
                    "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
                    *s);
    }
    return v;
}

bool get_bool(const Options& opts, std::string_view key, bool def, std::string_view controller) {
    const auto* s = find(opts, key);
    if (s == nullptr) return def;
    std::string lower = *s;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
    if (lower == "on" || lower == "true" || lower == "1") return true;
    if (lower == "off" || lower == "false" || lower == "0") return false;
    value_error(controller, key, "one of on, off, true, false, 1, 0", *s);
}

void reject_unknown(const Options& opts, std::initializer_list<std::string_view> known,
                    std::string_view controller) {
    for (const auto& [key, value] : opts) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::string names;
        for (auto k : known) {
            if (!names.empty()) names += ", ";
            names += k;
        }
        throw std::invalid_argument("congestion controller " + quoted(controller) +
                                    ": unknown option " + quoted(key) + " (known: " +
                                    (names.empty() ? std::string("none") : names) + ")");
    }
}

Entry parse_entry(std::string_view entry) {
    Entry c;
    const auto colon = entry.find(':');
    c.name = std::string(entry.substr(0, colon));
    if (colon != std::string_view::npos) {
        c.options = std::string(entry.substr(colon + 1));
        std::replace(c.options.begin(), c.options.end(), ':', ',');
    }
    return c;
}

}  // namespace ndm::cc
