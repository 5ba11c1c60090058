// ndm_loopback_bench: bulk goodput over real UDP sockets on loopback, each
// endpoint on its own thread of one process: one connection by default
// (a sending and a receiving endpoint), or --pairs N connections, each with
// its own sending and receiving endpoint threads, which shows how the library
// scales with cores (no state shared between endpoints: bench/RESULTS.md,
// "Cores"). Prints one JSON line: aggregate goodput, CPU seconds per GB (the
// whole process: all threads and any io_uring kernel workers), counters.
//   ndm_loopback_bench --io uring|epoll [--gso on|off] [--bytes N] [--mds 1452] [--cc NAME]
//                      [--api copy|zero-copy] [--cipher LIST] [--pairs N] [--cpus LIST] [--reuse-port]
// --bytes: per connection. --api zero-copy: the receiver takes the data with
// peek/consume instead of read() into its own buffer, and the sender fills
// prepare()d room (copying from its buffer, as write() does) instead of
// calling write(); --api generated: the receiver as zero-copy, and the
// sender's stream is a generated one (Connection::set_stream_source) whose
// source copies from its buffer straight into each packet. --cpus 0,1: pair
// i's two threads run on CPU i mod the list's length (--pairs 1 --cpus 0
// gives one connection one core).
// --reuse-port: the receiving endpoints share one port (SO_REUSEPORT) and the
// kernel's 4-tuple hash places the connections (receiver_connections says
// where); otherwise each has its own port.
// NDM_BENCH_TRACE=1 prints the first connection's cwnd/RTT/pacing samples to stderr.
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <memory>
#include <sstream>
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
// The whole process: all endpoint threads plus any kernel-side io_uring
// threads (io-wq workers, SQPOLL), which belong to the process's thread group.
double process_cpu_seconds() { return cpu_seconds(RUSAGE_SELF); }

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: ndm_loopback_bench --io uring|epoll [--gso on|off] [--bytes N] [--mds N] [--cc NAME] "
                 "[--api copy|zero-copy|generated] [--cipher LIST] [--pairs N] [--cpus LIST] [--reuse-port]\n");
    std::exit(2);
}

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
}

struct Options {
    IoBackend io = IoBackend::automatic;
    bool offload = true;
    std::uint64_t bytes = 1ull << 30;  // per connection
    std::size_t mds = 1452;
    std::string cc = "reno";
    bool zero_copy = false;  // zero-copy or generated: peek/consume on the receiver
    bool generated = false;
    std::vector<std::string> ciphers;
    unsigned pairs = 1;
    std::vector<int> cpus;  // empty: not pinned
    bool reuse_port = false;

    [[nodiscard]] int cpu_of(unsigned pair) const { return cpus.empty() ? -1 : cpus[pair % cpus.size()]; }
};

Options parse(int argc, char** argv) {
    Options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto next = [&]() -> std::string {
                if (i + 1 >= argc) usage();
                return argv[++i];
            };
            if (a == "--io") o.io = parse_io_backend(next());
            else if (a == "--gso") o.offload = next() == "on";
            else if (a == "--bytes") o.bytes = std::stoull(next());
            else if (a == "--mds") o.mds = std::stoul(next());
            else if (a == "--cc") o.cc = next();
            else if (a == "--cipher") o.ciphers = split(next());
            else if (a == "--pairs") o.pairs = static_cast<unsigned>(std::stoul(next()));
            else if (a == "--reuse-port") o.reuse_port = true;
            else if (a == "--cpus") {
                for (const std::string& c : split(next())) o.cpus.push_back(std::stoi(c));
            } else if (a == "--api") {
                const std::string v = next();
                if (v != "copy" && v != "zero-copy" && v != "generated") usage();
                o.zero_copy = v != "copy";
                o.generated = v == "generated";
            } else usage();
        }
    } catch (const std::exception&) {  // a number that does not parse
        usage();
    }
    if (o.pairs == 0 || o.pairs > 64) usage();
    return o;
}

// Pins the calling thread to one CPU (none for -1).
void pin_to(int cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::fprintf(stderr, "cannot pin a thread to CPU %d\n", cpu);
}

// One receiving endpoint on its own thread: reads every stream it is given
// until stop().
class Receiver {
public:
    Receiver(const EndpointConfig& cfg, bool zero_copy, int cpu) : thread_([this, cfg, zero_copy, cpu] {
        pin_to(cpu);
        run(cfg, zero_copy);
    }) {
        while (!ready_) std::this_thread::sleep_for(1ms);
    }
    ~Receiver() { stop(); }
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::uint64_t received() const { return received_; }
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

    // After stop().
    double cpu = 0;
    std::uint64_t loops = 0, connections = 0;
    EndpointStats stats;

private:
    void run(const EndpointConfig& cfg, bool zero_copy) {
        Endpoint server(cfg);
        port_ = server.local_port();
        ready_ = true;
        std::vector<std::uint8_t> buf(1 << 20);
        server.on_event([&](ConnectionHandle h, const Event& ev) {
            if (std::holds_alternative<event::Established>(ev)) ++connections;
            auto* r = std::get_if<event::StreamReadable>(&ev);
            if (!r) return;
            Connection* c = server.connection(h);
            std::uint64_t got = 0;
            if (zero_copy) {
                for (auto view = c->peek(r->id); !view.empty(); view = c->peek(r->id)) {
                    got += view.size();
                    c->consume(r->id, view.size());
                }
            } else {
                while (std::size_t n = c->read(r->id, buf)) got += n;
            }
            received_.fetch_add(got, std::memory_order_relaxed);
        });
        const double c0 = thread_cpu_seconds();
        for (; !stop_; ++loops) server.run_once(steady_now() + 10ms);
        cpu = thread_cpu_seconds() - c0;
        stats = server.stats();
    }

    std::atomic<bool> ready_{false}, stop_{false};
    std::atomic<std::uint16_t> port_{0};
    std::atomic<std::uint64_t> received_{0};
    std::thread thread_;
};

// What one sending endpoint did: one connection, `bytes` on one stream,
// timed from the moment every pair's handshake is done to its last ACK.
struct SendResult {
    bool complete = false;
    Instant start{}, end{};
    double cpu = 0;
    std::uint64_t loops = 0;
    ConnectionStats conn;
    EndpointStats endpoint;
    std::string io;
    bool gso = false, gro = false;
};

void write_some(Connection& c, StreamId s, const Options& o, const std::vector<std::uint8_t>& chunk,
                std::uint64_t& written, std::size_t& off) {
    while (written < o.bytes) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size() - off, o.bytes - written));
        std::size_t n;
        if (o.generated) {
            n = c.generate(s, want, written + want == o.bytes);
        } else if (o.zero_copy) {
            const auto room = c.prepare(s, want);
            n = room.size();
            if (n > 0) std::memcpy(room.data(), chunk.data() + off, n);
            c.commit(s, n, written + n == o.bytes);
        } else {
            n = c.write(s, {chunk.data() + off, want}, written + want == o.bytes);
        }
        written += n;
        off = (off + n) % chunk.size();
        if (n < want) break;
    }
}

void trace_sample(const Connection& c, Instant t0) {
    const auto st = c.stats(steady_now());
    std::fprintf(stderr, "t=%.1f cwnd=%llu inflight=%llu srtt=%.0fus rate=%.2fGbps lost=%llu pto=%llu %s\n",
                 to_seconds(steady_now() - t0), static_cast<unsigned long long>(st.cwnd),
                 static_cast<unsigned long long>(st.bytes_in_flight), to_seconds(st.smoothed_rtt) * 1e6,
                 st.pacing_rate * 8 / 1e9, static_cast<unsigned long long>(st.packets_lost),
                 static_cast<unsigned long long>(st.pto_count), st.cc_state.c_str());
}

SendResult run_sender(const EndpointConfig& cfg, const Options& o, std::uint16_t port, std::latch& established,
                      bool trace) {
    SendResult res;
    Endpoint client(cfg);
    res.io = to_string(client.backend());
    res.gso = client.gso_enabled();
    res.gro = client.gro_enabled();
    std::vector<std::uint8_t> chunk(1 << 20);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::uint8_t>(i * 131 + 7);
    const double c0 = thread_cpu_seconds();
    const auto h = client.connect("127.0.0.1", port);
    const bool up = client.run_until([&] { return client.find(h) && client.find(h)->is_established(); }, 5s);
    established.arrive_and_wait();  // every pair starts sending together
    if (!up) return res;
    res.start = steady_now();
    Connection* c = client.connection(h);
    const StreamId s = *c->open_stream();
    if (o.generated) {
        // The stream's byte at offset x is chunk[x mod its size], as write() sends it.
        const bool set = c->set_stream_source(s, [&chunk](std::uint64_t offset, std::span<std::uint8_t> out) {
            for (std::size_t done = 0; done < out.size();) {
                const std::size_t at = static_cast<std::size_t>((offset + done) % chunk.size());
                const std::size_t n = std::min(out.size() - done, chunk.size() - at);
                std::memcpy(out.data() + done, chunk.data() + at, n);
                done += n;
            }
        });
        if (!set) return res;  // incomplete
    }
    std::uint64_t written = 0;
    std::size_t off = 0;
    Instant next_trace = res.start;
    while (steady_now() < res.start + 120s) {
        c = client.connection(h);
        if (!c) break;
        if (c->stream_send_acked(s)) {
            res.complete = true;
            break;
        }
        write_some(*c, s, o, chunk, written, off);
        if (trace && steady_now() >= next_trace) {
            next_trace += (steady_now() - res.start < 400ms) ? 10ms : 100ms;
            trace_sample(*c, res.start);
        }
        client.run_once(steady_now() + 5ms);
        ++res.loops;
    }
    res.end = steady_now();
    res.cpu = thread_cpu_seconds() - c0;
    if (const Connection* done = client.find(h)) res.conn = done->stats(steady_now());
    res.endpoint = client.stats();
    return res;
}

EndpointConfig endpoint_config(const Options& o) {
    EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    cfg.backend = o.io;
    cfg.gso = cfg.gro = o.offload;
    cfg.connection.max_datagram_size = o.mds;
    cfg.connection.cc = o.cc;
    cfg.connection.tls.cipher_suites = o.ciphers;
    // TLS 1.3 as on any socket: a self-signed certificate the client pins.
    static const tls::ServerCredentials creds =
        tls::ServerCredentials::self_signed({"127.0.0.1"}, std::chrono::system_clock::now());
    cfg.connection.tls.certificate = creds;
    cfg.connection.tls.trust = tls::ClientCredentials::pinned(creds.fingerprint());
    return cfg;
}

// The receiving endpoints: one per pair, on their own ports or (--reuse-port) one.
std::vector<std::unique_ptr<Receiver>> start_receivers(const EndpointConfig& cfg, const Options& o) {
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    scfg.reuse_port = o.reuse_port;
    std::vector<std::unique_ptr<Receiver>> receivers;
    for (unsigned i = 0; i < o.pairs; ++i) {
        receivers.push_back(std::make_unique<Receiver>(scfg, o.zero_copy, o.cpu_of(i)));
        if (o.reuse_port) scfg.port = receivers.front()->port();
    }
    return receivers;
}

std::string json_list(const std::vector<double>& v, const char* format) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        char b[32];
        std::snprintf(b, sizeof b, format, v[i]);
        out += (i ? "," : "") + std::string(b);
    }
    return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    spdlog::set_level(spdlog::level::warn);
    const EndpointConfig cfg = endpoint_config(o);
    auto receivers = start_receivers(cfg, o);

    const double p0 = process_cpu_seconds();
    std::latch established(o.pairs);
    std::vector<SendResult> sent(o.pairs);
    std::vector<std::thread> senders;
    for (unsigned i = 0; i < o.pairs; ++i) {
        senders.emplace_back([&, i] {
            pin_to(o.cpu_of(i));
            sent[i] = run_sender(cfg, o, receivers[o.reuse_port ? 0 : i]->port(), established,
                                 i == 0 && std::getenv("NDM_BENCH_TRACE") != nullptr);
        });
    }
    for (std::thread& t : senders) t.join();
    const double process_cpu = process_cpu_seconds() - p0;

    bool complete = true;
    Instant start = kNever, end{};
    double send_cpu = 0, recv_cpu = 0;
    std::uint64_t datagrams = 0, send_calls = 0, lost = 0, send_loops = 0, received = 0;
    std::uint64_t recv_loops = 0, recv_datagrams = 0, recv_send_calls = 0;
    std::vector<double> pair_gbps, placement;
    for (const SendResult& r : sent) {
        complete = complete && r.complete;
        start = std::min(start, r.start);
        end = std::max(end, r.end);
        send_cpu += r.cpu;
        datagrams += r.endpoint.datagrams_sent;
        send_calls += r.endpoint.send_calls;
        lost += r.conn.packets_lost;
        send_loops += r.loops;
        pair_gbps.push_back(r.complete ? static_cast<double>(o.bytes) * 8 / 1e9 / to_seconds(r.end - r.start) : 0.0);
    }
    for (auto& r : receivers) {
        r->stop();
        received += r->received();
        recv_cpu += r->cpu;
        recv_loops += r->loops;
        recv_datagrams += r->stats.datagrams_sent;
        recv_send_calls += r->stats.send_calls;
        placement.push_back(static_cast<double>(r->connections));
    }
    complete = complete && received == o.bytes * o.pairs;
    const double secs = complete ? to_seconds(end - start) : 0;
    const double gb = static_cast<double>(received) / 1e9;
    const SendResult& first = sent.front();
    std::printf(
        "{\"io\":\"%s\",\"api\":\"%s\",\"gso_gro\":%s,\"gso\":%s,\"gro\":%s,\"mds\":%zu,\"pairs\":%u,\"bytes\":%llu,"
        "\"seconds\":%.3f,\"goodput_gbps\":%.3f,\"pair_goodput_gbps\":%s,\"receiver_connections\":%s,"
        "\"sender_cpu_s\":%.3f,\"receiver_cpu_s\":%.3f,\"process_cpu_s\":%.3f,\"cpu_s_per_gb\":%.3f,"
        "\"datagrams_sent\":%llu,\"send_calls\":%llu,\"packets_lost\":%llu,\"sender_loops\":%llu,"
        "\"receiver_loops\":%llu,\"receiver_datagrams_sent\":%llu,\"receiver_send_calls\":%llu,\"complete\":%s}\n",
        first.io.c_str(), o.generated ? "generated" : o.zero_copy ? "zero-copy" : "copy", o.offload ? "true" : "false", first.gso ? "true" : "false",
        first.gro ? "true" : "false", o.mds, o.pairs, static_cast<unsigned long long>(received), secs,
        secs > 0 ? gb * 8 / secs : 0.0, json_list(pair_gbps, "%.3f").c_str(), json_list(placement, "%.0f").c_str(),
        send_cpu, recv_cpu, process_cpu, gb > 0 ? process_cpu / gb : 0.0, static_cast<unsigned long long>(datagrams),
        static_cast<unsigned long long>(send_calls), static_cast<unsigned long long>(lost),
        static_cast<unsigned long long>(send_loops), static_cast<unsigned long long>(recv_loops),
        static_cast<unsigned long long>(recv_datagrams), static_cast<unsigned long long>(recv_send_calls),
        complete ? "true" : "false");
    return complete ? 0 : 1;
}
