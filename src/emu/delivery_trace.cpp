#include "emu/delivery_trace.hpp"

#include "util/data_dir.hpp"
#include "util/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ndm::emu {

namespace {
constexpr std::int64_t kMsToNs = 1'000'000;
}

Trace Trace::from_ms(std::vector<std::int64_t> ms, std::string name) {
    if (ms.empty()) throw std::invalid_argument("trace " + name + ": no delivery opportunities");
    if (ms.back() <= 0) throw std::invalid_argument("trace " + name + ": the last timestamp must be > 0");
    Trace t;
    t.name_ = std::move(name);
    t.ns_.reserve(ms.size());
    for (std::size_t i = 0; i < ms.size(); ++i) {
        if (ms[i] < 0 || (i > 0 && ms[i] < ms[i - 1]))
            throw std::invalid_argument("trace " + t.name_ + ": timestamps must be non-negative and non-decreasing");
        t.ns_.push_back(ms[i] * kMsToNs);
    }
    t.period_ = t.ns_.back();
    return t;
}

Trace Trace::parse(std::string_view text, const std::string& name) {
    std::vector<std::int64_t> ms;
    std::size_t line_no = 0;
    std::int64_t prev = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++line_no;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        if (line.empty()) continue;
        std::int64_t v = 0;
        const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
        if (ec != std::errc{} || p != line.data() + line.size() || v < 0)
            throw std::invalid_argument(name + ":" + std::to_string(line_no) + ": not a non-negative integer: '" +
                                        std::string(line.substr(0, 40)) + "'");
        if (v > (std::int64_t{1} << 40))
            throw std::invalid_argument(name + ":" + std::to_string(line_no) + ": timestamp too large");
        if (!ms.empty() && v < prev)
            throw std::invalid_argument(name + ":" + std::to_string(line_no) + ": timestamp " + std::to_string(v) +
                                        " is smaller than the previous " + std::to_string(prev));
        prev = v;
        ms.push_back(v);
    }
    if (ms.empty()) throw std::invalid_argument(name + ": empty trace (no delivery opportunities)");
    if (ms.back() == 0) throw std::invalid_argument(name + ": the last timestamp must be > 0 (Mahimahi loops by it)");
    return from_ms(std::move(ms), name);
}

Trace Trace::load(const std::string& path) {
    std::string text;
    try {
        text = util::read_input_file(path, util::kMaxTraceFileBytes);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("cannot read trace '" + path + "': " + e.what());
    }
    return parse(text, path);
}

Duration Trace::time_of(std::uint64_t g) const {
    const std::uint64_t n = ns_.size();
    return Duration(static_cast<std::int64_t>(g / n) * period_ + ns_[g % n]);
}

std::uint64_t Trace::count_through(Duration t) const {
    if (t < Duration::zero()) return 0;
    // Loops before m = floor(t / L) are complete (every offset <= L); in loop m
    // count the offsets <= t − m·L; later loops start after t.
    const std::int64_t m = t.count() / period_;
    const std::int64_t rest = t.count() - m * period_;
    const auto k = std::upper_bound(ns_.begin(), ns_.end(), rest) - ns_.begin();
    return static_cast<std::uint64_t>(m) * ns_.size() + static_cast<std::uint64_t>(k);
}

double Trace::mean_rate_bps(std::uint32_t bytes) const {
    return static_cast<double>(ns_.size()) * bytes * 8 / (static_cast<double>(period_) * 1e-9);
}

std::vector<std::string> trace_search_path() {
    std::vector<std::string> dirs = util::data_dirs();
    for (auto& d : dirs) d += "/traces";
    return dirs;
}

std::string resolve_trace_path(const std::string& name) { return util::resolve_data_file(name, "traces", "trace"); }

}  // namespace ndm::emu
