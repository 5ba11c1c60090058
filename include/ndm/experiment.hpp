// Experiments on the emulator in virtual time, as ndm-compare runs them
// (--virtual: one controller at a time; --compete: controllers sharing one
// bottleneck) and the Python bindings (python/, docs/python.md) expose them:
// a profile, a controller entry and a seed in; the run's totals, its
// per-interval rows and what the emulator measured on the path out.
// Deterministic: the same spec and seed give the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/loss_detection.hpp"
#include "ndm/sim.hpp"
#include "ndm/tls.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::experiment {

// ndm-compare's --packets presets: "seed" = 65507-byte datagrams (the
// published loopback test's ~64 KB TCP segments), "realistic" = 1452 bytes
// (a 1500-byte MTU with IPv6 + UDP headers). Throws std::invalid_argument.
std::size_t packet_size_preset(std::string_view preset);

// What the emulator saw on the sender → receiver direction of one run.
struct PathMetrics {
    bool measured = false;
    double queue_delay_p95_ms = 0;  // waiting in the bottleneck queue (0 without a rate limit)
    double one_way_delay_p95_ms = 0;
    std::uint64_t sent = 0;            // datagrams the sender put on the path
    std::uint64_t dropped_queue = 0;   // queue overflow or AQM: congestion
    std::uint64_t dropped_other = 0;   // random, burst, outage: not congestion
    std::uint64_t ce_marked = 0;       // ECT datagrams an AQM marked CE instead of dropping
    [[nodiscard]] double loss_rate() const {
        return sent ? static_cast<double>(dropped_queue + dropped_other) / static_cast<double>(sent) : 0.0;
    }
};
// Queue overflow and AQM drops are congestion; random, burst and trace-outage
// drops are not.
PathMetrics path_metrics(const emu::EmuStats& s);

struct IntervalRow {
    double begin_s = 0;
    double end_s = 0;
    std::uint64_t bytes_sent = 0;      // new stream bytes the sender put on the wire
    std::uint64_t bytes_received = 0;  // delivered to the receiving application
    std::uint64_t retransmits = 0;     // packets carrying retransmitted data
    std::uint64_t cwnd = 0;            // at the end of the interval
    double srtt_ms = 0;
};

// How long after the sender's send phase ended the receiver read its last
// byte (queue drain plus one-way delay), from both sides' own start of the
// test; never negative.
double drain_seconds(double sender_end_s, double receiver_end_s);

// One controller's run of a comparison (virtual time or real sockets).
struct RunResult {
    std::string controller;  // the entry, name[:key=value...]
    unsigned repeat = 0;
    std::uint64_t seed = 0;
    std::uint64_t sender_bytes = 0;
    double sender_seconds = 0;
    std::uint64_t receiver_bytes = 0;
    double receiver_seconds = 0;
    std::uint64_t retransmits = 0;
    std::uint64_t packets_lost = 0;
    std::uint64_t spurious_losses = 0;
    std::string ecn_state = "disabled";  // the sender's ECN validation outcome (RFC 9000 §13.4.2)
    std::uint64_t ecn_ce_reported = 0;   // CE marks the receiver reported back (ACK_ECN)
    bool byte_exact = false;
    std::string error;  // empty when the run completed
    std::vector<IntervalRow> intervals;  // the send phase only, as iperf3's sender table
    PathMetrics path;

    // Bits per second the sender put on the wire during its send phase.
    [[nodiscard]] double sender_bitrate() const;
    // Bits per second delivered to the receiving application, over the time
    // from the test start to the last byte: what controllers are ranked on.
    [[nodiscard]] double goodput() const;
    [[nodiscard]] double drain_seconds() const;
};

// One timed bulk transfer through a profile in virtual time (ndm-compare --virtual).
struct VirtualRunSpec {
    std::string cc = "cubic";  // a controller entry: name[:key=value...] (cc::parse_entry)
    emu::Profile profile;
    std::size_t packet_size = 1452;
    double seconds = 10;        // sending time
    double interval = 1;        // seconds per sample
    std::uint64_t seed = 1;     // emulator streams and connection seeds
    unsigned repeat = 0;        // only labels the result
    double idle_timeout_s = 120;
    LossDetection loss_detection = LossDetection::adaptive;  // the sender's
};
struct VirtualRun {
    RunResult result;
    sim::TransferResult transfer;  // every sample, the drain after the send phase included
};
// Common random numbers: every controller run with one seed sees the same
// impairment streams. Throws std::invalid_argument on a bad controller or
// spec (the message the tools print).
VirtualRun run_virtual(const VirtualRunSpec& spec,
                       const std::function<void(const sim::IntervalSample&)>& on_sample = {});

// ---------------------------------------------------------------- real sockets

// One timed bulk transfer over real UDP sockets on loopback (ndm-compare
// without --virtual; ndm.run_live in Python): a server Endpoint on its own
// thread, a client Endpoint with the profile's emulator on its egress (up)
// and ingress (down) path, as netem on a loopback interface would be. The
// same controllers as in virtual time, Python ones included, at wall-clock
// speed: the numbers vary from run to run with the machine's load.
struct LiveRunSpec {
    std::string cc = "cubic";  // the sender's controller entry: name[:key=value...]
    emu::Profile profile;      // the emulator on both directions; a default Profile impairs nothing
    std::size_t packet_size = 1452;
    double seconds = 10;       // sending time
    double interval = 1;       // seconds per sample
    std::uint64_t seed = 1;    // emulator streams, connection seeds and the payload
    unsigned repeat = 0;       // only labels the result
    double idle_timeout_s = 120;
    LossDetection loss_detection = LossDetection::adaptive;  // the sender's
    IoBackend backend = IoBackend::automatic;
    // Both ends' TLS; by default loopback_tls().
    std::optional<TlsOptions> tls;
    std::function<void(double elapsed_s)> progress;  // called after each sample
};
// TLS for a server and a client in one process: a self-signed certificate
// for localhost and 127.0.0.1, made once per process, that the options both
// present and pin.
TlsOptions loopback_tls();
// Throws std::invalid_argument on a bad controller entry; a run that fails
// (the handshake, or data not arriving) says so in RunResult::error.
RunResult run_live(const LiveRunSpec& spec);

// ---------------------------------------------------------------- competing flows

// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one
// flow takes everything; 1 for an empty or all-zero sample.
double jain_index(const std::vector<double>& x);

struct CompeteFlow {
    std::string controller;  // the entry (name[:options])
    double start_s = 0;
    std::vector<double> interval_bps;  // goodput per interval, from the run's start
    double goodput_bps = 0;            // over the flow's whole sending time
    double last_half_bps = 0;          // over the last half of the run
    std::uint64_t retransmits = 0;
    bool byte_exact = false;
    std::string error;
};

struct CompeteRun {
    std::uint64_t seed = 0;
    double interval_s = 1;
    std::vector<CompeteFlow> flows;
    double jain_last_half = 0;
    PathMetrics path;  // the shared bottleneck (sender → receiver direction)
};

struct CompeteSpec {
    std::string profile;  // preset, spec string or JSON file
    std::vector<std::string> controllers;
    double seconds = 60;
    double stagger_s = 0;  // flow k starts at k·stagger
    double interval_s = 1;
    std::size_t packet_size = 1452;
    double idle_timeout_s = 120;  // both sides of every flow
    LossDetection loss_detection = LossDetection::adaptive;  // every sender's
};

// One run of the controllers sharing the profile's sender → receiver
// bottleneck (sim::run_shared_path), each flow with its own return path.
// Throws std::invalid_argument on a bad profile or controller.
CompeteRun run_compete(const CompeteSpec& spec, std::uint64_t seed);

}  // namespace ndm::experiment

#pragma GCC visibility pop
