// ndm-recv's bounds on a test (tools/perf/test_limits.hpp): the deadline
// of -t and -n tests, the refusal of a -t beyond --max-test-time, the
// progress watch behind --rcv-timeout/--snd-timeout, and the peer address
// as iperf3 prints it.
#include <doctest/doctest.h>

#include "tools/perf/test_limits.hpp"

using namespace ndm;
using namespace std::chrono_literals;

TEST_CASE("test limits: a -t test ends -O plus -t plus the grace after its start, a -n test --max-test-time plus the grace") {
    tools::TestLimits l;
    l.grace_seconds = 2;
    l.max_test_seconds = 30;
    const Instant t0 = Instant{} + 100s;
    tools::TestParams p;
    p.seconds = 10;
    p.omit = 3;
    CHECK(tools::test_deadline(p, t0, l) == t0 + 15s);
    p.omit = 0;
    p.bytes = 1 << 20;
    CHECK(tools::test_deadline(p, t0, l) == t0 + 32s);
    // Defaults: iperf3's 40 s grace, a day of sending at most.
    const tools::TestLimits d;
    CHECK(d.grace_seconds == 40);
    CHECK(d.rcv_timeout_ms == 120000);
    CHECK(d.max_test_seconds == tools::kMaxSeconds);
}

TEST_CASE("test limits: a -t beyond --max-test-time is refused with both numbers, a -n test is not") {
    tools::TestLimits l;
    l.max_test_seconds = 5;
    tools::TestParams p;
    p.seconds = 5;
    CHECK_FALSE(tools::refuse_test(p, l));
    p.seconds = 10;
    const auto why = tools::refuse_test(p, l);
    REQUIRE(why);
    CHECK(*why == "the test asks for 10 s; this server takes at most 5 s (--max-test-time)");
    p.bytes = 1000;
    CHECK_FALSE(tools::refuse_test(p, l));
}

TEST_CASE("test limits: the progress watch stalls only while waiting on the peer without its counter growing") {
    tools::ProgressWatch w;
    const Instant t0 = Instant{} + 1s;
    w.start(t0);
    w.note(t0 + 500ms, 0, true);
    CHECK_FALSE(w.stalled(t0 + 900ms, 1000));
    CHECK(w.stalled(t0 + 1000ms, 1000));  // nothing since the start
    w.note(t0 + 1100ms, 10, true);          // the counter grew: progress
    CHECK_FALSE(w.stalled(t0 + 2000ms, 1000));
    w.note(t0 + 2500ms, 10, false);  // nothing to wait for (an idle -b sender): progress too
    CHECK_FALSE(w.stalled(t0 + 3000ms, 1000));
    w.note(t0 + 3000ms, 10, true);
    CHECK(w.stalled(t0 + 3500ms, 1000));
}

TEST_CASE("test limits: an endpoint's address splits into iperf3's host and port") {
    const auto v4 = tools::split_host_port("127.0.0.1:5201");
    CHECK(v4.host == "127.0.0.1");
    CHECK(v4.port == 5201);
    const auto v6 = tools::split_host_port("[2001:db8::1]:443");
    CHECK(v6.host == "2001:db8::1");
    CHECK(v6.port == 443);
    CHECK(tools::split_host_port("").host.empty());
    CHECK(tools::split_host_port("").port == 0);
}
