// The latency spin bit (RFC 9000 §17.4, src/transport/spin_bit.hpp): in
// virtual time over a 50 ms round trip, an observer on the path sees the bit
// of each direction flip once per round trip when both ends spin; an end that
// does not spin sends random bits; 1 connection in 16 does not spin although
// allowed; the value follows only the newest packet.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "ndm/sim.hpp"
#include "transport/spin_bit.hpp"
#include "wire/quic_header.hpp"

using namespace ndm;
using namespace std::chrono_literals;

namespace {

// A SimpleLink that notes the spin bit of each 1-RTT datagram it is given
// (the bit is not under header protection, §17.4: what a router sees).
class SpinObserver final : public Link {
public:
    struct Seen {
        Instant at;
        bool spin;
    };
    explicit SpinObserver(sim::SimpleLinkConfig cfg, std::vector<Seen>& seen) : inner_(std::move(cfg)), seen_(seen) {}
    void send(const DatagramView& d, Instant now) override {
        if (!d.bytes.empty() && (d.bytes[0] & wire::quic::kLongForm) == 0)
            seen_.push_back({now, (d.bytes[0] & wire::quic::kSpinBit) != 0});
        inner_.send(d, now);
    }
    [[nodiscard]] Instant next_delivery() const override { return inner_.next_delivery(); }
    bool deliver(Instant now, Datagram& out) override { return inner_.deliver(now, out); }
    [[nodiscard]] LinkStats stats() const override { return inner_.stats(); }

private:
    sim::SimpleLink inner_;
    std::vector<Seen>& seen_;
};

struct SpinRun {
    std::vector<SpinObserver::Seen> up, down;
    bool client_spins = false, server_spins = false;
};

// A 3-second transfer client to server over 25 ms each way, no bottleneck:
// the round trip stays 50 ms (a queue would lengthen it, and the spin bit
// would measure that, as it should). The application writes at 20 Mbit/s,
// about 1700 packets a second, enough to carry an edge every round trip; a
// sender limited by nothing would grow to gigabits and make the test slow.
SpinRun run(std::uint64_t client_seed, std::uint64_t server_seed, bool client_allowed = true) {
    SpinRun r;
    sim::SimpleLinkConfig path;
    path.delay = 25ms;
    sim::Simulator s(std::make_unique<SpinObserver>(path, r.up), std::make_unique<SpinObserver>(path, r.down));
    ConnectionConfig cc, sc;
    cc.seed = client_seed;
    sc.seed = server_seed;
    cc.spin_bit = client_allowed;
    Connection& c = s.connect(cc, sc);
    REQUIRE(s.run_until([&] { return c.is_established(); }, Instant{} + 5s));
    const StreamId id = *c.open_stream();
    const std::vector<std::uint8_t> chunk(1200, 0x5a);
    std::vector<std::uint8_t> sink(1 << 16);
    const Instant start = s.now();
    constexpr double kBytesPerSecond = 20e6 / 8;
    double written = 0;
    s.run_until(
        [&] {
            while (written < kBytesPerSecond * to_seconds(s.now() - start) + chunk.size()) {
                const std::size_t n = c.write(id, chunk);
                if (n == 0) break;
                written += static_cast<double>(n);
            }
            if (Connection* srv = s.server())
                while (srv->read(id, sink) > 0) {
                }
            return s.now() > Instant{} + 3s;
        },
        Instant{} + 10s);
    r.client_spins = c.stats(s.now()).spin_bit;
    r.server_spins = s.server()->stats(s.now()).spin_bit;
    return r;
}

// The times between the bit's changes in one direction.
std::vector<Duration> edges(const std::vector<SpinObserver::Seen>& seen) {
    std::vector<Duration> gaps;
    std::optional<Instant> last_edge;
    for (std::size_t i = 1; i < seen.size(); ++i) {
        if (seen[i].spin == seen[i - 1].spin) continue;
        if (last_edge) gaps.push_back(seen[i].at - *last_edge);
        last_edge = seen[i].at;
    }
    return gaps;
}

// Seeds of two connections that both spin (15 in 16 do).
std::pair<std::uint64_t, std::uint64_t> spinning_seeds() {
    for (std::uint64_t c = 1;; ++c) {
        const SpinRun r = run(c, 1000 + c);
        if (r.client_spins && r.server_spins) return {c, 1000 + c};
    }
}

}  // namespace

TEST_CASE("spin bit: both ends spin, and each direction's bit flips once per 50 ms round trip") {
    const auto [cs, ss] = spinning_seeds();
    const SpinRun r = run(cs, ss);
    REQUIRE(r.client_spins);
    REQUIRE(r.server_spins);
    for (const auto* dir : {&r.up, &r.down}) {
        const std::vector<Duration> gaps = edges(*dir);
        // About 3 s / 50 ms edges; each at least one round trip apart (no
        // faster flips), and at most one round trip plus the delayed ACKs
        // and queueing a round can add.
        CHECK(gaps.size() >= 40);
        CHECK(gaps.size() <= 62);
        std::vector<Duration> sorted = gaps;
        std::sort(sorted.begin(), sorted.end());
        INFO("gaps " << gaps.size() << ", min " << std::chrono::duration<double, std::milli>(sorted.front()).count()
                     << " ms, median " << std::chrono::duration<double, std::milli>(sorted[sorted.size() / 2]).count()
                     << " ms, max " << std::chrono::duration<double, std::milli>(sorted.back()).count() << " ms");
        CHECK(sorted.front() >= 50ms);
        CHECK(sorted[sorted.size() / 2] <= 60ms);
        CHECK(sorted.back() <= 80ms);
    }
}

TEST_CASE("spin bit: a side that does not spin sends random bits, and the signal is gone") {
    const auto [cs, ss] = spinning_seeds();
    const SpinRun r = run(cs, ss, false);
    CHECK_FALSE(r.client_spins);
    CHECK(r.server_spins);
    // Random bits flip about every other packet, far more often than once
    // per round trip.
    const std::vector<Duration> gaps = edges(r.up);
    CHECK(gaps.size() > r.up.size() / 4);
    std::size_t ones = 0;
    for (const auto& s : r.up) ones += s.spin ? 1 : 0;
    CHECK(ones > r.up.size() * 4 / 10);
    CHECK(ones < r.up.size() * 6 / 10);
}

TEST_CASE("spin bit: 1 connection in 16 does not spin although allowed, and the value follows the newest packet only") {
    int off = 0;
    for (std::uint64_t seed = 0; seed < 16'000; ++seed)
        off += transport::SpinBit(true, true, util::splitmix64(seed)).participates() ? 0 : 1;
    CHECK(off > 900);   // 1000 expected
    CHECK(off < 1100);
    CHECK_FALSE(transport::SpinBit(true, false, 1).participates());

    std::uint64_t seed = 0;
    while (!transport::SpinBit(true, true, seed).participates()) ++seed;
    transport::SpinBit client(true, true, seed), server(false, true, seed);
    CHECK_FALSE(client.next());             // starts at 0
    server.on_received(false, true);        // the server reflects the bit
    CHECK_FALSE(server.next());
    client.on_received(false, true);        // the client inverts it
    CHECK(client.next());
    client.on_received(true, false);        // a reordered, older packet changes nothing
    CHECK(client.next());
    server.on_received(true, true);
    CHECK(server.next());
    server.reset();                         // a new connection ID: back to 0
    CHECK_FALSE(server.next());
}
