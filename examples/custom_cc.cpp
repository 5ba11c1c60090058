// A user-defined congestion controller plugged in by name: a fixed window
// ("fixed", option window=<bytes>) registered with ndm::cc::register_controller
// and used by a loopback transfer between two endpoints in one process.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <ndm/cc.hpp>
#include <ndm/endpoint.hpp>

using namespace std::chrono_literals;

namespace {

class FixedWindow final : public ndm::cc::Controller {
public:
    explicit FixedWindow(const ndm::cc::Options& o) {
        if (auto it = o.find("window"); it != o.end()) window_ = std::stoull(it->second);
    }
    void on_ack(const ndm::cc::AckEvent&) override {}
    void on_congestion_event(const ndm::cc::CongestionEvent&) override { ++losses_; }
    [[nodiscard]] std::uint64_t cwnd() const override { return window_; }
    [[nodiscard]] std::string_view state() const override { return "fixed"; }
    [[nodiscard]] std::string_view name() const override { return "fixed"; }

private:
    std::uint64_t window_ = 256 * 1024;
    std::uint64_t losses_ = 0;
};

}  // namespace

int main() {
    ndm::cc::register_controller({"fixed", "constant window (example)", [](const ndm::cc::Params&, const ndm::cc::Options& o) {
                                      return std::make_unique<FixedWindow>(o);
                                  }});
    ndm::EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    cfg.connection.cc = "fixed";
    cfg.connection.cc_options = "window=524288";
    // TLS 1.3: the server presents a self-signed certificate, the client pins it.
    cfg.connection.tls.certificate =
        ndm::tls::ServerCredentials::self_signed({"127.0.0.1"}, std::chrono::system_clock::now());
    cfg.connection.tls.trust = ndm::tls::ClientCredentials::pinned(cfg.connection.tls.certificate->fingerprint());
    ndm::EndpointConfig scfg = cfg;
    scfg.accept_connections = true;
    ndm::Endpoint server(scfg), client(cfg);

    std::atomic<std::uint64_t> received{0};
    std::atomic<bool> done{false}, stop{false};
    std::vector<std::uint8_t> buf(1 << 20);
    server.on_event([&](ndm::ConnectionHandle h, const ndm::Event& ev) {
        if (auto* r = std::get_if<ndm::event::StreamReadable>(&ev)) {
            ndm::Connection* c = server.connection(h);
            while (std::size_t n = c->read(r->id, buf)) received += n;
            if (c->stream_finished(r->id)) done = true;
        }
    });
    // The server keeps running (it must acknowledge) until the client is done.
    std::thread server_thread([&] { server.run_until([&] { return stop.load(); }, 60s); });

    auto stream = ndm::BlockingStream::connect(client, "127.0.0.1", server.local_port());
    std::vector<std::uint8_t> data(64u << 20, 0x5a);
    const auto t0 = std::chrono::steady_clock::now();
    stream.write(data);
    stream.close(30s);  // sends FIN; returns once everything is acknowledged, else throws
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ndm::Connection* c = client.find(stream.handle());
    std::printf("cc=fixed: %llu bytes in %.3f s (%.2f Gbit/s)%s\n", static_cast<unsigned long long>(received.load()), secs,
                static_cast<double>(received.load()) * 8 / secs / 1e9, c ? "" : " (connection closed)");
    stop = true;
    server_thread.join();
    return done && received == data.size() ? 0 : 1;
}
