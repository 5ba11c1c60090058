// Mahimahi packet-delivery traces (docs/emulator.md R8, data/traces/README.md):
// one line per 1500-byte delivery opportunity, in ms from the start; the trace
// loops with its time offset by the last timestamp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/emu.hpp"

namespace ndm::emu {

class Trace {
public:
    // Parses trace text; `name` is used in error messages ("NAME:LINE: ...").
    static Trace parse(std::string_view text, const std::string& name);
    // Reads a file; throws std::invalid_argument "cannot read trace 'PATH': REASON".
    static Trace load(const std::string& path);
    // From opportunity times in ms (non-decreasing, last > 0).
    static Trace from_ms(std::vector<std::int64_t> ms, std::string name);

    [[nodiscard]] const std::string& name() const { return name_; }
    [[nodiscard]] std::size_t size() const { return ns_.size(); }  // opportunities per loop
    [[nodiscard]] Duration period() const { return Duration(period_); }
    // Time of the g-th opportunity (0-based, counting across loops) from the trace's start.
    [[nodiscard]] Duration time_of(std::uint64_t g) const;
    // Number of opportunities at times <= t (t >= 0, from the start); the index of
    // the first opportunity strictly after t.
    [[nodiscard]] std::uint64_t count_through(Duration t) const;
    // Mean capacity in bit/s at `bytes` per opportunity.
    [[nodiscard]] double mean_rate_bps(std::uint32_t bytes = 1500) const;

private:
    std::vector<std::int64_t> ns_;  // opportunity offsets within one loop, in ns
    std::int64_t period_ = 0;       // the last timestamp, ns
    std::string name_;
};

// Resolves a trace argument: an existing path, or a file name looked up in
// trace_search_path(). Throws std::invalid_argument naming the places searched.
std::string resolve_trace_path(const std::string& name);

}  // namespace ndm::emu
