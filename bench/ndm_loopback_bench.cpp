// ndm_loopback_bench: single-connection bulk goodput over real UDP sockets on
// loopback, sender and receiver endpoints on two threads of one process.
// Prints one JSON line: goodput, CPU seconds per GB (the whole process: both
// threads and any io_uring kernel workers), counters.
//   ndm_loopback_bench --io uring|epoll [--gso on|off] [--bytes N] [--mds 1452] [--api copy|zero-copy]
// --api zero-copy: the receiver takes the data with peek/consume instead of
// read() into its own buffer, and the sender fills prepare()d room (copying
// from its buffer, as write() does) instead of calling write().
// NDM_BENCH_TRACE=1 prints cwnd/RTT/pacing samples to stderr while it runs.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "ndm/endpoint.hpp"

using namespace ndm;
using namespace std::chrono_literals;

namespace {

double cpu_seconds(int who) {
    rusage ru{};
    getrusage(who, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
double thread_cpu_seconds() { return cpu_seconds(RUSAGE_THREAD); }
// The whole process: both endpoint threads plus any kernel-side io_uring
// threads (io-wq workers, SQPOLL), which belong to the process's thread group.
double process_cpu_seconds() { return cpu_seconds(RUSAGE_SELF); }

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: ndm_loopback_bench --io uring|epoll [--gso on|off] [--bytes N] [--mds N] [--cc NAME] [--api copy|zero-copy]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    IoBackend io = IoBackend::automatic;
    bool offload = true;
    std::uint64_t bytes = 1ull << 30;
    std::size_t mds = 1452;
    std::string cc = "reno";
    bool zero_copy = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--io") io = parse_io_backend(next());
        else if (a == "--gso") offload = next() == "on";
        else if (a == "--bytes") bytes = std::stoull(next());
        else if (a == "--mds") mds = std::stoul(next());
        else if (a == "--cc") cc = next();
        else if (a == "--api") {
            const std::string v = next();
            if (v != "copy" && v != "zero-copy") usage();
            zero_copy = v == "zero-copy";
        } else usage();
    }
    spdlog::set_level(spdlog::level::warn);

    EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    cfg.backend = io;
    cfg.gso = cfg.gro = offload;
    cfg.connection.max_datagram_size = mds;
    cfg.connection.cc = cc;
    // TLS 1.3 as on any socket: a self-signed certificate the client pins.
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"127.0.0.1"}, std::chrono::system_clock::now());
    cfg.connection.tls.certificate = creds;
    cfg.connection.tls.trust = tls::ClientCredentials::pinned(creds.fingerprint());
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> received{0};
    std::atomic<bool> done{false};
    std::atomic<double> recv_cpu{0};
    std::atomic<std::uint16_t> port{0};
    std::atomic<int> server_ready{0};
    std::atomic<std::uint64_t> recv_loops{0}, recv_datagrams_sent{0}, recv_send_calls{0};

    std::thread receiver([&] {
        Endpoint server(scfg);
        port = server.local_port();
        server_ready = 1;
        std::vector<std::uint8_t> buf(1 << 20);
        std::uint64_t got = 0;
        server.on_event([&](ConnectionHandle h, const Event& ev) {
            auto* r = std::get_if<event::StreamReadable>(&ev);
            if (!r) return;
            Connection* c = server.connection(h);
            if (zero_copy) {
                for (auto view = c->peek(r->id); !view.empty(); view = c->peek(r->id)) {
                    got += view.size();
                    c->consume(r->id, view.size());
                }
            } else {
                while (std::size_t n = c->read(r->id, buf)) got += n;
            }
            received.store(got, std::memory_order_relaxed);
            if (c->stream_finished(r->id)) done = true;
        });
        const double c0 = thread_cpu_seconds();
        std::uint64_t loops = 0;
        for (; !stop; ++loops) server.run_once(steady_now() + 10ms);
        recv_cpu = thread_cpu_seconds() - c0;
        recv_loops = loops;
        recv_datagrams_sent = server.stats().datagrams_sent;
        recv_send_calls = server.stats().send_calls;
    });
    while (!server_ready) std::this_thread::sleep_for(1ms);

    Endpoint client(cfg);
    std::vector<std::uint8_t> chunk(1 << 20);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::uint8_t>(i * 131 + 7);
    const double c0 = thread_cpu_seconds();
    const double p0 = process_cpu_seconds();
    auto h = client.connect("127.0.0.1", port);
    if (!client.run_until([&] { return client.find(h) && client.find(h)->is_established(); }, 5s)) {
        std::fprintf(stderr, "handshake failed\n");
        stop = true;
        receiver.join();
        return 1;
    }
    const Instant t0 = steady_now();
    Connection* c = client.connection(h);
    const StreamId s = *c->open_stream();
    std::uint64_t written = 0;
    std::size_t off = 0;
    const Instant deadline = t0 + 120s;
    const bool trace = std::getenv("NDM_BENCH_TRACE") != nullptr;
    Instant next_trace = t0;
    std::uint64_t send_loops = 0;
    while (!done && steady_now() < deadline) {
        c = client.connection(h);
        if (!c) break;
        while (written < bytes) {
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size() - off, bytes - written));
            std::size_t n;
            if (zero_copy) {
                const auto room = c->prepare(s, want);
                n = room.size();
                if (n > 0) std::memcpy(room.data(), chunk.data() + off, n);
                c->commit(s, n, written + n == bytes);
            } else {
                n = c->write(s, {chunk.data() + off, want}, written + want == bytes);
            }
            written += n;
            off = (off + n) % chunk.size();
            if (n < want) break;
        }
        if (trace && steady_now() >= next_trace) {
            next_trace += (steady_now() - t0 < 400ms) ? 10ms : 100ms;
            const auto st = c->stats(steady_now());
            std::fprintf(stderr, "t=%.1f rx=%llu cwnd=%llu inflight=%llu srtt=%.0fus rate=%.2fGbps lost=%llu pto=%llu %s\n",
                         to_seconds(steady_now() - t0), static_cast<unsigned long long>(received.load()),
                         static_cast<unsigned long long>(st.cwnd), static_cast<unsigned long long>(st.bytes_in_flight),
                         to_seconds(st.smoothed_rtt) * 1e6, st.pacing_rate * 8 / 1e9,
                         static_cast<unsigned long long>(st.packets_lost), static_cast<unsigned long long>(st.pto_count),
                         st.cc_state.c_str());
        }
        client.run_once(steady_now() + 5ms);
        ++send_loops;
    }
    const double secs = to_seconds(steady_now() - t0);
    const double send_cpu = thread_cpu_seconds() - c0;
    const double process_cpu = process_cpu_seconds() - p0;
    const auto cst = client.connection(h) ? client.connection(h)->stats(steady_now()) : ConnectionStats{};
    const auto est = client.stats();
    stop = true;
    receiver.join();
    const double gb = static_cast<double>(received.load()) / 1e9;
    std::printf(
        "{\"io\":\"%s\",\"api\":\"%s\",\"gso_gro\":%s,\"gso\":%s,\"gro\":%s,\"mds\":%zu,\"bytes\":%llu,\"seconds\":%.3f,"
        "\"goodput_gbps\":%.3f,\"sender_cpu_s\":%.3f,\"receiver_cpu_s\":%.3f,\"process_cpu_s\":%.3f,\"cpu_s_per_gb\":%.3f,"
        "\"datagrams_sent\":%llu,\"send_calls\":%llu,\"packets_lost\":%llu,\"sender_loops\":%llu,"
        "\"receiver_loops\":%llu,\"receiver_datagrams_sent\":%llu,\"receiver_send_calls\":%llu,\"complete\":%s}\n",
        to_string(client.backend()), zero_copy ? "zero-copy" : "copy", offload ? "true" : "false", client.gso_enabled() ? "true" : "false",
        client.gro_enabled() ? "true" : "false", mds, static_cast<unsigned long long>(received.load()), secs,
        gb * 8 / secs, send_cpu, recv_cpu.load(), process_cpu, gb > 0 ? process_cpu / gb : 0.0,
        static_cast<unsigned long long>(est.datagrams_sent), static_cast<unsigned long long>(est.send_calls),
        static_cast<unsigned long long>(cst.packets_lost), static_cast<unsigned long long>(send_loops),
        static_cast<unsigned long long>(recv_loops.load()), static_cast<unsigned long long>(recv_datagrams_sent.load()),
        static_cast<unsigned long long>(recv_send_calls.load()), done ? "true" : "false");
    return done ? 0 : 1;
}
