// How long ndm-recv lets one test hold the server: iperf3's --rcv-timeout
// and --snd-timeout (a direction without progress ends the test) and a
// bound on the whole test, its -t plus a grace, as iperf3's server timer
// (iperf_server_api.c: duration + omit + a 40 s grace). The QUIC idle
// timeout (RFC 9000 §10.1) cannot bound a test: any ack-eliciting packet
// of the client restarts it, a PING a second included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "ndm/time.hpp"
#include "tools/perf/perf_session.hpp"

namespace ndm::tools {

struct TestLimits {
    // iperf3's --rcv-timeout: no new byte of the client's stream for this
    // long (before its FIN) ends the test. iperf3's default, 2 minutes.
    std::uint64_t rcv_timeout_ms = 120000;
    // iperf3's --snd-timeout: what this side sends (-R, --bidir) not
    // acknowledged for this long, or held back by the client's flow control
    // for this long, ends the test. iperf3 defers to the kernel's TCP
    // (TCP_USER_TIMEOUT unset: some 15 minutes of retransmissions); ndm has
    // no such timer beneath it, so the same 2 minutes as --rcv-timeout.
    std::uint64_t snd_timeout_ms = 120000;
    // After the test's own end (-O plus -t; with -n/-k, max_test_seconds)
    // the client has this long for the rest (the drain, the reports, its
    // close) before the server ends the test. iperf3's server: 40 s.
    double grace_seconds = 40;
    // The longest send phase a test may ask for (-t, refused beyond it) or
    // take (-n/-k, ended at it). Default: the longest -t a client may send.
    double max_test_seconds = kMaxSeconds;
};

// --rcv-timeout, --snd-timeout, --test-grace, --max-test-time.
void add_test_limit_options(CLI::App& app, TestLimits& limits);

// When a test that started at `start` with parameters `p` is over whatever
// the client does.
Instant test_deadline(const TestParams& p, Instant start, const TestLimits& limits);
// Why the server refuses a test of these parameters (a -t longer than
// max_test_seconds), or nothing.
std::optional<std::string> refuse_test(const TestParams& p, const TestLimits& limits);

// The last time a direction made progress. note() is called with a counter
// that only grows (bytes read, bytes acknowledged) and whether the direction
// is waiting on the peer (bytes unacknowledged, or held back by its flow
// control): a grown counter, or nothing to wait for, is progress.
class ProgressWatch {
public:
    void start(Instant now) { last_ = now; }
    void note(Instant now, std::uint64_t counter, bool waiting) {
        if (counter != counter_ || !waiting) last_ = now;
        counter_ = counter;
    }
    [[nodiscard]] bool stalled(Instant now, std::uint64_t timeout_ms) const {
        return now - last_ >= std::chrono::milliseconds(timeout_ms);
    }

private:
    Instant last_{};
    std::uint64_t counter_ = 0;
};

// "host:port" or "[v6]:port" (Endpoint::local_address, peer_address) as
// iperf3 prints a peer: the host without brackets, and the port.
struct HostPort {
    std::string host;
    std::uint16_t port = 0;
};
HostPort split_host_port(const std::string& address);

}  // namespace ndm::tools
