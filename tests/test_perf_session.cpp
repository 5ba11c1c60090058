// The tools' test protocol pieces (-P/-R parameters, sender report) and the
// server-side controller switch they rely on.
#include <doctest/doctest.h>

#include "common/perf_session.hpp"
#include "connection_pair.hpp"
#include "ndm/cc.hpp"

using namespace ndm;

namespace {
// A fixed window with a recognisable state name.
class FixedWindow final : public cc::Controller {
public:
    explicit FixedWindow(std::size_t mds) : cwnd_(20 * mds) {}
    void on_ack(const cc::AckEvent&) override {}
    void on_congestion_event(const cc::CongestionEvent&) override {}
    [[nodiscard]] std::uint64_t cwnd() const override { return cwnd_; }
    [[nodiscard]] std::string_view state() const override { return "fixed_for_test"; }
    [[nodiscard]] std::string_view name() const override { return "perf-session-fixed"; }

private:
    std::uint64_t cwnd_;
};
}  // namespace

TEST_CASE("perf session: parallel and reverse parameters round-trip; bad counts are rejected") {
    tools::TestParams p;
    p.cc = "reno";
    p.streams = 4;
    p.index = 3;
    p.test_id = 0xfeedface12345678ULL;
    p.reverse = true;
    const auto q = tools::decode_test_params(tools::encode(p));
    CHECK(q.streams == 4);
    CHECK(q.index == 3);
    CHECK(q.test_id == p.test_id);
    CHECK(q.reverse);
    p.index = 4;  // outside 0..streams-1
    CHECK_THROWS_AS(tools::decode_test_params(tools::encode(p)), std::invalid_argument);
    p.streams = tools::kMaxParallel + 1;
    p.index = 0;
    CHECK_THROWS_AS(tools::decode_test_params(tools::encode(p)), std::invalid_argument);

    const tools::SenderReport r{12345, 2.5, 7, 0xabcdef};
    const auto s = tools::decode_sender_report(tools::encode(r));
    CHECK(s.bytes == 12345);
    CHECK(s.seconds == 2.5);
    CHECK(s.retransmits == 7);
    CHECK(s.hash == 0xabcdef);
    const std::vector<std::uint8_t> junk{'x'};
    CHECK_THROWS_AS(tools::decode_sender_report(junk), std::invalid_argument);
}

TEST_CASE("connection: set_congestion_control swaps the controller after the handshake") {
    test::ConnectionPair cp;
    cp.client_cfg.cc = "reno";
    cp.server_cfg.cc = "reno";
    REQUIRE(cp.handshake());
    CHECK_THROWS_AS(cp.server->set_congestion_control("no-such-controller"), std::invalid_argument);
    CHECK(cp.server->stats(cp.now).cc_state == "slow_start");  // still reno
    cc::register_controller({"perf-session-fixed", "test", [](const cc::Params& p, const cc::Options&) {
                                 return std::make_unique<FixedWindow>(p.max_datagram_size);
                             }});
    cp.server->set_congestion_control("perf-session-fixed");
    CHECK(cp.server->stats(cp.now).cc_state == "fixed_for_test");
    CHECK(cp.server->stats(cp.now).cwnd == 20 * cp.server->max_datagram_size());
    // The server sends with the new controller: a transfer completes.
    const StreamId id = *cp.server->open_stream();
    std::vector<std::uint8_t> data(200000, 7);
    REQUIRE(cp.server->write(id, data, true) == data.size());
    std::vector<std::uint8_t> buf(65536);
    std::size_t got = 0;
    REQUIRE(cp.run_until([&] {
        while (std::size_t n = cp.client->read(id, buf)) got += n;
        return cp.client->stream_finished(id);
    }));
    CHECK(got == data.size());
    CHECK(cp.server->stats(cp.now).cc_state == "fixed_for_test");
}
