// Pieces shared by the timed bulk transfers of the tools (run_live, ndm-send,
// ndm-recv): the test parameters the client puts in the handshake's
// application params (so no control connection is needed), the receiver's
// closing report sent back on the test stream, waiting for a handshake, a
// pump that keeps a stream topped up with the deterministic payload, and
// draining what arrived. Both move data in place (Connection::prepare/commit,
// peek/consume): no copy through a buffer of the tool's own.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/bulk_writer.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/workload.hpp"
#include "tools/perf/payload_file.hpp"

namespace ndm::tools {

struct TestParams {
    std::string cc;
    std::string cc_options;  // "key=value,..." for cc::make; at most kMaxCcOptions bytes
    std::size_t packet_size = 1452;
    double seconds = 10;     // send time; 0 when bytes is set
    std::uint64_t bytes = 0; // byte budget (-n); 0 = timed
    double interval = 1;
    std::uint64_t seed = 1;  // payload seed of this connection
    // -P and -R: the connections of one test share test_id; index is this
    // connection's place among `streams`. In reverse the server sends.
    unsigned streams = 1;
    unsigned index = 0;
    std::uint64_t test_id = 0;
    bool reverse = false;
    // --bidir: both send at once on the one connection (the client on its
    // stream, the server as in reverse mode); excludes reverse.
    bool bidir = false;
    // -w: the flow-control windows (connection and stream) both sides
    // advertise, fixed (no auto-tuning); 0 = the defaults, auto-tuned.
    std::uint64_t window = 0;
    // --get-server-output: the server sends its output back, as text or (-J) JSON.
    enum class ServerOutput : unsigned { none = 0, text = 1, json = 2 };
    ServerOutput server_output = ServerOutput::none;
    // -b: the sender writes at most this many bits per second (0 = as fast as
    // the connection takes), `burst` blocks at a time when behind (0 = no
    // bursts: just the shortfall). -O: the first `omit` seconds are sent but
    // left out of the totals (timed tests only).
    std::uint64_t bitrate = 0;
    unsigned burst = 0;
    double omit = 0;
    // The client's stream is the generated payload (workload::Payload of
    // seed; not -F's file): the server checks each byte against it
    // (workload::PayloadCheck) instead of hashing, and the client hashes
    // nothing. The server's direction (-R, --bidir) is always hashed: the
    // client cannot know whether the server sends its -F file.
    bool check_payload = false;
    // -u: the client sends DATAGRAMs (RFC 9221) at `bitrate` instead of a
    // stream, each as long as packet_size allows (tools/perf/datagram_test.hpp);
    // its stream carries only its closing count. Forward, timed, one
    // direction only.
    bool datagram = false;
};
inline constexpr unsigned kMaxParallel = 128;
// The "block" of -k and of -b's /BURST: 128 KiB, iperf3's default TCP block.
inline constexpr std::uint64_t kBlockSize = 128 * 1024;
// Bounds as iperf3's: -b up to 10 Tbit/s, at most 1000 blocks a burst, -O up to 600 s.
inline constexpr std::uint64_t kMaxBitrate = 10'000'000'000'000;
inline constexpr unsigned kMaxBurst = 1000;
inline constexpr double kMaxOmit = 600;
inline constexpr std::size_t kMaxCcOptions = 256;
// -w: from 16 KiB (about the initial congestion window, RFC 9002 §7.2, so
// the server's initial credit of that size does not slow the first flight)
// to 1 GiB.
inline constexpr std::uint64_t kMinWindow = 16 * 1024, kMaxWindow = std::uint64_t{1} << 30;
// --get-server-output: the most a client reads back.
inline constexpr std::size_t kMaxServerOutput = 4u << 20;
// Bounds of a test, the same for ndm-send's flags and for what ndm-recv
// accepts from the network: the interval as iperf3's -i, at most a day of
// sending, a byte budget far below the 2^62 stream-offset limit (1 PiB).
inline constexpr double kMinInterval = 0.1, kMaxInterval = 60;
inline constexpr double kMinSeconds = 0.1, kMaxSeconds = 86400;
inline constexpr std::uint64_t kMaxTestBytes = std::uint64_t{1} << 50;
// Throws std::invalid_argument naming the first parameter outside its bounds
// (packet size outside the library's datagram limits, an unregistered
// controller, index not below streams, ...).
void validate(const TestParams& p);
std::vector<std::uint8_t> encode(const TestParams& p);
// Throws std::invalid_argument when the blob is not a test request or a
// value is of the wrong type or outside the bounds of validate().
TestParams decode_test_params(std::span<const std::uint8_t> blob);

// -b's text, "RATE[KMGT][/BURST]" (bits per second, decimal multiples as
// iperf3's), within 1..kMaxBitrate and 1..kMaxBurst; throws
// std::invalid_argument naming the problem.
struct Bitrate {
    std::uint64_t bits_per_second = 0;
    unsigned burst = 0;
};
Bitrate parse_bitrate(std::string_view text);

// What the receiver read, sent back to the sender after the sender's FIN.
// Reports come from the peer: decoding checks their types and that seconds
// lie within 0..kMaxReportSeconds (a day of sending plus a day of draining).
inline constexpr double kMaxReportSeconds = 2 * kMaxSeconds;
// The reporting side's CPU use over the test (iperf3's remote_* of
// cpu_utilization_percent), percent of one core: at most 1024 cores' worth.
inline constexpr double kMaxCpuPercent = 102400;
struct RemoteCpu {
    double user = 0, system = 0;  // absent from older peers: 0
};
struct ReceiverReport {
    std::uint64_t bytes = 0;
    double seconds = 0;      // test start to last byte
    std::uint64_t hash = 0;  // workload::StreamHash digest of the bytes read (not check_payload)
    // check_payload: the bytes were compared with the payload, and the first
    // that differed was at mismatch_at (kNoMismatch: none did).
    static constexpr std::uint64_t kNoMismatch = ~std::uint64_t{0};
    bool checked_payload = false;
    std::uint64_t mismatch_at = kNoMismatch;
    std::uint64_t omitted_bytes = 0;  // of `bytes`, read during the -O period; at most `bytes`
    RemoteCpu cpu;
    std::string cc;  // the receiver's controller (of its ACK-only direction); a registered name or empty
    // -u: what arrived of the client's datagrams (bytes above are their
    // payload bytes), by sequence number: the truth of the test's loss.
    struct Datagrams {
        std::uint64_t received = 0, expected = 0, out_of_order = 0, duplicates = 0, malformed = 0;
        double jitter_ms = 0;  // at most kMaxReportSeconds * 1000
    };
    std::optional<Datagrams> datagrams;
};
std::vector<std::uint8_t> encode(const ReceiverReport& r);
ReceiverReport decode_receiver_report(std::span<const std::uint8_t> blob);

// iperf3's per-stream min/mean/max_rtt (µs) and max_snd_cwnd (bytes): the
// sender's smoothed RTT and congestion window at each interval's end.
struct SenderPath {
    std::int64_t rtt_min = 0, rtt_mean = 0, rtt_max = 0;
    std::uint64_t max_cwnd = 0;
};
// From a peer: RTTs within 0..kMaxReportRttUs (10 min), min <= mean <= max.
inline constexpr std::int64_t kMaxReportRttUs = 600'000'000;
class PathSampler {
public:
    void note(Duration srtt, std::uint64_t cwnd) {
        const std::int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(srtt).count();
        min_ = samples_ ? std::min(min_, us) : us;
        max_ = std::max(max_, us);
        sum_ += us;
        ++samples_;
        max_cwnd_ = std::max(max_cwnd_, cwnd);
    }
    // Nothing when no interval ended yet.
    [[nodiscard]] std::optional<SenderPath> result() const {
        if (!samples_) return std::nullopt;
        return SenderPath{min_, sum_ / samples_, max_, max_cwnd_};
    }

private:
    std::int64_t min_ = 0, max_ = 0, sum_ = 0, samples_ = 0;
    std::uint64_t max_cwnd_ = 0;
};

// A sender's numbers over one interval row, from its connection's stats at
// the interval's end: prev_bytes and prev_retx (the counts at the previous
// end) advance, and the RTT and cwnd go to `path`.
struct SenderRow {
    std::uint64_t bytes = 0, retr = 0, cwnd = 0;
    Duration srtt{0}, rttvar{0};
};
inline SenderRow sender_interval(const ConnectionStats& st, std::uint64_t& prev_bytes, std::uint64_t& prev_retx,
                                   PathSampler& path) {
    SenderRow r{st.stream_bytes_sent - prev_bytes, st.packets_retransmitted - prev_retx, st.cwnd, st.smoothed_rtt,
                  st.rttvar};
    path.note(st.smoothed_rtt, st.cwnd);
    prev_bytes = st.stream_bytes_sent;
    prev_retx = st.packets_retransmitted;
    return r;
}
// One flow's row on either tool: a sending flow's from its connection `c`
// (an empty row once the connection is gone), a receiving flow's bytes read
// (`received`, in all) since the previous row.
inline SenderRow flow_interval(bool sends, const Connection* c, Instant now, std::uint64_t received,
                               std::uint64_t& prev_bytes, std::uint64_t& prev_retx, PathSampler& path) {
    if (sends) return c ? sender_interval(c->stats(now), prev_bytes, prev_retx, path) : SenderRow{};
    SenderRow r;
    r.bytes = received - prev_bytes;
    prev_bytes = received;
    return r;
}

// Reverse mode: what the sending server wrote, sent to the client on a second
// stream once the peer acknowledged all the data.
struct SenderReport {
    std::uint64_t bytes = 0;
    double seconds = 0;            // the send phase
    std::uint64_t retransmits = 0; // packets carrying retransmitted data
    std::uint64_t hash = 0;        // digest of the bytes written
    // Of bytes and retransmits, those of the -O period; at most the totals.
    std::uint64_t omitted_bytes = 0, omitted_retransmits = 0;
    RemoteCpu cpu;
    std::optional<SenderPath> path;  // absent from older servers, and before an interval ended
};
std::vector<std::uint8_t> encode(const SenderReport& r);
SenderReport decode_sender_report(std::span<const std::uint8_t> blob);

// Runs the endpoint until the handshake of h completes; throws
// std::runtime_error("connection failed: <reason>") when it does not.
Connection& await_established(Endpoint& ep, ConnectionHandle h, Duration timeout);

// Reads every in-order byte of a stream in place (ndm/bulk_writer.hpp).
using workload::drain;

// -b's bound on how long a write short of a datagram waits for the next
// ones (Connection::set_send_coalescing): the time the rate takes to write
// two datagrams, so a packet fills before the bound at any rate down to
// 1 Mbit/s with 1452-byte datagrams, but at most 25 ms (RFC 9000's default
// max_ack_delay), so that slower rates send part-filled datagrams rather than
// hold bytes longer. 1452-byte datagrams: 23 ms at 1 Mbit/s, 2.3 ms at 10,
// 0.23 ms at 100.
Duration write_coalescing(std::uint64_t bits_per_second, std::size_t datagram_size);

// The sender's payload on one stream (workload::BulkWriter), with -b's
// pacing and -F's file.
class PayloadPump {
public:
    explicit PayloadPump(std::uint64_t seed, std::uint64_t limit = workload::BulkWriter::kUnlimited)
        : writer_(seed, limit) {}
    // -b: from the first pump() on, write no faster than bits_per_second on
    // average (iperf3's throttle: write only while behind the rate), so the
    // flow is application-limited; burst_bytes > 0 writes that much at once
    // once half of it is due (so what is written stays within half a burst
    // of the rate, above or below: iperf3 writes a burst whenever it is
    // behind at all, which puts a whole burst ahead and made -b 10M/4 send
    // 11.9 Mbit/s over short tests), else just the shortfall. The first
    // pump() also sets the connection's coalescing of small writes
    // (Connection::set_send_coalescing, write_coalescing()), so the
    // shortfalls, a few bytes each, still go in full datagrams.
    void pace(std::uint64_t bits_per_second, std::uint64_t burst_bytes) {
        bits_per_second_ = bits_per_second;
        burst_bytes_ = burst_bytes;
    }
    // -F: write the file's bytes instead of the generated payload, and no
    // more than the file holds (the stream's offset is the file's).
    void send_file(std::shared_ptr<const FileSource> file) {
        const std::uint64_t size = file->size();
        writer_.use_source([f = std::move(file)](std::uint64_t offset, std::span<std::uint8_t> out) { f->read(offset, out); },
                           size);
    }
    // The receiver compares the payload with its generator (TestParams::
    // check_payload): no hash here. Not with send_file().
    void skip_hash() { writer_.skip_hash(); }
    // Writes more payload; sends FIN with the last byte when a limit is set.
    void pump(Connection& c, StreamId id, Instant now) { pump(c, id, c.stats(now), now); }
    // The same with the connection's stats as the caller just read them for
    // wants(): stats() copies every counter, twice a turn at -P 128.
    void pump(Connection& c, StreamId id, const ConnectionStats& st, Instant now);
    // Whether pump() would write anything now, given the connection's stats
    // and the stream's send capacity and flow-control limit. A read-only
    // look, so that a driver with many connections reaches (and so
    // schedules) only those that take more payload through
    // Endpoint::connection().
    [[nodiscard]] bool wants(const Connection& c, StreamId id, const ConnectionStats& st, Instant now) const;
    [[nodiscard]] std::uint64_t written() const { return writer_.written(); }
    [[nodiscard]] bool done() const { return writer_.done(); }
    // Whether the stream ends with its last byte (-n, -k, -F) rather than at a time.
    [[nodiscard]] bool limited() const { return writer_.limited(); }
    [[nodiscard]] std::uint64_t digest() const { return writer_.digest(); }

private:
    // The stream offset -b allows by `now` (the limit without -b). Before the
    // first pump() the clock has not started: a little is allowed, so that
    // wants() lets the driver make the call that starts it.
    [[nodiscard]] std::uint64_t rate_limit(Instant now) const;

    workload::BulkWriter writer_;
    std::uint64_t bits_per_second_ = 0, burst_bytes_ = 0;
    std::optional<Instant> paced_from_;
};

}  // namespace ndm::tools
