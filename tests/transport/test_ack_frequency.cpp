// The ACK frequency extension (draft-ietf-quic-ack-frequency-14) between two
// ndm connections: what it saves, that transfers stay byte-exact and timely
// under loss, that it is used only when both sides run it, and that a peer's
// invalid requests close the connection. The receiver's rules are tested in
// test_ack_tracker.cpp, the frames' encoding in test_frame.cpp.
#include <doctest/doctest.h>

#include <chrono>

#include "connection_pair.hpp"
#include "ndm/sim.hpp"
#include "quic_test_util.hpp"
#include "sim_spec.hpp"
#include "wire/frame.hpp"

using namespace std::chrono_literals;
using namespace ndm;
using ndm::sim::TransferResult;
using ndm::sim::TransferSpec;

namespace {

constexpr std::uint64_t k16MB = 16u << 20;

// 100 Mbit/s, 10 ms one way, a queue of about one bandwidth-delay product;
// `loss` each way.
TransferSpec spec(bool client_af, bool server_af, double loss = 0) {
    TransferSpec s = test::hundred_mbit_spec(k16MB, "cubic", loss);
    s.client.ack_frequency = client_af;
    s.server.ack_frequency = server_af;
    return s;
}

TransferResult run(const TransferSpec& s) {
    const TransferResult r = sim::run_transfer(s);
    INFO("failure: ", r.failure);
    REQUIRE(r.completed);
    CHECK(r.hash_match);
    CHECK(r.bytes_delivered == k16MB);
    MESSAGE("ack_frequency ", s.client.ack_frequency, "/", s.server.ack_frequency, ", loss ",
            s.client_to_server.loss, ": ", to_seconds(r.duration), " s, ", r.client_stats.packets_received,
            " packets to the sender for ", r.client_stats.packets_sent, " sent, ", r.client_stats.packets_lost,
            " lost");
    return r;
}

std::uint64_t next_pn(const Connection& from, Instant now) { return from.stats(now).packets_sent + 5; }

// A well-formed 1-RTT packet from the client carrying `frames`.
std::vector<std::uint8_t> from_client(test::ConnectionPair& p, const std::vector<wire::Frame>& frames) {
    static std::uint64_t extra = 0;  // each packet its own number
    return test::seal(*p.client, transport::PacketSpace::application, next_pn(*p.client, p.now) + extra++,
                      test::encode(frames));
}

}  // namespace

TEST_CASE("ack frequency: both sides on, the data sender gets a fraction of the ACKs and no less goodput") {
    const TransferResult rfc = run(spec(false, false));
    const TransferResult af = run(spec(true, true));
    // One ACK per cwnd/8 packets (at most 32) instead of one per 2.
    CHECK(af.client_stats.packets_received * 4 < rfc.client_stats.packets_received);
    CHECK(to_seconds(af.duration) < to_seconds(rfc.duration) * 1.1);
}

TEST_CASE("ack frequency: with 0.2 % loss each way the transfer stays byte-exact and about as fast") {
    const TransferResult rfc = run(spec(false, false, 0.002));
    const TransferResult af = run(spec(true, true, 0.002));
    CHECK(af.client_stats.packets_lost > 0);
    CHECK(af.client_stats.packets_received < rfc.client_stats.packets_received);
    // Loss is still reported at once (reordering threshold 3 = the packet threshold).
    CHECK(to_seconds(af.duration) < to_seconds(rfc.duration) * 1.25);
}

TEST_CASE("ack frequency: used only when both sides run it") {
    const TransferResult rfc = run(spec(false, false));
    // The server does not advertise min_ack_delay: the client asks for nothing.
    const TransferResult client_only = run(spec(true, false));
    // The client asks for nothing: the server's support changes nothing.
    const TransferResult server_only = run(spec(false, true));
    for (const TransferResult* r : {&client_only, &server_only}) {
        CHECK(r->client_stats.packets_received * 10 >= rfc.client_stats.packets_received * 9);
    }
}

TEST_CASE("ack frequency: a requested max ack delay below our min_ack_delay is a PROTOCOL_VIOLATION") {
    test::ConnectionPair p;
    p.client_cfg.ack_frequency = p.server_cfg.ack_frequency = true;
    REQUIRE(p.handshake());
    // Valid requests and IMMEDIATE_ACK are taken.
    p.server->on_datagram(from_client(p, {wire::AckFrequencyFrame{0, 10, 25000, 3}, wire::ImmediateAckFrame{}}), p.now);
    CHECK(p.server->state() == ConnectionState::established);
    // 1 ms is ndm's min_ack_delay; 999 us is below it (ack-frequency-14 §4).
    p.server->on_datagram(from_client(p, {wire::AckFrequencyFrame{1, 10, 999, 3}}), p.now);
    CHECK(p.server->state() == ConnectionState::closing);
    CHECK(p.server->close_info().code == static_cast<std::uint64_t>(CloseCode::protocol_violation));
    CHECK(p.server->close_info().reason.find("below our min_ack_delay of 1000 us") != std::string::npos);
}
