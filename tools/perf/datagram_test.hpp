// ndm-send -u / ndm-recv's datagram test, as iperf3 -u measures a UDP flow:
// each DATAGRAM (RFC 9221) carries a sequence number and its send time, the
// rest a filler derived from the sequence number; the receiver counts what
// arrived, what was missing (sequence gaps), out of order or twice, and the
// interarrival jitter of RFC 3550 §6.4.1, as iperf3 does, in the text and
// -J output. Nothing is resent: the receiver's count is the truth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ndm/time.hpp"
#include "tools/perf/perf_session.hpp"

namespace ndm::tools {

// Sequence number (8 bytes) and send time in ns of the sender's clock (8
// bytes), big-endian; the receiver uses only differences of the send times,
// so the two clocks need not agree.
inline constexpr std::size_t kDatagramHeader = 16;
// Sequence numbers beyond this are refused as garbage (2^40: a day at 12
// million datagrams a second).
inline constexpr std::uint64_t kMaxDatagramSeq = std::uint64_t{1} << 40;

// Writes datagram `seq`'s header and filler into out (at least kDatagramHeader bytes).
void fill_datagram(std::span<std::uint8_t> out, std::uint64_t seq, std::uint64_t send_ns);

// The receiver's counts, over the test and since the last interval.
struct DatagramCounts {
    std::uint64_t received = 0;      // distinct datagrams that arrived intact
    std::uint64_t bytes = 0;         // their payload bytes
    std::uint64_t expected = 0;      // highest sequence number seen + 1
    std::uint64_t out_of_order = 0;  // arrived after a higher sequence number
    std::uint64_t duplicates = 0;    // a sequence number seen before
    std::uint64_t malformed = 0;     // too short, a bad sequence number or filler
    double jitter_ms = 0;            // RFC 3550 §6.4.1, smoothed over the test
    // iperf3's loss: sequence gaps, the datagrams expected and not received.
    [[nodiscard]] std::uint64_t lost() const { return expected > received ? expected - received : 0; }
};

class DatagramReceiver {
public:
    // One DATAGRAM payload, as it arrived at `now`.
    void on_datagram(std::span<const std::uint8_t> payload, Instant now);
    [[nodiscard]] const DatagramCounts& total() const { return total_; }
    // The counts since the previous call (jitter: the current value).
    DatagramCounts take_interval();

private:
    // Which of the last kWindow sequence numbers below the highest arrived:
    // duplicates older than that count as out of order, not as duplicates.
    static constexpr std::uint64_t kWindow = 1u << 16;
    bool seen(std::uint64_t seq) const;
    void mark(std::uint64_t seq);

    DatagramCounts total_, at_interval_;
    std::vector<std::uint64_t> bits_ = std::vector<std::uint64_t>(kWindow / 64);
    bool have_transit_ = false;
    double last_transit_ns_ = 0, jitter_ns_ = 0;
};

// iperf3's "lost/total (percent)": "12/1000 (1.2%)".
std::string loss_text(std::uint64_t lost, std::uint64_t total);
// An interval row's end as iperf3 -u prints it: jitter, lost/total.
std::string datagram_row(const DatagramCounts& c);
// The same into an interval's -J record, with iperf3 -u's keys
// (jitter_ms, lost_packets, packets, lost_percent) and ndm's
// out_of_order, duplicates and malformed.
void datagram_json(nlohmann::json& j, const DatagramCounts& c);
// The receiver's closing counts, as its report carries them.
ReceiverReport::Datagrams report_of(const DatagramCounts& c);

}  // namespace ndm::tools
