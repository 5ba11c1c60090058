#include "tools/cli/units.hpp"

#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ndm::tools {

namespace {
// Three significant digits like iperf3's unit_snprintf.
std::string three_digits(double v) {
    if (v < 9.995) return fmt::format("{:.2f}", v);
    if (v < 99.95) return fmt::format("{:.1f}", v);
    return fmt::format("{:.0f}", v);
}
}  // namespace

std::string format_bytes(double bytes) {
    static constexpr const char* units[] = {"Bytes", "KBytes", "MBytes", "GBytes", "TBytes"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return three_digits(bytes) + " " + units[u];
}

std::string format_bitrate(double bps) {
    static constexpr const char* units[] = {"bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"};
    int u = 0;
    while (bps >= 1000 && u < 4) {
        bps /= 1000.0;
        ++u;
    }
    return three_digits(bps) + " " + units[u];
}

std::string format_cwnd(double bytes) { return format_bytes(bytes); }

namespace {
// A number with an optional K/M/G/T suffix, each step `step` (1024 for sizes,
// 1000 for rates as iperf3's -b); `what` names the kind in errors.
std::uint64_t parse_scaled(std::string_view text, double step, const char* what) {
    std::string s(text);
    if (s.empty()) throw std::invalid_argument(fmt::format("empty {}", what));
    double mult = 1;
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
    if (const std::string_view suffixes = "KMGT"; suffixes.find(last) != std::string_view::npos) {
        for (std::size_t i = 0; i <= suffixes.find(last); ++i) mult *= step;
        s.pop_back();
    }
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size() || s.empty() || !(v >= 0) || !std::isfinite(v)) {
        throw std::invalid_argument(
            fmt::format("bad {} \"{}\" (expected a number with an optional K, M, G or T suffix)", what, text));
    }
    // llround of a value past long long's range is unspecified.
    if (v * mult >= 9e18) throw std::invalid_argument(fmt::format("{} \"{}\" is too large", what, text));
    return static_cast<std::uint64_t>(std::llround(v * mult));
}
}  // namespace

std::uint64_t parse_size(std::string_view text) { return parse_scaled(text, 1024.0, "size"); }

std::uint64_t parse_rate(std::string_view text) { return parse_scaled(text, 1000.0, "rate"); }

}  // namespace ndm::tools
