// Stream cancellation and priorities (RFC 9000 §3; RFC 9218's shape), in
// virtual time so that it needs no network and prints the same every run:
// a client uploads a large file on one stream and a small note on another
// at a higher priority; the server reads the note at once, decides after a
// megabyte that it wants no more of the file and stops it (STOP_SENDING),
// which the client sees as event::StreamStopped while ndm answers with
// RESET_STREAM; then the client abandons a third stream itself
// (reset_stream), which the server sees as event::StreamReset with the code
// and the final size. 20 Mbit/s, 25 ms each way.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include <ndm/connection.hpp>
#include <ndm/sim.hpp>

using namespace std::chrono_literals;

namespace {

// Application error codes: the application's own (RFC 9000 §20.2).
constexpr std::uint64_t kNotWanted = 0x10;
constexpr std::uint64_t kAborted = 0x21;

double ms(ndm::Instant t) { return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count(); }

std::unique_ptr<ndm::Link> link(double rate_bps, std::uint64_t seed) {
    ndm::sim::SimpleLinkConfig c;
    c.delay = 25ms;
    c.rate_bps = rate_bps;
    c.queue_packets = 100;
    c.seed = seed;
    return std::make_unique<ndm::sim::SimpleLink>(c);
}

}  // namespace

int main() {
    ndm::sim::Simulator sim(link(20e6, 1), link(0, 2));
    ndm::ConnectionConfig client_cfg, server_cfg;
    server_cfg.seed = 2;
    sim.connect(client_cfg, server_cfg);
    if (!sim.run_until([&] { return sim.client()->is_established() && sim.server() && sim.server()->is_established(); },
                       ndm::Instant{} + 5s)) {
        std::fprintf(stderr, "no handshake\n");
        return 1;
    }
    ndm::Connection& client = *sim.client();
    // The file: 100 MB made on demand (a generated stream stores nothing).
    const ndm::StreamId file = *client.open_stream();
    client.set_stream_source(file, [](std::uint64_t off, std::span<std::uint8_t> out) {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(off + i);
    });
    std::uint64_t file_written = 0;
    constexpr std::uint64_t kFile = 100u << 20;
    // The note goes first whatever else is queued: urgency 0, sent whole.
    const ndm::StreamId note = *client.open_stream();
    client.set_stream_priority(note, {0, false});
    const char text[] = "a note on the file";
    client.write(note, {reinterpret_cast<const std::uint8_t*>(text), sizeof text - 1}, true);

    std::vector<std::uint8_t> buf(1 << 16);
    std::uint64_t file_read = 0;
    bool stopped = false, file_stopped_seen = false, reset_seen = false;
    ndm::StreamId spare = 0;
    bool spare_reset = false;
    int spare_turns = 0;
    const bool ok = sim.run_until(
        [&] {
            ndm::Connection& c = *sim.client();
            ndm::Connection& s = *sim.server();
            if (!stopped && file_written < kFile)
                file_written += c.generate(file, static_cast<std::size_t>(std::min<std::uint64_t>(kFile - file_written, 1u << 20)));
            while (auto ev = c.poll_event()) {
                if (const auto* st = std::get_if<ndm::event::StreamStopped>(&*ev)) {
                    std::printf("%8.1f ms  client: the server stopped stream %llu (code 0x%llx); "
                                "%llu bytes were written to it\n",
                                ms(sim.now()), static_cast<unsigned long long>(st->id),
                                static_cast<unsigned long long>(st->error_code),
                                static_cast<unsigned long long>(file_written));
                    file_stopped_seen = true;
                    spare_turns = 0;
                    // A third stream, abandoned by the client after its first bytes.
                    spare = *c.open_stream();
                    const std::vector<std::uint8_t> part(3000, 0xab);
                    c.write(spare, part);
                }
            }
            // The next turn (some of its bytes have left): abandoned.
            if (file_stopped_seen && !spare_reset && spare_turns++ > 0) {
                c.reset_stream(spare, kAborted);
                spare_reset = true;
            }
            while (auto ev = s.poll_event()) {
                if (const auto* r = std::get_if<ndm::event::StreamReadable>(&*ev)) {
                    std::size_t n;
                    while ((n = s.read(r->id, buf)) > 0) {
                        if (r->id == note)
                            std::printf("%8.1f ms  server: note \"%.*s\"\n", ms(sim.now()), static_cast<int>(n),
                                        reinterpret_cast<const char*>(buf.data()));
                        if (r->id == file) file_read += n;
                    }
                } else if (const auto* rs = std::get_if<ndm::event::StreamReset>(&*ev)) {
                    std::printf("%8.1f ms  server: the client reset stream %llu (code 0x%llx, final size %llu)\n",
                                ms(sim.now()), static_cast<unsigned long long>(rs->id),
                                static_cast<unsigned long long>(rs->error_code),
                                static_cast<unsigned long long>(rs->final_size));
                    reset_seen = rs->error_code == kAborted;
                }
            }
            if (!stopped && file_read >= (1u << 20)) {
                std::printf("%8.1f ms  server: %llu bytes of the file read; stop_sending(0x%llx)\n", ms(sim.now()),
                            static_cast<unsigned long long>(file_read), static_cast<unsigned long long>(kNotWanted));
                s.stop_sending(file, kNotWanted);
                stopped = true;
            }
            sim.flush();
            return reset_seen;
        },
        ndm::Instant{} + 60s);
    std::printf("%s\n", ok ? "done" : "incomplete");
    return ok ? 0 : 1;
}
