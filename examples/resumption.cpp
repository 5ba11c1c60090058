// Session resumption and 0-RTT with the sans-I/O API, in one process and
// without sockets: a client and a server Connection pass datagrams by hand.
// The first connection is a full handshake; the server sends a session
// ticket (TlsOptions::session_tickets), which the client receives as
// event::SessionTicket and keeps as bytes (ResumptionTicket::serialize, what
// a client would write to a file). The second connection resumes with it
// (TlsOptions::resume): no certificate is sent, and with early_data on both
// sides the client's request goes in its first flight, in 0-RTT packets,
// before the handshake completes. Prints what each handshake was.
//   ndm-example-resumption            0-RTT accepted
//   ndm-example-resumption --refuse   the server did not opt in: the same
//                                     bytes arrive after the handshake
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ndm/connection.hpp>

namespace {

const ndm::Instant t0{};

struct Pair {
    std::unique_ptr<ndm::Connection> client, server;
    ndm::ConnectionConfig server_cfg;
    ndm::Instant now = t0;
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(ndm::kMaxDatagramSize);

    // Moves every datagram both ways until neither side has one; `up_only`:
    // the client's datagrams only (its first flight).
    void exchange(bool up_only = false) {
        for (bool again = true; again;) {
            again = false;
            while (std::size_t n = client->poll_datagram(buf, now)) {
                again = true;
                const std::span<const std::uint8_t> d(buf.data(), n);
                if (!server) server = ndm::Connection::accept(server_cfg, d, now);
                else server->on_datagram(d, now);
            }
            if (up_only) return;
            while (server) {
                const std::size_t n = server->poll_datagram(buf, now);
                if (n == 0) break;
                again = true;
                client->on_datagram(std::span<const std::uint8_t>(buf.data(), n), now);
            }
        }
    }
    void run(int rounds = 20) {
        for (int i = 0; i < rounds; ++i) {
            exchange();
            now += std::chrono::milliseconds(10);
            client->on_timeout(now);
            if (server) server->on_timeout(now);
        }
    }
};

std::string read_all(ndm::Connection& c, ndm::StreamId id) {
    std::string out;
    char b[4096];
    while (std::size_t n = c.read(id, {reinterpret_cast<std::uint8_t*>(b), sizeof b})) out.append(b, n);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const bool refuse = argc > 1 && std::strcmp(argv[1], "--refuse") == 0;
    const auto wall = std::chrono::system_clock::now();
    const auto cert = ndm::tls::ServerCredentials::self_signed({"localhost"}, wall);

    ndm::ConnectionConfig client_cfg;
    client_cfg.tls.server_name = "localhost";
    client_cfg.tls.trust = ndm::tls::ClientCredentials::pinned(cert.fingerprint());
    client_cfg.tls.wall_time = wall;
    ndm::ConnectionConfig server_cfg;
    server_cfg.tls.certificate = cert;  // its key seals the tickets: keep the same credentials
    server_cfg.tls.wall_time = wall;
    server_cfg.tls.session_tickets = true;
    server_cfg.tls.early_data = true;  // accept 0-RTT (off by default: replay, docs/security.md)

    // 1. A full handshake; keep the ticket the server sends after it.
    std::vector<std::uint8_t> saved;
    {
        Pair p;
        p.server_cfg = server_cfg;
        p.client = ndm::Connection::connect(client_cfg, p.now);
        p.run();
        while (auto ev = p.client->poll_event())
            if (auto* t = std::get_if<ndm::event::SessionTicket>(&*ev)) saved = t->ticket.serialize();
        std::printf("first connection: resumed=%d, ticket of %zu bytes\n", p.client->handshake_summary().resumed,
                    saved.size());
        if (saved.empty()) return 1;
    }

    // 2. Resume with it, the request written before the handshake.
    Pair p;
    p.server_cfg = server_cfg;
    p.server_cfg.tls.early_data = !refuse;
    client_cfg.tls.resume = ndm::tls::ResumptionTicket::parse(saved);
    client_cfg.tls.early_data = true;
    p.client = ndm::Connection::connect(client_cfg, p.now);
    if (!p.client->can_send_early_data()) {
        std::printf("the ticket allows no 0-RTT\n");
        return 1;
    }
    const auto id = p.client->open_stream();
    const std::string request = "GET /index.html\r\n";
    p.client->write(*id, {reinterpret_cast<const std::uint8_t*>(request.data()), request.size()}, true);
    p.exchange(/*up_only=*/true);
    std::printf("server read in the client's first flight: \"%s\"\n",
                p.server ? read_all(*p.server, *id).c_str() : "");
    p.run();
    const ndm::HandshakeSummary s = p.client->handshake_summary();
    std::string later = read_all(*p.server, *id);
    std::printf("second connection: resumed=%d early_data=%s; read after the handshake: \"%s\"\n", s.resumed,
                s.early_data.c_str(), later.c_str());
    return s.resumed ? 0 : 1;
}
