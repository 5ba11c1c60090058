// File transfer with the event API: `file_transfer recv <port> <out>` writes
// the first stream it receives to <out>; `file_transfer send <port> <in>`
// sends <in> and reports the goodput. Optional: --io uring|epoll|auto.
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
        std::fprintf(stderr, "usage: %s send|recv <port> <file> [--io uring|epoll|auto]\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const auto port = static_cast<std::uint16_t>(std::atoi(argv[2]));
    ndm::EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    if (argc > 5 && std::strcmp(argv[4], "--io") == 0) cfg.backend = ndm::parse_io_backend(argv[5]);
    try {
        if (mode == "recv") {
            cfg.port = port;
            cfg.accept_connections = true;
            ndm::Endpoint ep(cfg);
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
            s.finish();
            s.close(60s);  // waits until everything is acknowledged
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
