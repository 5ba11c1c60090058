// Endpoint over real UDP sockets on loopback, with each I/O backend in turn
// (SUBCASE "uring" / "epoll"): byte-exact transfers (hash compared) with and
// without GSO/GRO, through an impairment Link, with 64 KB datagrams, 100
// concurrent connections, the forced io_uring fallback, and the error paths.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/backend.hpp"
#include "io/probe.hpp"
#include "wire/quic_header.hpp"
#include "util/rng.hpp"
#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "ndm/sim.hpp"
#include "ndm/udp_socket.hpp"
#include "endpoint_test_util.hpp"
#include "process_memory.hpp"
#include "loopback_udp.hpp"
#include "skip.hpp"

using namespace ndm;
using ndm::test::SilentClient;
using ndm::test::tls_connection_config;
using ndm::test::tls_endpoint_config;
using namespace std::chrono_literals;

namespace {

// Streaming 64-bit hash, independent of how the bytes are chunked.
class StreamHash {
public:
    void update(std::span<const std::uint8_t> d) {
        std::size_t i = 0;
        while (i < d.size()) {
            if (fill_ == 0 && d.size() - i >= 8) {
                std::uint64_t w;
                std::memcpy(&w, d.data() + i, 8);
                mix(w);
                i += 8;
                continue;
            }
            word_ |= std::uint64_t{d[i]} << (8 * fill_);
            ++i;
            if (++fill_ == 8) {
                mix(word_);
                word_ = 0;
                fill_ = 0;
            }
        }
        bytes_ += d.size();
    }
    [[nodiscard]] std::uint64_t digest() const {
        std::uint64_t h = h_ ^ word_ ^ (bytes_ * 0x9e3779b97f4a7c15ull);
        h ^= h >> 29;
        return h * 0xbf58476d1ce4e5b9ull;
    }
    [[nodiscard]] std::uint64_t bytes() const { return bytes_; }

private:
    void mix(std::uint64_t w) {
        h_ = (h_ ^ w) * 0x100000001b3ull;
        h_ = (h_ << 31) | (h_ >> 33);
    }
    std::uint64_t h_ = 0xcbf29ce484222325ull, word_ = 0, bytes_ = 0;
    unsigned fill_ = 0;
};

// Deterministic payload (xorshift64 words).
class Pattern {
public:
    explicit Pattern(std::uint64_t seed = 1) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
    void fill(std::span<std::uint8_t> out) {
        std::size_t i = 0;
        for (; i + 8 <= out.size(); i += 8) {
            const std::uint64_t w = next();
            std::memcpy(out.data() + i, &w, 8);
        }
        if (i < out.size()) {
            const std::uint64_t w = next();
            std::memcpy(out.data() + i, &w, out.size() - i);
        }
    }

private:
    std::uint64_t next() {
        s_ ^= s_ << 13;
        s_ ^= s_ >> 7;
        s_ ^= s_ << 17;
        return s_;
    }
    std::uint64_t s_;
};

// Sets an environment variable for one scope (the backends read theirs when created).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_) setenv(name_, old_->c_str(), 1);
        else unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

// Copies what the default logger writes at `level` and above into a string,
// for one scope (restored on the way out, also when a REQUIRE fails).
class ScopedLogCapture {
public:
    explicit ScopedLogCapture(spdlog::level::level_enum level)
        : logger_(spdlog::default_logger()), old_level_(logger_->level()) {
        logger_->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
        logger_->set_level(level);
    }
    ~ScopedLogCapture() {
        logger_->sinks().pop_back();
        logger_->set_level(old_level_);
    }
    ScopedLogCapture(const ScopedLogCapture&) = delete;
    ScopedLogCapture& operator=(const ScopedLogCapture&) = delete;
    [[nodiscard]] std::string text() const { return out_.str(); }

private:
    std::ostringstream out_;
    std::shared_ptr<spdlog::logger> logger_;
    spdlog::level::level_enum old_level_;
};


// Picks the backend for this SUBCASE; false (the subcase skipped) if the machine lacks it.
bool pick_backend(IoBackend b, EndpointConfig& cfg) {
    if (b == IoBackend::uring && !io::probe_uring().available) {
        test::skip_test("io_uring unavailable here (" + io::probe_uring().reason + "): uring subcase skipped");
        return false;
    }
    cfg.backend = b;
    return true;
}

// Drives both endpoints on this thread, each in turn for at most 1 ms, until
// the client's connection is established or `limit` passes.
bool establish_in_turns(Endpoint& client, Endpoint& server, ConnectionHandle h, Duration limit = 5s) {
    for (const Instant end = steady_now() + limit; steady_now() < end;) {
        server.run_once(steady_now() + 1ms);
        client.run_once(steady_now() + 1ms);
        const Connection* c = client.find(h);
        if (c && c->is_established()) return true;
    }
    return false;
}

#define FOR_EACH_BACKEND(cfg)                                              \
    IoBackend backend_under_test = IoBackend::epoll;                       \
    SUBCASE("uring") { backend_under_test = IoBackend::uring; }            \
    SUBCASE("epoll") { backend_under_test = IoBackend::epoll; }            \
    if (!pick_backend(backend_under_test, cfg)) return;                    \
    const std::string backend_name = to_string(backend_under_test);     \
    CAPTURE(backend_name)

// A receiving server on its own thread: hashes every stream, keyed by the
// client's index carried in the application parameters.
class SinkServer {
public:
    struct Result {
        std::uint64_t bytes = 0, hash = 0;
        bool finished = false;
        std::string close_reason;
    };

    explicit SinkServer(EndpointConfig cfg) {
        cfg.accept_connections = true;
        ep_ = std::make_unique<Endpoint>(std::move(cfg));
        port_ = ep_->local_port();
        backend_ = ep_->backend();
        ep_->on_event([this](ConnectionHandle h, const Event& ev) { on_event(h, ev); });
        thread_ = std::thread([this] {
            while (!stop_) ep_->run_once(steady_now() + 20ms);
        });
    }
    ~SinkServer() {
        stop_ = true;
        thread_.join();
    }
    SinkServer(const SinkServer&) = delete;
    SinkServer& operator=(const SinkServer&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] IoBackend backend() const { return backend_; }
    [[nodiscard]] int finished() const { return finished_; }
    std::map<int, Result> results() {
        std::lock_guard lock(mu_);
        return results_;
    }

private:
    struct Sink {
        int index = -1;
        StreamHash hash;
        bool done = false;
    };

    void on_event(ConnectionHandle h, const Event& ev) {
        Connection* c = ep_->connection(h);
        if (!c) return;
        Sink& s = sinks_[h];
        if (s.index < 0) {
            auto p = c->peer_application_params();
            s.index = p.size() >= 2 ? (p[0] << 8 | p[1]) : 0;
        }
        if (auto* r = std::get_if<event::StreamReadable>(&ev)) {
            while (std::size_t n = c->read(r->id, buf_)) s.hash.update({buf_.data(), n});
            if (c->stream_finished(r->id) && !s.done) {
                s.done = true;
                publish(s, "");
                ++finished_;
            }
        } else if (auto* cl = std::get_if<event::Closed>(&ev)) {
            if (!s.done) publish(s, cl->info.reason.empty() ? "closed" : cl->info.reason);
        }
    }

    void publish(const Sink& s, const std::string& reason) {
        std::lock_guard lock(mu_);
        auto& r = results_[s.index];
        r.bytes = s.hash.bytes();
        r.hash = s.hash.digest();
        r.finished = s.done;
        r.close_reason = reason;
    }

    std::unique_ptr<Endpoint> ep_;
    std::uint16_t port_ = 0;
    IoBackend backend_ = IoBackend::epoll;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<int> finished_{0};
    std::map<ConnectionHandle, Sink> sinks_;
    std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(1 << 20);
    std::mutex mu_;
    std::map<int, Result> results_;
};

struct Flow {
    ConnectionHandle h = 0;
    std::optional<StreamId> stream;
    Pattern pattern;
    StreamHash hash;
    std::vector<std::uint8_t> chunk;
    std::size_t chunk_off = 0;
    std::uint64_t generated = 0;
    bool fin = false;
    std::string failure;
};

struct ClientRun {
    std::vector<Flow> flows;
    double seconds = 0;
    bool completed = false;
};

// Pushes `bytes` through each of `n` connections from `client` to `port`
// and waits until finished() (the servers' streams read to their FIN) is
// done_at. Connection i is known to the server as index first_index + i.
ClientRun run_clients(Endpoint& client, std::uint16_t port, const std::function<int()>& finished, int done_at,
                      const std::string& host, int n, std::uint64_t bytes, const ConnectionConfig& base,
                      Duration timeout, int first_index = 0) {
    ClientRun run;
    run.flows.resize(static_cast<std::size_t>(n));
    const Instant start = steady_now();
    for (int i = 0; i < n; ++i) {
        Flow& f = run.flows[static_cast<std::size_t>(i)];
        const int index = first_index + i;
        f.pattern = Pattern(static_cast<std::uint64_t>(index) + 7);
        ConnectionConfig c = base;
        c.application_params = {static_cast<std::uint8_t>(index >> 8), static_cast<std::uint8_t>(index)};
        f.h = client.connect(host, port, c);
    }
    auto feed = [&](Flow& f) {
        if (f.fin || !f.failure.empty()) return;
        Connection* c = client.connection(f.h);
        if (!c) {
            const CloseInfo* ci = client.close_info(f.h);
            f.failure = ci ? ci->reason : "connection vanished";
            return;
        }
        if (const CloseInfo* ci = client.close_info(f.h)) {
            f.failure = ci->reason;
            return;
        }
        if (!c->is_established()) return;
        if (!f.stream) f.stream = c->open_stream();
        if (!f.stream) return;
        for (int guard = 0; guard < 64; ++guard) {
            if (f.chunk_off == f.chunk.size()) {
                const std::uint64_t left = bytes - f.generated;
                if (left == 0) {
                    c->finish(*f.stream);
                    f.fin = true;
                    return;
                }
                f.chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(left, 256 * 1024)));
                f.pattern.fill(f.chunk);
                f.hash.update(f.chunk);
                f.generated += f.chunk.size();
                f.chunk_off = 0;
            }
            const std::size_t w = c->write(*f.stream, std::span(f.chunk).subspan(f.chunk_off));
            f.chunk_off += w;
            if (w == 0) return;
        }
    };
    const Instant end = start + timeout;
    while (steady_now() < end) {
        bool pending = false;
        for (auto& f : run.flows) {
            feed(f);
            pending |= !f.fin && f.failure.empty();
        }
        if (finished() >= done_at) break;
        int failed = 0;
        for (auto& f : run.flows) failed += !f.failure.empty();
        if (failed && !pending && finished() + failed >= done_at) break;
        client.run_once(std::min(end, steady_now() + 5ms));
    }
    run.seconds = to_seconds(steady_now() - start);
    run.completed = finished() >= done_at;
    return run;
}

ClientRun run_clients(Endpoint& client, SinkServer& server, const std::string& host, int n, std::uint64_t bytes,
                      const ConnectionConfig& base, Duration timeout) {
    return run_clients(client, server.port(), [&] { return server.finished(); }, n, host, n, bytes, base, timeout);
}

void check_byte_exact(ClientRun& run, SinkServer& server, std::uint64_t bytes) {
    auto results = server.results();
    CHECK(run.completed);
    for (std::size_t i = 0; i < run.flows.size(); ++i) {
        CAPTURE(i);
        const auto& f = run.flows[i];
        CHECK(f.failure == "");
        auto it = results.find(static_cast<int>(i));
        REQUIRE(it != results.end());
        CHECK(it->second.finished);
        CHECK(it->second.bytes == bytes);
        CHECK(it->second.hash == f.hash.digest());
    }
}

double gbits(std::uint64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0; }

}  // namespace

TEST_CASE("endpoint: loopback transfer is byte-exact with and without GSO/GRO") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    for (bool offload : {true, false}) {
        CAPTURE(offload);
        EndpointConfig scfg = cfg, ccfg = cfg;
        scfg.gso = scfg.gro = ccfg.gso = ccfg.gro = offload;
        SinkServer server(scfg);
        Endpoint client(ccfg);
        CHECK(client.backend() == backend_under_test);
        CHECK(server.backend() == backend_under_test);
        if (!offload) CHECK_FALSE(client.gso_enabled());
        const std::uint64_t bytes = 32u << 20;
        auto run = run_clients(client, server, "127.0.0.1", 1, bytes, ccfg.connection, 60s);
        check_byte_exact(run, server, bytes);
        MESSAGE(std::string(to_string(backend_under_test)) << std::string(offload ? " gso/gro on" : " gso/gro off") << ": 32 MB in "
                                              << run.seconds << " s (" << gbits(bytes, run.seconds) << " Gbit/s)");
        const auto st = client.stats();
        if (offload && client.gso_enabled()) CHECK(st.send_calls < st.datagrams_sent);  // GSO batched
    }
}

TEST_CASE("endpoint: 64 KB datagrams carry a byte-exact transfer") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    cfg.connection.max_datagram_size = 65507;
    FOR_EACH_BACKEND(cfg);
    SinkServer server(cfg);
    Endpoint client(cfg);
    const std::uint64_t bytes = 32u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 1, bytes, cfg.connection, 60s);
    check_byte_exact(run, server, bytes);
    Connection* c = client.connection(run.flows[0].h);
    if (c) CHECK(c->max_datagram_size() == 65507);
    MESSAGE(std::string(to_string(backend_under_test)) << " 64 KB datagrams: " << gbits(bytes, run.seconds) << " Gbit/s");
}

TEST_CASE("endpoint: impairment link (5% loss, delay, jitter) on egress and ingress stays byte-exact") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    std::atomic<std::uint64_t> seed{1};
    auto lossy = [&seed] {
        sim::SimpleLinkConfig l;
        l.delay = 5ms;
        l.loss = 0.05;
        l.reorder = 0.01;  // a little jitter: some datagrams held back
        l.reorder_extra_delay = 2ms;
        l.seed = seed++;
        return std::make_unique<sim::SimpleLink>(l);
    };
    EndpointConfig scfg = cfg, ccfg = cfg;
    ccfg.egress_link = lossy;   // client → server
    scfg.egress_link = lossy;   // server → client
    scfg.ingress_link = [] { return std::make_unique<sim::SimpleLink>(sim::SimpleLinkConfig{}); };  // pass-through
    SinkServer server(scfg);
    Endpoint client(ccfg);
    // Reno at 5 % loss and a 10 ms RTT moves about 1 MB/s: keep it small.
    const std::uint64_t bytes = 1u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 2, bytes, ccfg.connection, 60s);
    // The link really dropped packets and the transport repaired them.
    const Connection* c0 = client.find(run.flows[0].h);
    REQUIRE(c0);
    CHECK(c0->stats(steady_now()).packets_lost > 0);
    check_byte_exact(run, server, bytes);
}

namespace {
// An on-path forger: rewrites a few bytes (anywhere past the first) of every
// third datagram, keeping its length, as a relay that also fixed up the UDP
// checksum would deliver it. Seeded: the same rewrites every run.
std::unique_ptr<Link> rewriting_link(std::uint64_t seed) {
    return std::make_unique<test::FilterLink>(
        [rng = util::Xoshiro256(seed), count = std::uint64_t{0}](std::vector<std::uint8_t>& d) mutable {
            if (++count % 3 == 0 && d.size() > 1) {
                const int bytes = 1 + static_cast<int>(rng.next() % 8);
                for (int i = 0; i < bytes; ++i) {
                    const std::size_t at = 1 + rng.next() % (d.size() - 1);
                    d[at] ^= static_cast<std::uint8_t>(1 + rng.next() % 255);
                }
            }
            return true;
        });
}
}  // namespace

TEST_CASE("endpoint: a relay rewriting bytes of in-flight datagrams causes drops only, and the transfer is byte-exact") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    std::atomic<std::uint64_t> seed{7};
    auto forger = [&seed] { return rewriting_link(seed++); };
    EndpointConfig scfg = cfg, ccfg = cfg;
    ccfg.egress_link = forger;  // client → server
    scfg.egress_link = forger;  // server → client
    SinkServer server(scfg);
    Endpoint client(ccfg);
    const std::uint64_t bytes = 1u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 1, bytes, ccfg.connection, 60s);
    const Connection* c0 = client.find(run.flows[0].h);
    REQUIRE(c0);
    // Every rewritten packet failed authentication (or no longer parsed) and
    // was dropped: none was taken for data, none closed the connection.
    CHECK(c0->stats(steady_now()).packets_dropped > 0);
    CHECK(c0->stats(steady_now()).packets_lost > 0);  // the client's rewritten packets, repaired
    check_byte_exact(run, server, bytes);
}

TEST_CASE("endpoint: two connections through one shared emulated link get its rate together") {
    // ndm-send -P N once gave each connection its own emulated link, so
    // -P 2 at 20 Mbit/s sent 40. With one emu::SharedLink per direction, a
    // port per connection, they share the 20 Mbit/s (and its 100-packet queue).
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    cfg.connection.max_datagram_size = 1452;
    const auto profile = emu::parse_profile("up.rate=20mbit,up.queue=100pkt");
    auto up = std::make_shared<emu::SharedLink>(emu::make_link(profile, emu::Direction::up, 1));
    auto down = std::make_shared<emu::SharedLink>(emu::make_link(profile, emu::Direction::down, 1));
    EndpointConfig ccfg = cfg;
    ccfg.egress_link = [up] { return up->port(); };
    ccfg.ingress_link = [down] { return down->port(); };
    SinkServer server(cfg);
    Endpoint client(ccfg);
    const std::uint64_t bytes = 1u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 2, bytes, ccfg.connection, 30s);
    check_byte_exact(run, server, bytes);
    CHECK(up->link().emu_stats().sent > 2 * bytes / 1452);  // every data packet of both crossed the one link
    // 2 MB through 20 Mbit/s takes >= 0.84 s less what the queue still held
    // (100 x 1452 B); two private 20 Mbit/s links would need only 0.42 s.
    const double floor_s = (2.0 * bytes - 100 * 1452) * 8 / 20e6;
    MESSAGE("2 x 1 MB through one shared 20 Mbit/s link: " << run.seconds << " s (" << 2.0 * bytes * 8 / run.seconds / 1e6
                                                             << " Mbit/s together; floor " << floor_s << " s)");
    CHECK(run.seconds >= floor_s);
}

TEST_CASE("endpoint: 100 concurrent connections on one server endpoint are each byte-exact") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    SinkServer server(cfg);
    Endpoint client(cfg);
    const std::uint64_t bytes = 512u << 10;
    auto run = run_clients(client, server, "127.0.0.1", 100, bytes, cfg.connection, 60s);
    check_byte_exact(run, server, bytes);
}

// Two endpoints, each on its own thread, serve one port through SO_REUSEPORT
// (docs/architecture.md, "Threading"). Clients from 16 source ports spread
// over them by the kernel's 4-tuple hash (which endpoint gets which is the kernel's choice, so only the
// total is asserted); every transfer is byte-exact.
TEST_CASE("endpoint: two endpoints share a port with reuse_port, and each connection stays on its own") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.reuse_port = true;
    SinkServer a(scfg);
    scfg.port = a.port();
    SinkServer b(scfg);
    REQUIRE(b.port() == a.port());
    const std::uint64_t bytes = 256u << 10;
    const int clients = 16;
    for (int i = 0; i < clients; ++i) {
        CAPTURE(i);
        Endpoint client(cfg);
        auto run = run_clients(client, a.port(), [&] { return a.finished() + b.finished(); }, i + 1, "127.0.0.1", 1,
                               bytes, cfg.connection, 30s, i);
        CHECK(run.completed);
        CHECK(run.flows[0].failure == "");
        auto results = a.results();
        results.merge(b.results());
        REQUIRE(results.count(i) == 1);
        CHECK(results[i].finished);
        CHECK(results[i].bytes == bytes);
        CHECK(results[i].hash == run.flows[0].hash.digest());
    }
    MESSAGE("reuse_port: " << a.finished() << " connections on one endpoint, " << b.finished() << " on the other");
    CHECK(a.finished() + b.finished() == clients);
    // Without reuse_port the port is taken.
    EndpointConfig plain = cfg;
    plain.port = a.port();
    CHECK_THROWS_AS(Endpoint{plain}, EndpointError);
}

// A pass of the endpoint visits only connections with work (docs/architecture.md,
// "Timers"). 200 idle connections sit beside one that transfers: they get
// (almost) no turns while it does, yet their idle timers still fire, none before the idle
// timeout, and the busy one is byte-exact at the end.
TEST_CASE("endpoint: 200 idle connections get no turns while one transfers, and their idle timers still fire" *
          doctest::timeout(120)) {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    SinkServer server(cfg);
    Endpoint client(cfg);
    constexpr int kIdle = 200;
    const Duration idle_timeout = 3s;
    std::map<ConnectionHandle, Instant> closed_at;
    std::map<ConnectionHandle, std::string> close_reason;
    client.on_event([&](ConnectionHandle h, const Event& ev) {
        if (const auto* cl = std::get_if<event::Closed>(&ev)) {
            closed_at[h] = steady_now();
            close_reason[h] = cl->info.reason;
        }
    });
    auto params = [](int i) { return std::vector<std::uint8_t>{static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)}; };
    const Instant start = steady_now();
    std::vector<ConnectionHandle> idle;
    for (int i = 0; i < kIdle; ++i) {
        ConnectionConfig c = cfg.connection;
        c.idle_timeout = idle_timeout;
        c.application_params = params(i);
        idle.push_back(client.connect("127.0.0.1", server.port(), c));
    }
    ConnectionConfig busy_cc = cfg.connection;  // the default idle timeout, 30 s
    busy_cc.application_params = params(kIdle);
    const ConnectionHandle busy = client.connect("127.0.0.1", server.port(), busy_cc);
    REQUIRE(client.run_until(
        [&] {
            for (const ConnectionHandle h : idle)
                if (const Connection* c = client.find(h); c && !c->is_established()) return false;
            return client.find(busy) && client.find(busy)->is_established();
        },
        60s));
    const Instant settled = steady_now();

    // The busy connection writes as fast as it may; only it is reached through connection().
    StreamHash sent;
    Pattern pattern(3);
    std::vector<std::uint8_t> chunk(64 * 1024);
    std::optional<StreamId> stream;
    auto feed = [&] {
        Connection* c = client.connection(busy);
        REQUIRE(c);
        if (!stream) stream = c->open_stream();
        REQUIRE(stream);
        while (c->stream_send_capacity(*stream) >= chunk.size()) {
            pattern.fill(chunk);
            REQUIRE(c->write(*stream, chunk) == chunk.size());
            sent.update(chunk);
        }
    };
    // A second to let handshake confirmations and ACKs settle, then a second measured.
    const Instant measure_from = steady_now() + 1s;
    EndpointStats before{};
    bool measuring = false;
    while (steady_now() < measure_from + 1s) {
        if (!measuring && steady_now() >= measure_from) {
            before = client.stats();
            measuring = true;
        }
        feed();
        client.run_once(steady_now() + 5ms);
    }
    const EndpointStats after = client.stats();
    const std::uint64_t turns = after.turns - before.turns;
    const std::uint64_t connection_turns = after.connection_turns - before.connection_turns;
    CAPTURE(turns);
    CAPTURE(connection_turns);
    // Enough passes to judge the ratio below: a sanitized build on a loaded
    // machine makes ~40 a second (ASan + UBSan beside other tests: 42-44).
    REQUIRE(turns >= 10);
    // The busy one: a few turns per pass (it is marked again while the send
    // slots are out). Each idle one: a handful at most (a late ACK, its idle
    // timeout). Visiting every connection every pass would be 201 per pass.
    CHECK(connection_turns <= 4 * turns + 4 * kIdle);

    // Every idle connection ends by its idle timer, not before it, and not
    // much later than the timeout after the last handshake finished.
    REQUIRE(client.run_until(
        [&] {
            feed();
            return closed_at.size() >= kIdle;
        },
        idle_timeout + 30s));
    for (const ConnectionHandle h : idle) {
        CAPTURE(h);
        REQUIRE(closed_at.count(h));
        CHECK(close_reason[h].find("idle timeout") != std::string::npos);
        CHECK(closed_at[h] >= start + idle_timeout);
        CHECK(closed_at[h] <= settled + idle_timeout + 10s);
    }
    CHECK(!closed_at.count(busy));
    CHECK(client.connection_count() == 1);

    // The busy one's stream is byte-exact.
    client.connection(busy)->finish(*stream);
    REQUIRE(client.run_until([&] { return server.finished() >= 1; }, 30s));
    const auto results = server.results();
    REQUIRE(results.count(kIdle));
    CHECK(results.at(kIdle).bytes == sent.bytes());
    CHECK(results.at(kIdle).hash == sent.digest());
}

TEST_CASE("endpoint: 256 MB byte-exact with GSO/GRO on each backend" * doctest::timeout(120)) {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    SinkServer server(cfg);
    Endpoint client(cfg);
    const std::uint64_t bytes = 256u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 1, bytes, cfg.connection, 100s);
    check_byte_exact(run, server, bytes);
    MESSAGE(std::string(to_string(backend_under_test)) << " 256 MB in " << run.seconds << " s (" << gbits(bytes, run.seconds)
                                          << " Gbit/s)");
}

// Endpoint::take_turned: a driver of many connections revisits only those
// that had a turn. Of two idle connections, the one written to (reached
// through connection()) is listed, once however many turns it had; the
// other is not. Both endpoints run in this thread.
TEST_CASE("endpoint: take_turned lists each connection that had a turn since the last call, once") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    Endpoint server(scfg);
    Endpoint client(cfg);
    auto run_for = [&](Duration d) {
        for (const Instant end = steady_now() + d; steady_now() < end;) {
            server.run_once(steady_now() + 1ms);
            client.run_once(steady_now() + 1ms);
        }
    };
    const ConnectionHandle a = client.connect("127.0.0.1", server.local_port());
    const ConnectionHandle b = client.connect("127.0.0.1", server.local_port());
    CHECK(client.take_turned().empty());  // the first call starts the record
    REQUIRE(establish_in_turns(client, server, a, 10s));
    REQUIRE(establish_in_turns(client, server, b, 10s));
    run_for(300ms);  // the handshakes' last ACKs
    const auto both = client.take_turned();
    CHECK(std::ranges::count(both, a) == 1);
    CHECK(std::ranges::count(both, b) == 1);
    run_for(200ms);
    CHECK(client.take_turned().empty());  // idle: nothing had a turn
    Connection* c = client.connection(a);
    const auto id = c->open_stream();
    REQUIRE(id);
    const std::vector<std::uint8_t> data(100'000, 1);
    CHECK(c->write(*id, data) == data.size());
    run_for(200ms);  // many turns of a: sending, then the server's ACKs
    CHECK(client.find(a)->stats(steady_now()).stream_bytes_acked == data.size());
    CHECK(client.take_turned() == std::vector<ConnectionHandle>{a});
}

// EndpointConfig::receive_budget: each connection starts with its share of
// the budget as its window (the initial_max_data it advertises), and its
// window follows the share as connections come: a server that reads only
// what it is told to is sent exactly that plus the share. Both endpoints run
// in this thread.
TEST_CASE("endpoint: a receive budget is shared among the connections, down to kMinReceiveShare each") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    scfg.receive_budget = 150'000;
    scfg.connection.autotune_receive_windows = false;
    Endpoint server(scfg);
    std::vector<std::pair<ConnectionHandle, StreamId>> streams;  // in the order their data came
    server.on_event([&](ConnectionHandle h, const Event& ev) {
        if (const auto* r = std::get_if<event::StreamReadable>(&ev)) {
            if (std::ranges::find(streams, std::pair{h, r->id}) == streams.end()) streams.emplace_back(h, r->id);
        }
    });
    Endpoint client(cfg);
    // Until nothing more has left for 300 ms.
    auto run_until_still = [&](const std::function<std::uint64_t()>& sent) {
        std::uint64_t last = 0;
        Instant still_since = steady_now();
        for (const Instant end = steady_now() + 10s; steady_now() < end;) {
            server.run_once(steady_now() + 1ms);
            client.run_once(steady_now() + 1ms);
            if (sent() != last) {
                last = sent();
                still_since = steady_now();
            }
            if (last > 0 && steady_now() - still_since > 300ms) break;
        }
        return sent();
    };
    const std::vector<std::uint8_t> data(1'000'000, 7);
    auto start_sending = [&] {
        const ConnectionHandle h = client.connect("127.0.0.1", server.local_port());
        for (const Instant end = steady_now() + 10s; steady_now() < end && !client.find(h)->is_established();) {
            server.run_once(steady_now() + 1ms);
            client.run_once(steady_now() + 1ms);
        }
        Connection* c = client.connection(h);
        REQUIRE(c->is_established());
        const auto id = c->open_stream();
        REQUIRE(id);
        CHECK(c->write(*id, data) == data.size());
        return [&client, h] { return client.find(h)->stats(steady_now()).stream_bytes_sent; };
    };
    const auto first = start_sending();
    CHECK(run_until_still(first) == 150'000);  // alone: the whole budget
    const auto second = start_sending();
    CHECK(run_until_still(second) == 75'000);  // one of two
    // The first connection's window is now its share too: reading what it
    // sent lets it send the share more, not the 150 000 it started with.
    REQUIRE(streams.size() == 2);
    std::vector<std::uint8_t> buf(200'000);
    CHECK(server.connection(streams[0].first)->read(streams[0].second, buf) == 150'000);
    CHECK(run_until_still(first) == 150'000 + 75'000);
    const auto third = start_sending();
    CHECK(run_until_still(third) == kMinReceiveShare);  // 50 000 would be below the floor
}

TEST_CASE("endpoint: dual-stack and IPv6 loopback") {
    EndpointConfig cfg = tls_endpoint_config();
    FOR_EACH_BACKEND(cfg);
    int probe = socket(AF_INET6, SOCK_DGRAM, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    const bool v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (probe >= 0) close(probe);
    if (!v6) {
        test::skip_test("IPv6 loopback unavailable here");
        return;
    }
    cfg.bind_address = "::";  // dual-stack server
    SinkServer server(cfg);
    for (const char* host : {"::1", "127.0.0.1"}) {
        CAPTURE(host);
        EndpointConfig ccfg = cfg;
        ccfg.bind_address = std::string(host) == "::1" ? "::1" : "127.0.0.1";
        Endpoint client(ccfg);
        const int before = server.finished();
        (void)before;
        auto run = run_clients(client, server, host, 1, 1u << 20, ccfg.connection, 20s);
        CHECK(run.flows[0].failure == "");
        CHECK(server.finished() >= 1);
    }
}

TEST_CASE("endpoint: io_uring forced unavailable falls back to epoll and says so") {
    std::string log;
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    {
        ScopedLogCapture capture(spdlog::level::info);
        ScopedEnv force("NDM_IO_FORCE_PROBE_FAIL", "1");
        Endpoint ep(cfg);
        CHECK(ep.backend() == IoBackend::epoll);
        cfg.backend = IoBackend::uring;
        CHECK_THROWS_WITH_AS(Endpoint{cfg}, doctest::Contains("io_uring unavailable"), EndpointError);
        // The fallback still moves data.
        cfg.backend = IoBackend::automatic;
        SinkServer server(cfg);
        auto run = run_clients(ep, server, "127.0.0.1", 1, 1u << 20, cfg.connection, 20s);
        CHECK(run.completed);
        CHECK(server.backend() == IoBackend::epoll);
        log = capture.text();
    }
    CHECK(log.find("io_uring unavailable (forced by NDM_IO_FORCE_PROBE_FAIL=1); using the epoll fallback") !=
          std::string::npos);
    EndpointConfig again = tls_endpoint_config();
    again.bind_address = "127.0.0.1";
    if (io::probe_uring().available)
        CHECK(Endpoint(again).backend() == IoBackend::uring);
    else
        test::skip_test("io_uring unavailable here (" + io::probe_uring().reason + "): automatic choice of io_uring not checked");
}

TEST_CASE("endpoint: failures are clear errors, never hangs") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    cfg.connection.handshake_timeout = 2s;
    FOR_EACH_BACKEND(cfg);

    SUBCASE("bind failure") {
        Endpoint first(cfg);
        EndpointConfig dup = cfg;
        dup.port = first.local_port();
        CHECK_THROWS_WITH_AS(Endpoint{dup}, doctest::Contains("cannot bind UDP 127.0.0.1:"), EndpointError);
        dup.bind_address = "not-an-address";
        CHECK_THROWS_AS(Endpoint{dup}, EndpointError);
    }

    SUBCASE("ICMP port unreachable") {
        const std::uint16_t dead = ndm::test::dead_loopback_port();
        Endpoint client(cfg);
        std::optional<CloseInfo> closed;
        client.on_event([&](ConnectionHandle, const Event& ev) {
            if (auto* c = std::get_if<event::Closed>(&ev)) closed = c->info;
        });
        const auto t0 = steady_now();
        client.connect("127.0.0.1", dead);
        client.run_until([&] { return closed.has_value(); }, 5s);
        REQUIRE(closed);
        CHECK(closed->code == kClosePeerUnreachable);
        CHECK(closed->reason.find("ICMP port unreachable") != std::string::npos);
        // Before the handshake timeout. (Linux rate-limits ICMP per peer to a
        // burst then 1/s, so an earlier test may cost us one PTO round.)
        CHECK(steady_now() - t0 < 1900ms);
        CHECK(client.run_until([&] { return client.connection_count() == 0; }, 2s));
        // The blocking facade turns it into an exception with the reason.
        CHECK_THROWS_WITH_AS(BlockingStream::connect(client, "127.0.0.1", dead, 5s),
                             doctest::Contains("ICMP port unreachable"), EndpointError);
    }

    SUBCASE("a send the kernel refuses ends the connection and is counted") {
        // Broadcast without SO_BROADCAST: sendmsg fails with EACCES.
        Endpoint client(cfg);
        std::optional<CloseInfo> closed;
        client.on_event([&](ConnectionHandle, const Event& ev) {
            if (auto* c = std::get_if<event::Closed>(&ev)) closed = c->info;
        });
        client.connect("255.255.255.255", 4433);
        client.run_until([&] { return closed.has_value(); }, 5s);
        REQUIRE(closed);
        CHECK(closed->code == kClosePeerUnreachable);
        CHECK(closed->reason.find("cannot send to 255.255.255.255:4433") != std::string::npos);
        CHECK(client.stats().send_errors >= 1);
    }

    SUBCASE("handshake timeout when the peer never answers") {
        EndpointConfig silent = cfg;
        silent.accept_connections = false;  // drops Initials: no ICMP, no answer
        Endpoint server(silent);
        Endpoint client(cfg);
        std::optional<CloseInfo> closed;
        client.on_event([&](ConnectionHandle, const Event& ev) {
            if (auto* c = std::get_if<event::Closed>(&ev)) closed = c->info;
        });
        client.connect("127.0.0.1", server.local_port());
        client.run_until([&] { return closed.has_value(); }, 5s);
        REQUIRE(closed);
        CHECK(closed->code == static_cast<std::uint64_t>(CloseCode::handshake_timeout));
    }

    SUBCASE("idle timeout when the peer goes silent") {
        EndpointConfig c = cfg;
        c.connection.idle_timeout = 1s;
        c.accept_connections = true;
        Endpoint server(c);
        Endpoint client(c);
        auto h = client.connect("127.0.0.1", server.local_port());
        REQUIRE(establish_in_turns(client, server, h));  // then only the client runs
        std::optional<CloseInfo> closed;
        client.on_event([&](ConnectionHandle, const Event& ev) {
            if (auto* e = std::get_if<event::Closed>(&ev)) closed = e->info;
        });
        client.run_until([&] { return closed.has_value(); }, 5s);
        REQUIRE(closed);
        CHECK(closed->code == static_cast<std::uint64_t>(CloseCode::idle_timeout));
    }
}

// A BlockingStream exchange: the client sends `request` and its FIN; the
// server, on server_ep in a thread, reads all of it, sends answer(request)
// and its FIN, and keeps answering until the client has read everything.
// Returns what the client read; errors on either side fail the test.
std::vector<std::uint8_t> blocking_exchange(
    Endpoint& server_ep, Endpoint& client_ep, const std::vector<std::uint8_t>& request,
    const std::function<std::vector<std::uint8_t>(const std::vector<std::uint8_t>&)>& answer) {
    const auto port = server_ep.local_port();
    std::string server_error;
    std::thread server([&] {
        try {
            auto s = BlockingStream::accept(server_ep, 10s);
            std::vector<std::uint8_t> buf(4096), all;
            while (std::size_t n = s.read(buf, 10s)) all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
            s.write(answer(all));
            s.finish();
            s.close();
            server_ep.run_until([] { return false; }, 300ms);
        } catch (const std::exception& e) {
            server_error = e.what();
        }
    });
    std::vector<std::uint8_t> received;
    try {
        auto c = BlockingStream::connect(client_ep, "127.0.0.1", port);
        c.write(request);
        c.finish();
        std::vector<std::uint8_t> buf(65536);
        while (std::size_t n = c.read(buf, 10s)) received.insert(received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        c.close();
    } catch (const std::exception& e) {
        FAIL_CHECK(std::string(e.what()));
    }
    server.join();
    CHECK(server_error == "");
    return received;
}

TEST_CASE("endpoint: blocking facade echoes a message") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    Endpoint server_ep(scfg);
    Endpoint client_ep(cfg);
    std::vector<std::uint8_t> msg(300'000);
    Pattern(3).fill(msg);
    CHECK(blocking_exchange(server_ep, client_ep, msg, [](const auto& request) { return request; }) == msg);
}

// A server allows datagrams up to 65507 bytes (as ndm-recv does) and sends
// at the smaller size the handshake settles on: its send batches must be
// sized by that, or each GSO send carries one datagram (ndm-recv -R sent
// 1.8 Gbit/s instead of 7.7 on loopback before this held).
TEST_CASE("endpoint: a server allowing 64 KB datagrams batches its 1452-byte ones into GSO sends") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    scfg.connection.max_datagram_size = 65507;
    Endpoint server_ep(scfg);
    Endpoint client_ep(cfg);
    const std::size_t size = 8u << 20;
    std::vector<std::uint8_t> expected(size);
    Pattern(4).fill(expected);
    CHECK(blocking_exchange(server_ep, client_ep, {1}, [&](const auto&) { return expected; }) == expected);
    const auto st = server_ep.stats();
    CAPTURE(st.datagrams_sent);
    CAPTURE(st.send_calls);
    CHECK(st.datagrams_sent > size / 1452);
    if (server_ep.gso_enabled()) CHECK(st.send_calls * 4 < st.datagrams_sent);
}

TEST_CASE("endpoint: destroying an endpoint closes its connections at the peer") {
    // The destructor's CONNECTION_CLOSE must leave before the socket goes,
    // also when sends are asynchronous (io_uring's io-wq worker).
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    const char* send_mode = "inline";
    SUBCASE("sends inline") {}
    SUBCASE("sends async") { send_mode = "async"; }
    if (backend_under_test != IoBackend::uring && std::strcmp(send_mode, "async") == 0) return;  // io_uring only
    ScopedEnv sends("NDM_IO_URING_SEND", send_mode);
    CAPTURE(send_mode);
    SinkServer server(cfg);
    {
        Endpoint client(cfg);
        const ConnectionHandle h = client.connect("127.0.0.1", server.port());
        std::vector<std::uint8_t> data(64 * 1024, 7);
        bool wrote = false, acked = false;
        const auto end = steady_now() + 5s;
        while (steady_now() < end && !acked) {
            Connection* c = client.connection(h);
            if (c && c->is_established() && !wrote) {
                const auto s = c->open_stream();
                REQUIRE(s);
                CHECK(c->write(*s, data) == data.size());
                wrote = true;
            }
            acked = wrote && c && c->stats(steady_now()).stream_bytes_acked >= data.size();
            client.run_once(steady_now() + 5ms);
        }
        REQUIRE(acked);
        // The server publishes a stream only when it ends: nothing yet. The
        // client now goes away without finishing the stream.
        CHECK(server.results().empty());
    }
    const auto end = steady_now() + 5s;  // far below the 30 s idle timeout
    while (steady_now() < end && server.results().empty()) std::this_thread::sleep_for(5ms);
    auto results = server.results();
    REQUIRE(results.size() == 1);
    CHECK_FALSE(results.begin()->second.finished);
    CHECK(results.begin()->second.close_reason == "endpoint closed");
}

TEST_CASE("endpoint: a foreign loop can poll fd() and next_deadline()") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    SinkServer server(cfg);
    Endpoint client(cfg);
    bool established = false;
    client.on_event([&](ConnectionHandle, const Event& ev) { established |= std::holds_alternative<event::Established>(ev); });
    client.connect("127.0.0.1", server.port());
    const auto end = steady_now() + 5s;
    while (!established && steady_now() < end) {
        const Instant now = steady_now();
        const Instant dl = client.next_deadline();
        int ms = dl <= now ? 0 : static_cast<int>(std::min<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(dl - now).count() + 1, 50));
        pollfd p{client.fd(), POLLIN, 0};
        ::poll(&p, 1, ms);
        client.run_once(steady_now());  // no waiting inside: the foreign loop waited
    }
    CHECK(established);
}

namespace {
struct NoRx final : io::RxHandler {
    void on_datagram(std::span<const std::uint8_t>, const io::Address&, Ecn) override {}
    void on_peer_error(const io::Address&, int, const std::string&) override {}
};
}  // namespace

// With NDM_IO_URING_SEND=async the io_uring backend hands large sends to an
// io-wq worker (IOSQE_ASYNC) and keeps small ones inline; more than one worker, or a small send issued while
// a large one still waits for the worker, would let later datagrams overtake
// earlier ones. Datagrams carry a sequence number and go out in many submits:
// GSO batches of up to 29 KB alternating with single datagrams; a plain
// socket must read them in order. The log says which send mode the kernel allowed.
TEST_CASE("io_uring backend: asynchronous sends leave in submission order") {
    if (!io::probe_uring().available) {
        test::skip_test("io_uring unavailable here (" + io::probe_uring().reason + ")");
        return;
    }
    ScopedEnv sends("NDM_IO_URING_SEND", "async");
    ScopedLogCapture capture(spdlog::level::debug);

    const int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(rx >= 0);
    const int big = 8 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t alen = sizeof a;
    REQUIRE(getsockname(rx, reinterpret_cast<sockaddr*>(&a), &alen) == 0);
    const io::Address to = io::Address::from(reinterpret_cast<sockaddr*>(&a), alen);

    constexpr std::uint32_t kCount = 4000;
    constexpr std::size_t kSize = 1000;
    std::vector<std::uint32_t> seen;
    std::atomic<std::uint32_t> read_count{0};
    std::thread reader([&] {
        std::uint8_t buf[2048];
        while (seen.size() < kCount) {
            pollfd p{rx, POLLIN, 0};
            if (::poll(&p, 1, 2000) <= 0) break;  // all sent long ago: the rest was lost
            const ssize_t n = recv(rx, buf, sizeof buf, 0);
            if (n < 4) continue;
            std::uint32_t seq;
            std::memcpy(&seq, buf, 4);
            seen.push_back(seq);
            read_count = static_cast<std::uint32_t>(seen.size());
        }
    });
    {
        io::SocketOptions opt;
        opt.bind = io::Address::parse("127.0.0.1", 0);
        auto tx = io::make_uring_backend(opt);
        NoRx none;
        std::uint32_t seq = 0;
        for (std::uint32_t turn = 0; seq < kCount; ++turn) {
            // 1..29 datagrams per submit, as one GSO batch on odd turns.
            const std::uint32_t n = std::min<std::uint32_t>(1 + turn % 29, kCount - seq);
            const bool gso = turn % 2 == 1 && tx->gso();
            std::uint8_t* slot = nullptr;
            for (int tries = 0; !(slot = tx->tx_slot()) && tries < 1000; ++tries) {
                tx->wait(steady_now() + 1ms, none);
            }
            REQUIRE(slot != nullptr);
            if (gso) {
                for (std::uint32_t k = 0; k < n; ++k, ++seq) {
                    std::memset(slot + k * kSize, 0, kSize);
                    std::memcpy(slot + k * kSize, &seq, 4);
                }
                tx->tx_queue(n * kSize, kSize, to, Ecn::not_ect);
            } else {
                for (std::uint32_t k = 0; k < n; ++k, ++seq) {
                    if (k > 0) {
                        while (!(slot = tx->tx_slot())) tx->wait(steady_now() + 1ms, none);
                    }
                    std::memset(slot, 0, kSize);
                    std::memcpy(slot, &seq, 4);
                    tx->tx_queue(kSize, 0, to, Ecn::not_ect);
                }
            }
            tx->wait(steady_now(), none);  // submit (and reap) without sleeping
            // Stay within ~1000 datagrams of the reader: no socket-buffer drops.
            for (int i = 0; i < 2000 && read_count + 1000 < seq; ++i) tx->wait(steady_now() + 1ms, none);
        }
        tx->wait(steady_now() + 50ms, none);
    }
    reader.join();
    close(rx);

    CHECK(seen.size() >= kCount * 9 / 10);  // drops are possible on a loaded machine, reordering is not
    std::size_t reordered = 0;
    for (std::size_t i = 1; i < seen.size(); ++i) reordered += seen[i] <= seen[i - 1];
    CHECK(reordered == 0);
    const std::string log = capture.text();
    const bool async = log.find("large sends asynchronous on one io-wq worker") != std::string::npos;
    const bool inline_ = log.find("sends inline") != std::string::npos;
    const std::string mode = async ? "asynchronous (io-wq)" : "inline";
    MESSAGE("io_uring sends " << mode << "; received " << seen.size() << " of " << kCount);
    CHECK(async != inline_);  // exactly one of the two modes, and it says which
}

namespace {

// The inverse of util::splitmix64's finalizer, for the prediction attack below.
std::uint64_t inverse_mod_2_64(std::uint64_t a) {  // a odd; Newton's iteration
    std::uint64_t x = a;
    for (int i = 0; i < 5; ++i) x *= 2 - a * x;
    return x;
}
std::uint64_t unxorshift(std::uint64_t y, unsigned s) {
    std::uint64_t x = y;
    for (unsigned k = s; k < 64; k += s) x = y ^ (x >> s);
    return x;
}
std::uint64_t unsplitmix64(std::uint64_t z) {
    z = unxorshift(z, 31);
    z *= inverse_mod_2_64(0x94d049bb133111ebull);
    z = unxorshift(z, 27);
    z *= inverse_mod_2_64(0xbf58476d1ce4e5b9ull);
    z = unxorshift(z, 30);
    return z - 0x9e3779b97f4a7c15ull;
}
std::uint64_t cid_word(std::span<const std::uint8_t> cid) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8 && i < cid.size(); ++i) v |= std::uint64_t{cid[i]} << (8 * i);
    return v;
}

}  // namespace

TEST_CASE("endpoint: one observed connection ID does not predict the next connection's (RFC 9000 21.9)") {
    // The attack: with IDs drawn from a seeded splitmix64 chain,
    // inverting the generator on one client CID gives the connection's seed,
    // inverting it again the endpoint's state, and running it forward the
    // next connection's CID. The endpoint draws IDs from GnuTLS's generator,
    // so the prediction must fail.
    CHECK(unsplitmix64(util::splitmix64(12345)) == 12345);  // the inversion itself works
    const auto predict_next = [](std::uint64_t cid1) {
        const std::uint64_t seed1 = unsplitmix64(cid1);                         // the connection's seed
        std::uint64_t state = unsplitmix64(seed1) + 0x9e3779b97f4a7c15ull;      // the endpoint's, advanced
        std::uint64_t seed2 = util::splitmix64_next(state);
        return util::splitmix64_next(seed2);
    };
    {
        // The attack works on seeded IDs (what the endpoint did before): seeds
        // drawn from one splitmix64 chain, as Endpoint::with_seed draws them.
        std::uint64_t chain = 0x5eed;
        ConnectionConfig seeded = tls_connection_config();
        seeded.seed = util::splitmix64_next(chain);
        const auto a = Connection::connect(seeded, Instant{});
        seeded.seed = util::splitmix64_next(chain);
        const auto b = Connection::connect(seeded, Instant{});
        CHECK(predict_next(cid_word(a->local_cid())) == cid_word(b->local_cid()));
    }
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    Endpoint ep(cfg);
    const auto first = ep.connect("127.0.0.1", 9);
    const auto second = ep.connect("127.0.0.1", 9);
    const std::uint64_t cid1 = cid_word(ep.connection(first)->local_cid());
    const std::uint64_t cid2 = cid_word(ep.connection(second)->local_cid());
    CHECK(predict_next(cid1) != cid2);
    CHECK(cid1 != cid2);
}


TEST_CASE("endpoint: a flood of handshakes that never complete is capped, and a real client still gets in") {
    // Initials from a plain socket that never answers: each makes a half-open
    // server connection. Beyond max_half_open the oldest are evicted.
    EndpointConfig scfg = tls_endpoint_config();
    scfg.bind_address = "127.0.0.1";
    scfg.accept_connections = true;
    scfg.max_half_open = 4;
    Endpoint server(scfg);
    SilentClient flood(server.local_port());  // open while the test runs: no ICMP errors end the handshakes
    constexpr int kFlood = 12;
    for (int i = 0; i < kFlood; ++i) flood.send_initial(1000 + static_cast<std::uint64_t>(i));
    server.run_until([&] { return server.stats().datagrams_received >= kFlood; }, 5s);
    CHECK(server.stats().datagrams_received >= kFlood);
    CHECK(server.connection_count() <= 4);
    CHECK(server.stats().half_open_evicted == static_cast<std::uint64_t>(kFlood - 4));

    EndpointConfig ccfg = tls_endpoint_config();
    ccfg.bind_address = "127.0.0.1";
    Endpoint client(ccfg);
    spdlog::set_level(spdlog::level::debug);
    const auto h = client.connect("127.0.0.1", server.local_port());
    const bool up = client.run_until(
        [&] {
            server.run_once(steady_now() + 1ms);
            const Connection* c = client.find(h);
            return c && c->is_established();
        },
        5s);
    CHECK(up);
    server.run_until([&] { return server.next_accepted().has_value(); }, 2s);
    CHECK(server.stats().half_open_evicted == static_cast<std::uint64_t>(kFlood - 3));  // one more made room for the real client
    CHECK(server.connection_count() <= 4);
}

TEST_CASE("endpoint: the memory a flood of half-open connections took goes back to the system once they are gone") {
    // docs/security.md: memory follows the bytes actually received. glibc
    // keeps freed heap for reuse; the endpoint gives it back (malloc_trim)
    // once its connections have halved from a peak of many.
    if (!test::kResidentSizeMeaningful) {
        test::skip_test("resident sizes under AddressSanitizer's allocator say nothing of glibc's");
        return;
    }
    EndpointConfig scfg = tls_endpoint_config();
    scfg.bind_address = "127.0.0.1";
    scfg.accept_connections = true;
    scfg.retry = RetryPolicy::never;  // every Initial makes a connection
    scfg.connection.handshake_timeout = 500ms;
    Endpoint server(scfg);
    SilentClient flood(server.local_port());
    constexpr int kFlood = 400;
    flood.send_initial(1);  // a first one builds what every handshake shares (certificate, GnuTLS caches)
    server.run_until([&] { return server.connection_count() == 1; }, 5s);
    server.run_until([&] { return server.connection_count() == 0; }, 5s);
    const std::size_t before = test::resident_bytes();
    for (int i = 0; i < kFlood; ++i) {
        flood.send_initial(1000 + static_cast<std::uint64_t>(i));
        if (i % 50 == 49) server.run_until([] { return false; }, 20ms);  // the socket buffer holds ~100
    }
    server.run_until([&] { return server.stats().datagrams_received >= kFlood + 1; }, 5s);
    const std::size_t peak = test::resident_bytes();
    CHECK(server.connection_count() > kFlood / 2);
    server.run_until([&] { return server.connection_count() == 0; }, 5s);
    const std::size_t after = test::resident_bytes();
    MESSAGE("RSS before " << before / 1024 << " KiB, with " << kFlood << " half-open " << peak / 1024 << " KiB, after "
                          << after / 1024 << " KiB");
    REQUIRE(server.connection_count() == 0);
    REQUIRE(peak > before + 4 * 1024 * 1024);  // the flood did take memory
    CHECK(after < before + (peak - before) / 4);
}

TEST_CASE("endpoint: with retry=always each client goes through one Retry and its transfer is byte-exact (RFC 9000 8.1.2)") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.retry = RetryPolicy::always;
    SinkServer server(scfg);
    Endpoint client(cfg);
    const std::uint64_t bytes = 4u << 20;
    auto run = run_clients(client, server, "127.0.0.1", 3, bytes, cfg.connection, 30s);
    check_byte_exact(run, server, bytes);
    for (const Flow& f : run.flows) {
        const Connection* c = client.find(f.h);
        REQUIRE(c);
        CHECK(c->handshake_summary().retry);
        CHECK(c->handshake_summary().peer.retry_source_connection_id.size() == 8);
    }
}

TEST_CASE("endpoint: under load a spoofed Initial gets a small Retry and no state, and a real client gets in through it") {
    // Initials from a socket that never answers fill the handshakes up to
    // retry_threshold; beyond it each gets a Retry, which the "client" never
    // returns: no connection, nothing more sent.
    EndpointConfig scfg = tls_endpoint_config();
    scfg.bind_address = "127.0.0.1";
    scfg.accept_connections = true;
    scfg.retry_threshold = 2;
    Endpoint server(scfg);
    SilentClient flood(server.local_port());
    constexpr int kFlood = 6;
    std::size_t flood_bytes = 0;
    for (int i = 0; i < kFlood; ++i) flood_bytes += flood.send_initial(2000 + static_cast<std::uint64_t>(i));
    server.run_until([&] { return server.stats().datagrams_received >= kFlood; }, 5s);
    CHECK(server.connection_count() == 2);
    CHECK(server.stats().retries_sent == kFlood - 2);
    std::size_t retries = 0, retry_bytes = 0;
    server.run_until([] { return false; }, 100ms);
    for (const auto& d : flood.received()) {
        wire::quic::PacketView v;
        if (wire::quic::parse_packet_header(d, 8, v) == wire::quic::HeaderError::none &&
            v.kind == wire::quic::PacketKind::retry) {
            ++retries;
            retry_bytes += d.size();
        }
    }
    CHECK(retries == kFlood - 2);
    CHECK(retry_bytes < flood_bytes / 4);

    EndpointConfig ccfg = tls_endpoint_config();
    ccfg.bind_address = "127.0.0.1";
    Endpoint client(ccfg);
    const auto h = client.connect("127.0.0.1", server.local_port());
    REQUIRE(establish_in_turns(client, server, h));
    CHECK(client.find(h)->handshake_summary().retry);
    CHECK(server.stats().retries_sent == kFlood - 1);
    CHECK(server.stats().invalid_tokens == 0);
}

// A UDP socket connected to 127.0.0.1:port that sends 1200-byte datagrams of
// zeros (not QUIC: an endpoint drops them unanswered).
class JunkSender {
public:
    explicit JunkSender(std::uint16_t port) : fd_(socket(AF_INET, SOCK_DGRAM, 0)) {
        REQUIRE(fd_ >= 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);
    }
    ~JunkSender() { close(fd_); }
    JunkSender(const JunkSender&) = delete;
    JunkSender& operator=(const JunkSender&) = delete;
    void send(std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) REQUIRE(::send(fd_, junk_.data(), junk_.size(), 0) == 1200);
    }

private:
    int fd_;
    std::vector<std::uint8_t> junk_ = std::vector<std::uint8_t>(1200, 0);
};

TEST_CASE("endpoint: datagrams the kernel drops for a full receive buffer are counted (SO_RXQ_OVFL)") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    cfg.accept_connections = true;
    cfg.socket_buffer_bytes = 64 << 10;
    Endpoint server(cfg);
    // 2000 datagrams while the server reads nothing: far more than its
    // buffer and its ring hold.
    JunkSender junk(server.local_port());
    constexpr std::uint64_t kBurst = 2000;
    junk.send(kBurst);
    std::uint64_t seen = 0;
    for (int turn = 0; turn < 200; ++turn) {  // until a 20 ms turn reads nothing more
        server.run_once(steady_now() + 20ms);
        const std::uint64_t now_seen = server.stats().datagrams_received;
        if (now_seen == seen && seen > 0) break;
        seen = now_seen;
    }
    CHECK(server.stats().receive_drops == 0);  // reported with the next datagram the socket takes
    junk.send(1);
    server.run_until([&] { return server.stats().datagrams_received > seen; }, 2s);
    const EndpointStats st = server.stats();
    CHECK(st.receive_drops > 0);
    CHECK(st.receive_drops + st.datagrams_received == kBurst + 1);
}

// EndpointConfig::receive_budget is capped at what the socket's receive
// buffer holds (SO_RCVBUF, twice what was asked for where the kernel allows
// it), never below 4 MiB.
TEST_CASE("endpoint: the receive budget is at most the socket's receive buffer, and at least 4 MiB") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    cfg.accept_connections = true;
    cfg.receive_budget = 64u << 20;
    cfg.socket_buffer_bytes = 6 << 20;
    const std::size_t socket = UdpSocket(AF_INET, {.buffer_bytes = cfg.socket_buffer_bytes}).receive_buffer_bytes();
    REQUIRE(socket > 0);
    const EndpointStats st = Endpoint(cfg).stats();
    CHECK(st.receive_budget == std::max<std::uint64_t>(socket, 4u << 20));
    CHECK(st.receive_budget_max == st.receive_budget);
    if (socket == std::size_t{12} << 20) MESSAGE("the kernel doubled the 6 MiB asked for (privileged, or a large rmem_max)");
    cfg.socket_buffer_bytes = 64 << 10;  // 128 KiB: the 4 MiB floor
    CHECK(Endpoint(cfg).stats().receive_budget == 4u << 20);
    cfg.receive_budget = 1u << 20;  // a budget below the socket's stays
    CHECK(Endpoint(cfg).stats().receive_budget == 1u << 20);
    cfg.receive_budget = 0;  // none
    CHECK(Endpoint(cfg).stats().receive_budget == 0);
}

TEST_CASE("endpoint: the kernel's receive drops halve the receive budget in use, and it grows back by eighths") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    cfg.accept_connections = true;
    cfg.socket_buffer_bytes = 64 << 10;
    cfg.receive_budget = 64u << 20;
    Endpoint server(cfg);
    const std::uint64_t m = 1u << 20;
    CHECK(server.stats().receive_budget == 4 * m);  // the small socket's ceiling, raised to the floor
    // Far more than the buffer holds while the server reads nothing, then one
    // more datagram, which brings the kernel's drop count with it.
    JunkSender junk(server.local_port());
    junk.send(2000);
    for (int turn = 0; turn < 20; ++turn) server.run_once(steady_now() + 5ms);
    junk.send(1);
    REQUIRE(server.run_until([&] { return server.stats().receive_drops > 0; }, 2s));
    std::vector<std::uint64_t> budgets;  // each value the budget in use takes
    for (const Instant end = steady_now() + 3s; steady_now() < end;) {
        server.run_once(steady_now() + 5ms);
        const std::uint64_t b = server.stats().receive_budget;
        if (budgets.empty() || budgets.back() != b) budgets.push_back(b);
        if (b == 4 * m) break;
    }
    CHECK(server.stats().receive_budget_cuts == 1);  // one burst of drops, one cut
    const std::uint64_t k = 1u << 10;
    CHECK(budgets == std::vector<std::uint64_t>{2048 * k, 2560 * k, 3072 * k, 3584 * k, 4096 * k});
}

TEST_CASE("endpoint: a listening endpoint takes no ICMP errors: Retries to closed ports leave it sending to real clients") {
    // A spoofed Initial's port is usually closed, so each answer to it comes
    // back as ICMP port unreachable. With IP_RECVERR the kernel would hold it
    // as the socket's error and fail the next send or receive, whichever peer
    // it is for; a listening endpoint does not ask for them (docs/security.md,
    // "ICMP errors").
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    scfg.retry = RetryPolicy::always;
    Endpoint server(scfg);
    constexpr int kFlood = 20;
    {
        SilentClient flood(server.local_port());
        for (int i = 0; i < kFlood; ++i) flood.send_initial(3000 + static_cast<std::uint64_t>(i));
    }  // its port closes before the server reads: every Retry meets a closed port
    server.run_until([&] { return server.stats().retries_sent >= kFlood; }, 5s);
    REQUIRE(server.stats().retries_sent == kFlood);

    Endpoint client(cfg);
    const auto h = client.connect("127.0.0.1", server.local_port());
    REQUIRE(establish_in_turns(client, server, h));
    CHECK(server.stats().icmp_errors == 0);
    CHECK(server.stats().send_errors == 0);
}

namespace {
// Forwards datagrams until *cut is set, then drops them: a server that
// vanishes without a word (power loss, a crash). It does not model ECN.
class CuttableLink final : public Link {
public:
    explicit CuttableLink(const bool* cut) : cut_(cut) {}
    void send(const DatagramView& d, Instant now) override {
        if (!*cut_) q_.push_back({now, std::vector<std::uint8_t>(d.bytes.begin(), d.bytes.end())});
    }
    [[nodiscard]] Instant next_delivery() const override { return q_.empty() ? kNever : q_.front().first; }
    bool deliver(Instant now, Datagram& out) override {
        if (q_.empty() || q_.front().first > now) return false;
        out.bytes = std::move(q_.front().second);
        out.ecn = Ecn::not_ect;
        q_.pop_front();
        return true;
    }
    [[nodiscard]] LinkStats stats() const override { return {}; }

private:
    const bool* cut_;
    std::deque<std::pair<Instant, std::vector<std::uint8_t>>> q_;
};
}  // namespace

namespace {
// A new Endpoint on the port an old one just released. An io_uring ring
// releases its socket asynchronously after teardown, so the port can stay
// busy for a moment: retry, as a restarting server would.
std::unique_ptr<Endpoint> rebind(const EndpointConfig& cfg) {
    for (int attempt = 0;; ++attempt) {
        try {
            return std::make_unique<Endpoint>(cfg);
        } catch (const EndpointError&) {
            if (attempt >= 100) throw;
            std::this_thread::sleep_for(10ms);
        }
    }
}
}  // namespace

TEST_CASE("endpoint: a server restarted with its reset secret ends its old clients with a stateless reset (RFC 9000 10.3)") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    FOR_EACH_BACKEND(cfg);
    std::array<std::uint8_t, 32> secret{};
    secret.fill(0x17);
    EndpointConfig server_cfg = cfg;
    server_cfg.accept_connections = true;
    server_cfg.stateless_reset_key = secret;
    bool cut = false;
    server_cfg.egress_link = [&] { return std::make_unique<CuttableLink>(&cut); };
    auto server = std::make_unique<Endpoint>(server_cfg);
    const std::uint16_t port = server->local_port();
    Endpoint client(cfg);
    const ConnectionHandle h = client.connect("127.0.0.1", port);
    const auto both = [&](const std::function<bool()>& pred, Duration limit) {
        const Instant end = steady_now() + limit;
        while (steady_now() < end && !pred()) {
            client.run_once(steady_now() + 1ms);
            if (server) server->run_once(steady_now() + 1ms);
        }
        return pred();
    };
    bool accepted = false;
    REQUIRE(both([&] {
        accepted = accepted || server->next_accepted();
        return accepted && client.find(h) && client.find(h)->is_established();
    }, 5s));
    // Let the handshake be confirmed (HANDSHAKE_DONE, the last Handshake ACKs):
    // from then on the client sends short headers only, which a reset answers.
    both([] { return false; }, 300ms);
    REQUIRE(client.find(h)->handshake_summary().peer.stateless_reset_token);
    // The server loses all state silently, and a new one starts on its port.
    cut = true;
    server.reset();
    server_cfg.egress_link = nullptr;
    server_cfg.port = port;
    server = rebind(server_cfg);
    REQUIRE(server->local_port() == port);
    Connection* c = client.connection(h);
    REQUIRE(c);
    const auto s = c->open_stream();
    REQUIRE(s);
    const std::vector<std::uint8_t> data(1000, 1);
    REQUIRE(c->write(*s, data) == data.size());
    const Instant start = steady_now();
    const bool ended = both([&] { return client.close_info(h) != nullptr; }, 5s);
    INFO("server received ", server->stats().datagrams_received, ", resets sent ", server->stats().stateless_resets_sent,
         ", unroutable ", server->stats().unroutable, ", client received ", client.stats().datagrams_received);
    REQUIRE(ended);
    CHECK(client.close_info(h)->code == static_cast<std::uint64_t>(CloseCode::stateless_reset));
    CHECK(steady_now() - start < 2s);  // not the 30 s idle timeout
    CHECK(server->stats().stateless_resets_sent >= 1);
    CHECK(server->connection_count() == 0);
}

TEST_CASE("endpoint: a server with another reset secret answers with a reset the client ignores") {
    EndpointConfig cfg = tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    cfg.backend = IoBackend::epoll;
    cfg.connection.idle_timeout = 1500ms;
    EndpointConfig server_cfg = cfg;
    server_cfg.accept_connections = true;
    bool cut = false;
    server_cfg.egress_link = [&] { return std::make_unique<CuttableLink>(&cut); };
    auto server = std::make_unique<Endpoint>(server_cfg);
    const std::uint16_t port = server->local_port();
    Endpoint client(cfg);
    const ConnectionHandle h = client.connect("127.0.0.1", port);
    const auto both = [&](const std::function<bool()>& pred, Duration limit) {
        const Instant end = steady_now() + limit;
        while (steady_now() < end && !pred()) {
            client.run_once(steady_now() + 1ms);
            server->run_once(steady_now() + 1ms);
        }
        return pred();
    };
    bool accepted = false;
    REQUIRE(both([&] {
        accepted = accepted || server->next_accepted();
        return accepted && client.find(h) && client.find(h)->is_established();
    }, 5s));
    // Let the handshake be confirmed (HANDSHAKE_DONE, the last Handshake ACKs):
    // from then on the client sends short headers only, which a reset answers.
    both([] { return false; }, 300ms);
    cut = true;
    server.reset();
    server_cfg.egress_link = nullptr;
    server_cfg.port = port;
    server = rebind(server_cfg);  // a fresh random secret
    Connection* c = client.connection(h);
    REQUIRE(c);
    const auto s = c->open_stream();
    REQUIRE(s);
    const std::vector<std::uint8_t> data(1000, 1);
    REQUIRE(c->write(*s, data) == data.size());
    REQUIRE(both([&] { return client.close_info(h) != nullptr; }, 5s));
    CHECK(server->stats().stateless_resets_sent >= 1);
    CHECK(client.close_info(h)->code == static_cast<std::uint64_t>(CloseCode::idle_timeout));
}

TEST_CASE("endpoint: a spoofed Initial from a port that never answers gets at most 3x its bytes back, ever (RFC 9000 8.1)") {
    EndpointConfig scfg = tls_endpoint_config();
    scfg.bind_address = "127.0.0.1";
    scfg.accept_connections = true;
    scfg.connection.handshake_timeout = 2s;  // how long the server keeps trying
    Endpoint server(scfg);
    SilentClient spoofed(server.local_port());
    const std::size_t sent = spoofed.send_initial(1);
    // The server answers and retries until its handshake timeout ends the
    // connection; the "client" never says another word.
    REQUIRE(server.run_until([&] { return server.stats().datagrams_received >= 1; }, 2s));
    REQUIRE(server.connection_count() == 1);
    CHECK(server.run_until([&] { return server.connection_count() == 0; }, 5s));
    std::size_t received = 0, datagrams = 0;
    for (const auto& d : spoofed.received()) {
        received += d.size();
        ++datagrams;
    }
    MESSAGE("spoofed Initial: ", sent, " bytes sent, ", received, " bytes in ", datagrams, " datagrams back");
    CHECK(datagrams >= 1);  // it did answer (its first flight)
    CHECK(received <= 3 * sent);
}
