// Stream scheduling end to end in virtual time (src/transport/stream_set's
// order, ndm::StreamPriority): a small stream written beside a bulk one on
// a 50 ms path is not held behind the bulk stream's backlog, and a lower
// urgency defers it behind that backlog.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cc_test_util.hpp"
#include "ndm/connection.hpp"
#include "ndm/sim.hpp"

using namespace std::chrono_literals;
using ndm::Connection;
using ndm::Instant;
using ndm::StreamId;
using ndm::test::at;

namespace {

constexpr std::uint64_t kBulk = 200u << 20;
constexpr std::size_t kSmall = 1024;
constexpr auto kRtt = 50ms;

// A client sending a 200 MB generated stream to a server that reads
// everything, over 20 Mbit/s with 25 ms each way and a droptail queue of
// about one bandwidth-delay product (86 datagrams; 100).
struct BulkPath {
    ndm::sim::Simulator sim;
    StreamId bulk = 0;
    std::uint64_t bulk_written = 0;
    std::uint64_t bulk_read = 0;
    std::vector<std::uint8_t> scratch = std::vector<std::uint8_t>(1 << 16);
    std::vector<std::uint64_t> read_of = std::vector<std::uint64_t>(64, 0);  // per stream index

    static std::unique_ptr<ndm::Link> link(double rate_bps, std::uint64_t seed) {
        ndm::sim::SimpleLinkConfig c;
        c.delay = kRtt / 2;
        c.rate_bps = rate_bps;
        c.queue_packets = 100;
        c.seed = seed;
        return std::make_unique<ndm::sim::SimpleLink>(c);
    }

    BulkPath() : sim(link(20e6, 1), link(0, 2)) {
        ndm::ConnectionConfig client, server;
        server.seed = 2;
        sim.connect(client, server);
        REQUIRE(sim.run_until([&] { return sim.client()->is_established() && sim.server() &&
                                           sim.server()->is_established(); },
                              at(5s)));
        Connection& c = *sim.client();
        bulk = *c.open_stream();
        REQUIRE(c.set_stream_source(bulk, [](std::uint64_t off, std::span<std::uint8_t> out) {
            for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>((off + i) * 7);
        }));
    }

    // The application's turn: the bulk stream topped up, everything readable read.
    void serve() {
        Connection& c = *sim.client();
        if (bulk_written < kBulk) {
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBulk - bulk_written, 1u << 20));
            bulk_written += c.generate(bulk, want, bulk_written + want == kBulk);
        }
        Connection& s = *sim.server();
        while (s.poll_event()) {
        }
        for (StreamId id = 0; id < 4 * read_of.size(); id += 4)
            while (const std::size_t n = s.read(id, scratch)) read_of[id / 4] += n;
        bulk_read = read_of[bulk / 4];
        sim.flush();
    }

    // Runs the application for `d` of virtual time.
    void run_for(ndm::Duration d) {
        const Instant until = sim.now() + d;
        sim.run_until([&] {
            serve();
            return false;
        }, until);
    }

    // Writes kSmall bytes and the FIN on a new stream of the given
    // priority; the virtual time until the server has read all of it.
    std::optional<ndm::Duration> small_stream(ndm::StreamPriority priority, ndm::Duration limit) {
        Connection& c = *sim.client();
        const StreamId small = *c.open_stream();
        c.set_stream_priority(small, priority);
        const std::vector<std::uint8_t> data(kSmall, 0x5a);
        REQUIRE(c.write(small, data, true) == kSmall);
        sim.flush();
        const Instant written = sim.now();
        const bool done = sim.run_until([&] {
            serve();
            return read_of[small / 4] == kSmall && sim.server()->stream_finished(small);
        }, written + limit);
        if (!done) return std::nullopt;
        return sim.now() - written;
    }
};

}  // namespace

TEST_CASE("sim: a 1 KB stream written beside a 200 MB one has its last byte read within 3 RTTs (50 ms path)") {
    BulkPath p;
    p.run_for(3s);  // the bulk stream fills the window and the bottleneck's queue
    const std::uint64_t backlog = p.bulk_written - p.bulk_read;
    REQUIRE(backlog > (4u << 20));  // megabytes written and not yet delivered
    const auto took = p.small_stream({}, 10s);
    REQUIRE(took.has_value());
    MESSAGE("1 KB beside ", backlog >> 20, " MiB of backlog: last byte read after ", ndm::to_seconds(*took) * 1e3,
            " ms (RTT 50 ms, up to 58 ms of queue)");
    CHECK(*took <= 3 * kRtt);
    // The bulk stream kept going meanwhile, and keeps going.
    const std::uint64_t before = p.bulk_read;
    p.run_for(1s);
    CHECK(p.bulk_read > before + (1u << 20));
}

TEST_CASE("sim: a lower urgency waits behind the bulk stream's backlog, a higher one goes first") {
    BulkPath p;
    p.run_for(2s);
    // Urgency 0 is ahead of the bulk stream (urgency 3): as fast as incremental.
    const auto first = p.small_stream({0, false}, 10s);
    REQUIRE(first.has_value());
    CHECK(*first <= 3 * kRtt);
    // Urgency 7 is behind it: it goes once the bulk stream has nothing
    // sendable, which its 16 MiB send buffer does not allow for seconds.
    const auto last = p.small_stream({7, true}, 1s);
    CHECK_FALSE(last.has_value());
}
