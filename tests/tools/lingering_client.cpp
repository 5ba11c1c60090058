// lingering_client: an ndm-send whose final CONNECTION_CLOSE never arrives.
//
//   lingering_client --port PORT --bytes N --linger SECONDS
//
// Runs a forward test of N bytes against an ndm-recv on 127.0.0.1:PORT (the
// tools' test parameters), reads the receiver's report and acknowledges it,
// then keeps its socket open for SECONDS without sending another datagram
// (what the server sees when the client's close is lost and the client is
// gone) and exits without closing. Prints "report: BYTES bytes" once it has
// the report; exits 1 with a one-line reason when the test fails.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ndm/endpoint.hpp"
#include "ndm/tls.hpp"
#include "tools/perf/perf_session.hpp"

using namespace ndm;

namespace {

[[noreturn]] void fail(const std::string& msg, int code = 1) {
    std::fprintf(stderr, "lingering_client: %s\n", msg.c_str());
    std::_Exit(code);
}

// Reads the stream to its FIN while giving the endpoint turns; the bytes.
std::vector<std::uint8_t> read_to_fin(Endpoint& ep, ConnectionHandle h, StreamId id) {
    std::vector<std::uint8_t> got, buf(4096);
    const bool done = ep.run_until(
        [&] {
            Connection* c = ep.connection(h);
            if (!c) return true;
            for (std::size_t n; (n = c->read(id, buf)) > 0;) got.insert(got.end(), buf.begin(), buf.begin() + n);
            return c->stream_finished(id);
        },
        std::chrono::seconds(10));
    if (!done || !ep.connection(h)) fail("no report from the receiver");
    return got;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 0;
    std::uint64_t bytes = 1 << 20;
    double linger = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--port") port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (a == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--linger") linger = std::atof(argv[i + 1]);
        else fail("unknown argument " + a, 2);
    }
    if (port == 0 || port > 65535 || bytes == 0 || argc % 2 == 0)
        fail("usage: lingering_client --port PORT --bytes N --linger SECONDS", 2);

    EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    cfg.connection.tls.trust = tls::ClientCredentials::insecure();
    cfg.connection.tls.server_name = "localhost";
    tools::TestParams p;
    p.cc = "cubic";
    p.seconds = 0;
    p.bytes = bytes;
    p.test_id = std::random_device{}();
    ConnectionConfig cc = cfg.connection;
    cc.application_params = tools::encode(p);
    Endpoint ep(cfg);
    const ConnectionHandle h = ep.connect("127.0.0.1", static_cast<std::uint16_t>(port), cc);
    try {
        Connection& c = tools::await_established(ep, h, std::chrono::seconds(5));
        const auto id = c.open_stream();
        if (!id) fail("the receiver allows no stream");
        const std::vector<std::uint8_t> block(16384, 0x5a);
        std::uint64_t written = 0;
        ep.run_until(
            [&] {
                Connection* cn = ep.connection(h);
                if (!cn) return true;
                while (written < bytes) {
                    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - written));
                    const std::size_t n = cn->write(*id, std::span(block).first(want), written + want == bytes);
                    written += n;
                    if (n < want) break;
                }
                return written == bytes;
            },
            std::chrono::seconds(10));
        if (written != bytes) fail("could not write the test's bytes");
        const tools::ReceiverReport r = tools::decode_receiver_report(read_to_fin(ep, h, *id));
        // A few more turns, so that the ACK of the report leaves (max_ack_delay is 25 ms).
        ep.run_until([] { return false; }, std::chrono::milliseconds(200));
        std::printf("report: %llu bytes\n", static_cast<unsigned long long>(r.bytes));
        std::fflush(stdout);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(linger));
    std::_Exit(0);  // no destructors: the Endpoint would send a CONNECTION_CLOSE
}
