// Congestion response end to end in virtual time: a burst of losses inside
// one window reduces Reno's window exactly once (RFC 9002 §7.3.2), and a
// controller registered from outside the library drives a real connection.
#include <doctest/doctest.h>

#include "ndm/cc.hpp"
#include "ndm/sim.hpp"

using namespace ndm;
using namespace std::chrono_literals;

namespace {

// Drops datagrams number [first, first + count) of one direction. It does
// not model ECN: datagrams go through not-ECT.
class BurstDropLink final : public Link {
public:
    BurstDropLink(sim::SimpleLinkConfig cfg, std::uint64_t first, std::uint64_t count)
        : inner_(std::move(cfg)), first_(first), count_(count) {}
    void send(const DatagramView& d, Instant now) override {
        std::uint64_t i = n_++;
        if (i >= first_ && i < first_ + count_) return;
        inner_.send({d.bytes}, now);
    }
    [[nodiscard]] Instant next_delivery() const override { return inner_.next_delivery(); }
    bool deliver(Instant now, Datagram& out) override { return inner_.deliver(now, out); }
    [[nodiscard]] LinkStats stats() const override { return inner_.stats(); }

private:
    sim::SimpleLink inner_;
    std::uint64_t first_, count_, n_ = 0;
};

}  // namespace

TEST_CASE("a burst of losses in one window halves Reno's cwnd exactly once") {
    sim::SimpleLinkConfig path;
    path.delay = 20ms;
    path.rate_bps = 100e6;
    path.queue_packets = 10000;
    sim::Simulator s(std::make_unique<BurstDropLink>(path, 200, 6), std::make_unique<sim::SimpleLink>(path));
    ConnectionConfig cc, sc;
    sc.seed = 2;
    Connection& c = s.connect(cc, sc);
    REQUIRE(s.run_until([&] { return c.is_established(); }, Instant{} + 5s));
    auto id = *c.open_stream();
    std::vector<std::uint8_t> chunk(1 << 20, 0x5a);
    std::uint64_t prev = c.stats(s.now()).cwnd;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> decreases;
    std::uint64_t lost_seen = 0;
    s.run_until(
        [&] {
            if (c.stream_send_capacity(id) > 0) c.write(id, chunk);
            if (auto* srv = s.server()) {
                std::vector<std::uint8_t> sink(1 << 16);
                while (srv->read(id, sink) > 0) {
                }
            }
            auto st = c.stats(s.now());
            if (st.cwnd < prev) decreases.emplace_back(prev, st.cwnd);
            prev = st.cwnd;
            lost_seen = st.packets_lost;
            return s.now() > Instant{} + 3s;
        },
        Instant{} + 10s);
    CHECK(lost_seen >= 6);
    REQUIRE(decreases.size() == 1);
    // ssthresh = cwnd * 0.5, rounded to the byte.
    CHECK(decreases[0].second * 2 >= decreases[0].first - 1);
    CHECK(decreases[0].second * 2 <= decreases[0].first + 1);
}

namespace {
// A fixed-window controller: the smallest possible user-defined plug-in.
class FixedWindow final : public cc::Controller {
public:
    explicit FixedWindow(std::uint64_t w) : w_(w) {}
    void on_ack(const cc::AckEvent&) override { ++acks; }
    void on_congestion_event(const cc::CongestionEvent&) override {}
    [[nodiscard]] std::uint64_t cwnd() const override { return w_; }
    [[nodiscard]] std::string_view state() const override { return "fixed"; }
    [[nodiscard]] std::string_view name() const override { return "test-fixed"; }
    static inline int acks = 0;

private:
    std::uint64_t w_;
};
}  // namespace

TEST_CASE("a controller registered from outside the library drives a transfer") {
    cc::register_controller({"test-fixed", "fixed window for tests", [](const cc::Params&, const cc::Options& o) {
                                 return std::make_unique<FixedWindow>(std::stoull(o.at("window")));
                             }});
    sim::TransferSpec spec;
    spec.client.cc = "test-fixed";
    spec.client.cc_options = "window=100000";
    spec.client_to_server.delay = spec.server_to_client.delay = 25ms;
    spec.bytes = 4u << 20;
    auto r = sim::run_transfer(spec);
    CHECK(r.completed);
    CHECK(r.hash_match);
    CHECK(FixedWindow::acks > 0);
    CHECK(r.client_stats.cwnd == 100000);
    CHECK(r.client_stats.cc_state == "fixed");
    // At most one window per RTT: goodput is bounded by 100 kB / 50 ms = 2 MB/s.
    double rate = static_cast<double>(r.bytes_delivered) / to_seconds(r.duration);
    CHECK(rate < 2.1e6);
    CHECK(rate > 1.0e6);
}
