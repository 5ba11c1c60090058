#include "tools/perf/test_limits.hpp"

#include "tools/cli/command_line.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace ndm::tools {

void add_test_limit_options(CLI::App& app, TestLimits& limits) {
    app.add_option("--rcv-timeout", limits.rcv_timeout_ms,
                   "milliseconds without a new byte of the client's stream (before its end) after which the server "
                   "ends the test, as iperf3's --rcv-timeout (100..86400000). A client that keeps its connection "
                   "alive without sending data (PINGs restart QUIC's idle timeout) is ended by this")
        ->capture_default_str()
        ->check(integer_in(100, 86'400'000, "milliseconds"));
    app.add_option("--snd-timeout", limits.snd_timeout_ms,
                   "milliseconds in which what this side sends (-R, --bidir) gets no new acknowledgement, or stays "
                   "held back by the client's flow control (a client that never reads), after which the server ends "
                   "the test (100..86400000). iperf3's --snd-timeout sets TCP_USER_TIMEOUT and defaults to the "
                   "kernel's (some 15 min of retransmissions); ndm has no kernel timer beneath it: 2 min by default")
        ->capture_default_str()
        ->check(integer_in(100, 86'400'000, "milliseconds"));
    app.add_option("--test-grace", limits.grace_seconds,
                   "seconds a test may run past its send phase (the client's -O plus -t; with -n/-k, --max-test-time) "
                   "for the drain, the reports and the client's close, whatever the client does; then the server "
                   "ends it (0.1..3600; iperf3's server timer allows 40 s, not settable there)")
        ->capture_default_str()
        ->check(number_in(0.1, 3600, "seconds"));
    app.add_option("--max-test-time", limits.max_test_seconds,
                   "the longest send phase a test may have: a client's -t beyond it is refused, a -n/-k test "
                   "still sending then is ended (with --test-grace after it) (1..86400; not in iperf3, whose -n "
                   "tests are bounded only by --rcv-timeout)")
        ->capture_default_str()
        ->check(number_in(1.0, kMaxSeconds, "seconds"));
}

Instant test_deadline(const TestParams& p, Instant start, const TestLimits& limits) {
    const double send_phase = p.omit + (p.bytes ? limits.max_test_seconds : p.seconds);
    return start + from_seconds(send_phase + limits.grace_seconds);
}

std::optional<std::string> refuse_test(const TestParams& p, const TestLimits& limits) {
    if (p.bytes || p.seconds <= limits.max_test_seconds) return std::nullopt;
    return fmt::format("the test asks for {:g} s; this server takes at most {:g} s (--max-test-time)", p.seconds,
                       limits.max_test_seconds);
}

HostPort split_host_port(const std::string& address) {
    HostPort hp;
    const std::size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
        hp.host = address;
        return hp;
    }
    hp.host = address.substr(0, colon);
    if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') hp.host = hp.host.substr(1, hp.host.size() - 2);
    unsigned port = 0;
    const std::string digits = address.substr(colon + 1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && port <= 65535) hp.port = static_cast<std::uint16_t>(port);
    return hp;
}

}  // namespace ndm::tools
