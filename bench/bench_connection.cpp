// The sans-I/O protocol core alone: one bulk stream between two Connections
// that hand each other datagrams in memory (no sockets, no loss, a virtual
// clock), so that what is measured is the core's own cost per byte: stream
// buffers, packet assembly and parsing, CRC32C, ACK and loss processing.
//   build/bench/bench_connection [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/sim.hpp"

namespace {

using namespace std::chrono_literals;
using ndm::Connection;
using ndm::ConnectionConfig;
using ndm::Instant;

// Moves every datagram `from` has to send (at most `burst`, like a GSO batch) into `to`.
std::size_t pump(Connection& from, Connection& to, std::vector<std::uint8_t>& buf, Instant now,
                 std::size_t burst) {
    std::size_t n = 0;
    while (n < burst) {
        const std::size_t len = from.poll_datagram(buf, now);
        if (len == 0) break;
        to.on_datagram({buf.data(), len}, now);
        ++n;
    }
    return n;
}

void timers(Connection& c, Instant now) {
    if (c.next_timeout() <= now) c.on_timeout(now);
}

// Transfers `bytes` on a fresh connection pair; returns the bytes read.
std::uint64_t transfer(std::uint64_t bytes, std::size_t mds) {
    ConnectionConfig cfg;
    cfg.max_datagram_size = mds;
    cfg.pacing = false;  // the virtual clock is coarse; the window alone limits sending
    Instant now{};
    std::vector<std::uint8_t> buf(65536);
    std::vector<std::uint8_t> chunk(1 << 20), sink(1 << 20);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::uint8_t>(i * 131 + 7);

    ConnectionConfig scfg = cfg;
    scfg.seed = 2;
    ndm::sim::simulation_tls(cfg, scfg);
    auto client = Connection::connect(cfg, now);
    const std::size_t first = client->poll_datagram(buf, now);
    auto server = Connection::accept(scfg, {buf.data(), first}, now);
    if (!server) throw std::runtime_error("bench_connection: handshake refused");
    for (int i = 0; i < 8 && !client->is_established(); ++i) {
        pump(*server, *client, buf, now, 64);
        pump(*client, *server, buf, now, 64);
    }
    const auto sid = client->open_stream();
    if (!sid) throw std::runtime_error("bench_connection: no stream");

    std::uint64_t written = 0, read = 0;
    std::size_t off = 0;
    for (int round = 0; read < bytes; ++round) {
        if (round > 50'000'000) throw std::runtime_error("bench_connection: transfer stalled");
        while (written < bytes) {
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size() - off, bytes - written));
            const std::size_t n = client->write(*sid, {chunk.data() + off, want}, written + want == bytes);
            written += n;
            off = (off + n) % chunk.size();
            if (n < want) break;
        }
        pump(*client, *server, buf, now, 45);
        while (auto ev = server->poll_event()) {
            if (const auto* r = std::get_if<ndm::event::StreamReadable>(&*ev)) {
                while (const std::size_t n = server->read(r->id, sink)) read += n;
            }
        }
        while (client->poll_event()) {
        }
        pump(*server, *client, buf, now, 45);
        now += 20us;
        timers(*client, now);
        timers(*server, now);
    }
    return read;
}

void BM_BulkTransfer(benchmark::State& state) {
    const auto bytes = static_cast<std::uint64_t>(state.range(0)) << 20;
    const auto mds = static_cast<std::size_t>(state.range(1));
    for (auto _ : state) benchmark::DoNotOptimize(transfer(bytes, mds));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
// 256 MiB per connection (its buffers reach their full size), 1452 B and 64 KB datagrams;
// CPU time (the machine is shared).
BENCHMARK(BM_BulkTransfer)->Args({256, 1452})->Args({256, 65507})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
