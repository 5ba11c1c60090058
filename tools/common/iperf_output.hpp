// Small pieces of iperf3-style output shared by ndm-send and ndm-recv.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/time.hpp"

namespace ndm::tools {

inline double secs(Instant a, Instant b) { return to_seconds(b - a); }
// Bits per second; 0 for an empty interval.
inline double rate(std::uint64_t bytes, double s) { return s > 0 ? static_cast<double>(bytes) * 8.0 / s : 0; }
// iperf3's stream label: "[  1]" for the first connection.
inline std::string id_label(unsigned index) { return fmt::format("[{:>3}]", index + 1); }

// An iperf3 "sum"-shaped JSON object for [b, e) seconds.
inline nlohmann::json sum_json(double b, double e, std::uint64_t bytes, std::optional<std::uint64_t> retr,
                               bool sender) {
    nlohmann::json j = {{"start", b}, {"end", e}, {"seconds", e - b}, {"bytes", bytes},
                        {"bits_per_second", rate(bytes, e - b)}};
    if (retr) j["retransmits"] = *retr;
    j["sender"] = sender;
    return j;
}

}  // namespace ndm::tools
