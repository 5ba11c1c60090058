// libFuzzer target for the Mahimahi trace parser (src/emu/delivery_trace.cpp): any
// text either parses into a trace that satisfies the emulator's assumptions
// (non-empty, non-decreasing, positive period, lookups consistent) or is
// rejected with std::invalid_argument. Nothing else may escape, crash or hang.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "emu/delivery_trace.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto t = ndm::emu::Trace::parse(text, "fuzz");
        const std::size_t n = t.size();
        FUZZ_CHECK(n > 0);
        FUZZ_CHECK(t.period().count() > 0);
        FUZZ_CHECK(t.time_of(n - 1) == t.period());
        for (std::uint64_t g = 1; g < 2 * n && g < 64; ++g) FUZZ_CHECK(t.time_of(g) >= t.time_of(g - 1));
        // Every opportunity at or before its own time is counted through it.
        for (std::uint64_t g = 0; g < 2 * n && g < 64; ++g) FUZZ_CHECK(t.count_through(t.time_of(g)) > g);
        FUZZ_CHECK(t.mean_rate_bps() > 0);
    } catch (const std::invalid_argument& e) {
        // Errors name the trace (and the line where one is at fault).
        FUZZ_CHECK(std::string_view(e.what()).find("fuzz") != std::string_view::npos);
    }
    return 0;
}
