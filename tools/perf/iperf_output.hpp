// Small pieces of iperf3-style output shared by ndm-send and ndm-recv.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/experiment.hpp"
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

using experiment::drain_seconds;
// The receiver line's note: "last byte 2.31 s after the send phase".
inline std::string drain_text(double sender_end_s, double receiver_end_s) {
    return fmt::format("last byte {:.2f} s after the send phase", drain_seconds(sender_end_s, receiver_end_s));
}

// The -J document of a test that failed before its end: what was measured
// so far and the reason, as iperf3 prints {"error": ...}.
inline nlohmann::json failure_json(nlohmann::json provenance, nlohmann::json intervals, const std::string& error) {
    return {{"provenance", std::move(provenance)}, {"intervals", std::move(intervals)}, {"error", error}};
}

}  // namespace ndm::tools
