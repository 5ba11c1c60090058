// Formatting and parsing of sizes, rates and durations the way iperf3 users
// read them: "2.38 MBytes" (binary prefixes for bytes), "19.9 Mbits/sec"
// (decimal prefixes for bits), three significant digits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ndm::tools {

std::string format_bytes(double bytes);          // "2.38 MBytes", "256 KBytes"
std::string format_bitrate(double bits_per_s);   // "19.9 Mbits/sec"
std::string format_cwnd(double bytes);           // iperf3's cwnd column: "256 KBytes"
// "32M", "1G", "500k", "1452" → bytes (binary multiples, as iperf3's -n).
// Throws std::invalid_argument naming the text.
std::uint64_t parse_size(std::string_view text);
// "20M", "1.5G", "500k" → bits per second (decimal multiples, as iperf3's -b).
// Throws std::invalid_argument naming the text.
std::uint64_t parse_rate(std::string_view text);

}  // namespace ndm::tools
