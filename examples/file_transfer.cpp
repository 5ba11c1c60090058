// File transfer with the event API: `file_transfer recv <port> <out>` writes
// the first stream it receives to <out> and prints the fingerprint of its
// self-signed certificate; `file_transfer send <port> <in> --pin <fingerprint>`
// sends <in> to the server with that certificate and reports the goodput.
// Optional: --io uring|epoll|auto.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <ndm/endpoint.hpp>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s recv <port> <file> | send <port> <file> --pin <fingerprint> [--io uring|epoll|auto]\n",
                     argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const auto port = static_cast<std::uint16_t>(std::atoi(argv[2]));
    ndm::EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    try {
        for (int i = 4; i + 1 < argc; i += 2) {
            if (std::strcmp(argv[i], "--io") == 0) {
                cfg.backend = ndm::parse_io_backend(argv[i + 1]);
            } else if (std::strcmp(argv[i], "--pin") == 0) {
                const auto pin = ndm::tls::parse_fingerprint(argv[i + 1]);
                if (!pin) throw std::invalid_argument("--pin: expected 64 hex digits");
                cfg.connection.tls.trust = ndm::tls::ClientCredentials::pinned(*pin);
            }
        }
        if (mode == "recv") {
            cfg.port = port;
            cfg.accept_connections = true;
            cfg.connection.tls.certificate =
                ndm::tls::ServerCredentials::self_signed({"localhost", "127.0.0.1"}, std::chrono::system_clock::now());
            ndm::Endpoint ep(cfg);
            std::printf("certificate fingerprint %s\n", ndm::tls::to_string(cfg.connection.tls.certificate->fingerprint()).c_str());
            std::fflush(stdout);
            std::ofstream out(argv[3], std::ios::binary);
            bool done = false;
            std::uint64_t total = 0;
            ep.on_event([&](ndm::ConnectionHandle h, const ndm::Event& ev) {
                if (auto* r = std::get_if<ndm::event::StreamReadable>(&ev)) {
                    ndm::Connection* c = ep.connection(h);
                    // Zero-copy: write the stream's own buffer to the file, then let it go.
                    for (auto data = c->peek(r->id); !data.empty(); data = c->peek(r->id)) {
                        out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
                        total += data.size();
                        c->consume(r->id, data.size());
                    }
                    done |= c->stream_finished(r->id);
                } else if (auto* cl = std::get_if<ndm::event::Closed>(&ev)) {
                    if (!done) std::fprintf(stderr, "connection closed early: %s\n", cl->info.reason.c_str());
                }
            });
            std::printf("receiving on %s (%s)\n", ep.local_address().c_str(), ndm::to_string(ep.backend()));
            ep.run_until([&] { return done; }, 24h);
            ep.run_until([] { return false; }, 200ms);  // let the last ACKs leave
            std::printf("received %llu bytes\n", static_cast<unsigned long long>(total));
            return done ? 0 : 1;
        }
        if (mode == "send") {
            std::ifstream in(argv[3], std::ios::binary);
            if (!in) throw std::runtime_error(std::string("cannot open ") + argv[3]);
            ndm::Endpoint ep(cfg);
            auto s = ndm::BlockingStream::connect(ep, "127.0.0.1", port);
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<std::uint8_t> buf(1 << 20);
            std::uint64_t total = 0;
            while (in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size())) || in.gcount()) {
                const auto n = static_cast<std::size_t>(in.gcount());
                s.write({buf.data(), n});
                total += n;
            }
            // Returns once the receiver has acknowledged every byte and the
            // end of the file; throws (exit 1 below) if any could not be
            // delivered, with no acknowledgement for 60 s.
            s.close(60s);
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("sent %llu bytes in %.3f s (%.2f Gbit/s)\n", static_cast<unsigned long long>(total), secs,
                        static_cast<double>(total) * 8 / secs / 1e9);
            return 0;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 2;
}
