// Echo over ndm with the blocking facade: `echo server [port]` answers every
// stream with its own bytes and prints the SHA-256 fingerprint of the
// self-signed certificate it makes; `echo client <port> <fingerprint>
// <message>` pins that certificate and prints the echo.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ndm/endpoint.hpp>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s server [port] | client <port> <fingerprint> <message>\n", argv[0]);
        return 2;
    }
    try {
        const std::string mode = argv[1];
        if (mode == "server") {
            ndm::EndpointConfig cfg;
            cfg.port = argc > 2 ? static_cast<std::uint16_t>(std::atoi(argv[2])) : 4433;
            cfg.accept_connections = true;
            cfg.connection.tls.certificate = ndm::tls::ServerCredentials::self_signed(
                {"localhost", "127.0.0.1"}, std::chrono::system_clock::now());
            ndm::Endpoint ep(cfg);
            std::printf("echo server on %s (%s), certificate fingerprint %s\n", ep.local_address().c_str(),
                        ndm::to_string(ep.backend()), ndm::tls::to_string(cfg.connection.tls.certificate->fingerprint()).c_str());
            std::fflush(stdout);
            for (;;) {
                auto s = ndm::BlockingStream::accept(ep, std::chrono::hours(24));
                // One client's failure (it vanished, its echo could not be
                // delivered) ends its connection, not the server.
                try {
                    std::vector<std::uint8_t> buf(64 * 1024);
                    while (std::size_t n = s.read(buf)) s.write({buf.data(), n});
                    s.close();  // sends FIN; returns once the echo is acknowledged, else throws
                } catch (const ndm::EndpointError& e) {
                    std::fprintf(stderr, "%s\n", e.what());
                }
            }
        }
        if (mode == "client" && argc > 4) {
            const auto pin = ndm::tls::parse_fingerprint(argv[3]);
            if (!pin) throw std::invalid_argument("bad fingerprint (64 hex digits)");
            ndm::EndpointConfig cfg;
            cfg.connection.tls.trust = ndm::tls::ClientCredentials::pinned(*pin);
            ndm::Endpoint ep(cfg);
            auto s = ndm::BlockingStream::connect(ep, "127.0.0.1", static_cast<std::uint16_t>(std::atoi(argv[2])));
            const std::string msg = argv[4];
            s.write({reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size()});
            s.finish();  // the end of the message: the server echoes until it
            std::string echoed;
            std::vector<std::uint8_t> buf(4096);
            while (std::size_t n = s.read(buf)) echoed.append(reinterpret_cast<char*>(buf.data()), n);
            s.close();  // throws if the message (even an empty one) was not acknowledged
            std::printf("%s\n", echoed.c_str());
            return echoed == msg ? 0 : 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "bad arguments\n");
    return 2;
}
