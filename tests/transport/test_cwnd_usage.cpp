// CwndUsage (src/transport/cwnd_usage.hpp): Linux's tcp_cwnd_validate /
// tcp_is_cwnd_limited rule, and RFC 9002 §7.8's pacing clause.
#include <doctest/doctest.h>

#include <cstdint>

#include "transport/cwnd_usage.hpp"

using ndm::transport::CwndUsage;

namespace {

constexpr std::uint64_t kMds = 1200;
constexpr std::uint64_t kInf = UINT64_MAX;  // no ssthresh: slow start

// Sends packets first_pn.. with bytes in flight growing by one MDS from `in_flight`.
std::uint64_t send_n(CwndUsage& u, std::uint64_t first_pn, int n, std::uint64_t in_flight,
                     std::uint64_t cwnd) {
    for (int i = 0; i < n; ++i) {
        in_flight += kMds;
        u.on_packet_sent({first_pn + static_cast<std::uint64_t>(i), in_flight, cwnd});
    }
    return in_flight;
}

}  // namespace

TEST_CASE("cwnd usage: nothing sent yet is not cwnd-limited, except below the slow-start floor") {
    const CwndUsage u;
    CHECK_FALSE(u.window_filled());
    CHECK(u.max_bytes_in_flight() == 0);
    CHECK_FALSE(u.cwnd_limited(12 * kMds, kInf));
    CHECK_FALSE(u.cwnd_limited(12 * kMds, 6 * kMds));
}

TEST_CASE("cwnd usage: filling the window latches cwnd-limited for one window of sends") {
    CwndUsage u;
    const std::uint64_t cwnd = 10 * kMds;
    send_n(u, 0, 10, 0, cwnd);  // pn 9 fills it
    CHECK(u.window_filled());
    CHECK(u.cwnd_limited(cwnd, 5 * kMds));        // congestion avoidance
    CHECK(u.cwnd_limited(100 * cwnd, 5 * kMds));  // whatever the window has grown to
    // ACKs of the window itself keep the latch: it was set by pn 9.
    u.on_ack(8);
    u.on_packet_sent({10, 5 * kMds, cwnd});  // not full, and the window (up to pn 9) is not acked
    CHECK(u.window_filled());
    u.on_ack(9);
    CHECK(u.window_filled());  // decided at the next send, as Linux does
    u.on_packet_sent({11, 3 * kMds, cwnd});
    CHECK_FALSE(u.window_filled());
    CHECK(u.max_bytes_in_flight() == 3 * kMds);
    CHECK_FALSE(u.cwnd_limited(cwnd, 5 * kMds));
}

TEST_CASE("cwnd usage: slow start may grow to twice the most in flight, no further") {
    CwndUsage u;
    send_n(u, 0, 8, 0, 100 * kMds);  // at most 8 packets in flight, far below cwnd
    CHECK_FALSE(u.window_filled());
    CHECK(u.max_bytes_in_flight() == 8 * kMds);
    CHECK(u.cwnd_limited(15 * kMds, kInf));
    CHECK(u.cwnd_limited(16 * kMds - 1, kInf));
    CHECK_FALSE(u.cwnd_limited(16 * kMds, kInf));
    CHECK_FALSE(u.cwnd_limited(16 * kMds + 1, kInf));
    // Congestion avoidance (cwnd >= ssthresh) never grows on an unused window.
    CHECK_FALSE(u.cwnd_limited(15 * kMds, 15 * kMds));
    CHECK_FALSE(u.cwnd_limited(15 * kMds, 2 * kMds));
    // No overflow near the top.
    CHECK_FALSE(u.cwnd_limited(UINT64_MAX - 1, kInf));
}

TEST_CASE("cwnd usage: an unlatched window keeps its maximum until it is acknowledged") {
    CwndUsage u;
    const std::uint64_t cwnd = 100 * kMds;
    std::uint64_t in_flight = send_n(u, 0, 20, 0, cwnd);  // max 20 packets, window ends at pn 19
    CHECK(u.max_bytes_in_flight() == 20 * kMds);
    u.on_ack(10);  // half of it acked, fewer in flight now
    in_flight -= 11 * kMds;
    u.on_packet_sent({20, in_flight + kMds, cwnd});
    CHECK(u.max_bytes_in_flight() == 20 * kMds);  // the window (to pn 19) is not over
    u.on_ack(19);
    u.on_packet_sent({21, 2 * kMds, cwnd});  // a new window starts from what is in flight now
    CHECK(u.max_bytes_in_flight() == 2 * kMds);
    u.on_packet_sent({22, 3 * kMds, cwnd});  // and grows with it
    CHECK(u.max_bytes_in_flight() == 3 * kMds);
    // A lost window end: a later packet acked ends the window too.
    u.on_ack(30);
    u.on_packet_sent({31, kMds, cwnd});
    CHECK(u.max_bytes_in_flight() == kMds);
}

TEST_CASE("cwnd usage: a send that fills the window restarts it, latched") {
    CwndUsage u;
    const std::uint64_t cwnd = 10 * kMds;
    send_n(u, 0, 4, 0, cwnd);
    CHECK_FALSE(u.window_filled());
    u.on_packet_sent({4, 11 * kMds, cwnd});  // overshoot by one packet still fills it
    CHECK(u.window_filled());
    CHECK(u.max_bytes_in_flight() == 11 * kMds);
    u.on_ack(3);  // ACKs of packets before the latch do not end it
    u.on_packet_sent({5, 2 * kMds, cwnd});
    CHECK(u.window_filled());
    u.on_ack(4);
    u.on_packet_sent({6, 2 * kMds, cwnd});
    CHECK_FALSE(u.window_filled());
}

TEST_CASE("cwnd usage: a pacing delay alone does not make the sender app-limited (RFC 9002 §7.8)") {
    const std::uint64_t cwnd = 20 * kMds;
    CwndUsage::Send s{0, 5 * kMds, cwnd};
    CHECK_FALSE(CwndUsage::fills_window(s));
    s.paced_out = true;  // the pacer delays the next packet...
    s.sendable = 14 * kMds;
    CHECK_FALSE(CwndUsage::fills_window(s));  // ...but what waits would not fill the window
    s.sendable = 15 * kMds;
    CHECK(CwndUsage::fills_window(s));  // without the delay it would have been full
    s.paced_out = false;                // data waits, the pacer lets it go: the sender is the limit
    CHECK_FALSE(CwndUsage::fills_window(s));

    CwndUsage u;
    s.paced_out = true;
    u.on_packet_sent(s);
    CHECK(u.window_filled());
    CHECK(u.cwnd_limited(cwnd, 2 * kMds));
}
