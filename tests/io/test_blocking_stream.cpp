// BlockingStream::close() over real sockets through an emulated path: it
// returns only once the peer acknowledged every byte and the FIN (a large
// send through a slow, lossy path arrives whole; an empty stream arrives),
// and throws, naming the bytes, when it has to abandon data.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "util/rng.hpp"

#include "endpoint_test_util.hpp"

using namespace ndm;
using namespace std::chrono_literals;

namespace {

std::vector<std::uint8_t> seeded_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    util::Xoshiro256 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng.next());
    return v;
}

// Accepts one stream on `ep` in a thread and reads it to its end.
class Reader {
public:
    explicit Reader(Endpoint& ep)
        : thread_([this, &ep] {
              try {
                  auto s = BlockingStream::accept(ep, 10s);
                  std::vector<std::uint8_t> buf(64 * 1024);
                  while (std::size_t n = s.read(buf, 10s)) got_.insert(got_.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                  ended_ = true;
                  ep.run_until([] { return false; }, 200ms);  // the last ACKs leave
              } catch (const std::exception& e) {
                  error_ = e.what();
              }
          }) {}
    ~Reader() {
        if (thread_.joinable()) thread_.join();
    }
    const std::vector<std::uint8_t>& join() {
        thread_.join();
        return got_;
    }
    [[nodiscard]] bool ended() const { return ended_; }
    [[nodiscard]] const std::string& error() const { return error_; }

private:
    std::vector<std::uint8_t> got_;
    bool ended_ = false;
    std::string error_;
    std::thread thread_;
};

EndpointConfig loopback_config() {
    EndpointConfig cfg = test::tls_endpoint_config();
    cfg.bind_address = "127.0.0.1";
    cfg.connection.max_datagram_size = 1452;
    return cfg;
}

}  // namespace

TEST_CASE("blocking stream: close() lingers while a slow lossy path keeps acknowledging, and every byte arrives") {
    // 2 MB through 20 Mbit/s, 10 ms each way, 1 % loss each way: about 2 s
    // of sending after write() returned (the send buffer took it all; the
    // loss holds a loss-based controller to ~7 Mbit/s), twice the 1 s close
    // timeout, which bounds a stretch without acknowledgements, not the wait.
    const auto profile = emu::parse_profile("rate=20mbit,delay=10ms,loss=1%");
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    scfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::down, 2); };
    ccfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::up, 1); };
    Endpoint server(scfg);
    Endpoint client(ccfg);
    Reader reader(server);
    const auto data = seeded_bytes(2u << 20, 5);
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    s.write(data);
    const auto t0 = steady_now();
    CHECK_NOTHROW(s.close(1s));
    const double lingered = std::chrono::duration<double>(steady_now() - t0).count();
    MESSAGE("close() lingered " << lingered << " s");
    CHECK(lingered > 1);
    const auto& got = reader.join();
    CHECK(reader.error() == "");
    CHECK(reader.ended());
    CHECK(got.size() == data.size());
    CHECK(got == data);
}

TEST_CASE("blocking stream: an empty stream arrives, and its close() waits for the FIN's acknowledgement") {
    const auto profile = emu::parse_profile("delay=10ms,loss=10%");
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    scfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::down, 4); };
    ccfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::up, 3); };
    Endpoint server(scfg);
    Endpoint client(ccfg);
    Reader reader(server);
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    CHECK_NOTHROW(s.close());  // FIN without a byte: the stream exists for the peer
    reader.join();
    CHECK(reader.error() == "");
    CHECK(reader.ended());
}

TEST_CASE("blocking stream: close() throws, naming the bytes, when the peer stops acknowledging") {
    auto open = std::make_shared<std::atomic<bool>>(true);
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    ccfg.egress_link = [open] {  // passes datagrams while *open holds
        return std::make_unique<test::FilterLink>([open](std::vector<std::uint8_t>&) { return open->load(); });
    };
    Endpoint server(scfg);
    Endpoint client(ccfg);
    std::atomic<bool> stop{false};
    std::thread serve([&] { server.run_until([&] { return stop.load(); }, 20s); });
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    const auto data = seeded_bytes(300'000, 6);
    open->store(false);  // the path dies: nothing written now can arrive
    s.write(data);
    const auto t0 = steady_now();
    CHECK_THROWS_WITH_AS(s.close(300ms), doctest::Contains("of 300000 bytes written; nothing acknowledged for 0.3 s"),
                         EndpointError);
    CHECK(steady_now() - t0 < 5s);
    // The connection was closed with the abandonment code, and is gone soon.
    const CloseInfo* ci = client.close_info(s.handle());
    REQUIRE(ci);
    CHECK(ci->code == kCloseAbandoned);
    CHECK(ci->reason == "closed with 300000 of 300000 bytes unacknowledged");
    stop = true;
    serve.join();
}

TEST_CASE("blocking stream: close() after the peer closed mid-transfer throws with the peer's reason") {
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    // 1 Mbit/s: 4 MB cannot arrive before the server gives up on it.
    const auto profile = emu::parse_profile("rate=1mbit");
    ccfg.egress_link = [profile] { return emu::make_link(profile, emu::Direction::up, 1); };
    Endpoint server(scfg);
    Endpoint client(ccfg);
    std::string server_error;
    std::thread t([&] {
        try {
            auto s = BlockingStream::accept(server, 10s);
            std::vector<std::uint8_t> buf(4096);
            (void)s.read(buf, 10s);
            Connection* c = server.connection(s.handle());
            REQUIRE(c);
            c->close(7, "server stops reading", steady_now());
            server.run_until([] { return false; }, 300ms);
        } catch (const std::exception& e) {
            server_error = e.what();
        }
    });
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    s.write(seeded_bytes(4u << 20, 8));
    CHECK_THROWS_WITH_AS(s.close(2s), doctest::Contains("connection closed: server stops reading"), EndpointError);
    t.join();
    CHECK(server_error == "");
}

TEST_CASE("blocking stream: a blocked read ends with an error naming the peer's RESET_STREAM code") {
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    Endpoint server(scfg);
    Endpoint client(ccfg);
    std::atomic<bool> done{false};
    std::string error;
    std::uint64_t code = 0;
    std::size_t got = 0;
    Duration blocked{};
    std::thread t([&] {
        try {
            auto s = BlockingStream::accept(server, 10s);
            std::vector<std::uint8_t> buf(4096);
            got += s.read(buf, 10s);
            const Instant t0 = steady_now();
            try {
                for (;;) got += s.read(buf, 10s);  // blocks: the client sends nothing more
            } catch (const StreamAbortedError& e) {
                blocked = steady_now() - t0;
                error = e.what();
                code = e.code();
            }
        } catch (const std::exception& e) {
            error = std::string("unexpected: ") + e.what();
        }
        done = true;
    });
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    s.write(seeded_bytes(1000, 9));
    client.run_until([] { return false; }, 300ms);  // the bytes arrive, the reader blocks for more
    Connection* c = client.connection(s.handle());
    REQUIRE(c);
    c->reset_stream(s.stream(), 42);
    client.run_until([&] { return done.load(); }, 5s);
    t.join();
    CHECK(got == 1000);
    CHECK(code == 42);
    CHECK_MESSAGE(error.find("the peer reset stream 0 with code 0x2a") != std::string::npos, error);
    CHECK(blocked < 5s);
}

TEST_CASE("blocking stream: a blocked write, and close(), end with an error naming the peer's STOP_SENDING code") {
    EndpointConfig scfg = loopback_config(), ccfg = loopback_config();
    scfg.accept_connections = true;
    ccfg.connection.stream_send_buffer = 256 * 1024;  // the write blocks long before 64 MB
    Endpoint server(scfg);
    Endpoint client(ccfg);
    std::atomic<bool> stop{false};
    std::string server_error;
    std::thread t([&] {
        try {
            auto s = BlockingStream::accept(server, 10s);
            std::vector<std::uint8_t> buf(64 * 1024);
            (void)s.read(buf, 10s);
            if (Connection* c = server.connection(s.handle())) c->stop_sending(s.stream(), 9);
            server.run_until([&] { return stop.load(); }, 10s);
        } catch (const std::exception& e) {
            server_error = e.what();
        }
    });
    auto s = BlockingStream::connect(client, "127.0.0.1", server.local_port());
    const auto data = seeded_bytes(64u << 20, 10);
    const Instant t0 = steady_now();
    std::uint64_t code = 0;
    std::string error;
    try {
        s.write(data, 10s);
    } catch (const StreamAbortedError& e) {
        code = e.code();
        error = e.what();
    }
    CHECK(steady_now() - t0 < 5s);
    CHECK(code == 9);
    CHECK_MESSAGE(error.find("the peer stopped stream 0 with code 0x9 (STOP_SENDING)") != std::string::npos, error);
    CHECK(client.connection(s.handle())->is_established());  // the stream ended, not the connection
    CHECK_THROWS_AS(s.finish(), StreamAbortedError);
    CHECK_THROWS_WITH_AS(s.close(1s), doctest::Contains("the peer stopped stream 0 with code 0x9"), StreamAbortedError);
    stop = true;
    t.join();
    CHECK(server_error == "");
}
