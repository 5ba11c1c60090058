// holding_client: an ndm-send that tries to hold ndm-recv for ever, through
// the library's public API only (Endpoint, Connection).
//
//   holding_client --port PORT --mode MODE [--seconds T] [--wait SECONDS]
//
// MODE:
//   keepalive  a forward test of -t T: data for T seconds, then no FIN and no
//              more data, only a frame a second that the server must
//              acknowledge (MAX_DATA: its receive window raised by 1 KiB;
//              the public API sends no bare PING), which keeps QUIC's idle
//              timer going (RFC 9000 §10.1);
//   trickle    a forward test of -t T: data for T seconds, then one byte
//              every 200 ms and no FIN: data progress, so only the test's
//              own bound can end it;
//   no-read    a reverse (-R) test of -t T whose client never reads: the
//              server's data stops at the client's flow-control window, the
//              client acknowledges what arrived and raises no window;
//   no-ack     a reverse (-R) test of -t T whose client, once the server's
//              first data arrived, sends nothing more: no ACK (its egress
//              link drops every datagram).
// Prints "close: REASON" (the server's CONNECTION_CLOSE, escaped) and
// "held: SECONDS" (from the handshake to the close), exit 0; exit 1 with a
// one-line reason when the server has not closed within --wait seconds
// (default 30) or the test cannot start.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ndm/endpoint.hpp"
#include "ndm/tls.hpp"
#include "tools/cli/printable.hpp"
#include "tools/perf/perf_session.hpp"

using namespace ndm;

namespace {

[[noreturn]] void fail(const std::string& msg, int code = 1) {
    std::fprintf(stderr, "holding_client: %s\n", msg.c_str());
    std::exit(code);
}

// A link that passes datagrams at once until `mute` is set, then drops them.
// It does not model ECN: what it delivers is not-ECT.
class MutableLink : public Link {
public:
    explicit MutableLink(const bool& mute) : mute_(mute) {}
    void send(const DatagramView& d, Instant) override {
        ++stats_.sent;
        if (mute_) {
            ++stats_.dropped_outage;
            return;
        }
        queue_.emplace_back(d.bytes.begin(), d.bytes.end());
    }
    [[nodiscard]] Instant next_delivery() const override { return queue_.empty() ? kNever : Instant::min(); }
    bool deliver(Instant, Datagram& out) override {
        if (queue_.empty()) return false;
        out.bytes = std::move(queue_.front());
        out.ecn = Ecn::not_ect;
        queue_.pop_front();
        ++stats_.delivered;
        return true;
    }
    [[nodiscard]] LinkStats stats() const override { return stats_; }

private:
    const bool& mute_;
    std::deque<std::vector<std::uint8_t>> queue_;
    LinkStats stats_;
};

}  // namespace

int main(int argc, char** argv) {
    unsigned port = 0;
    std::string mode;
    double seconds = 2, wait = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--port") port = static_cast<unsigned>(std::atoi(argv[i + 1]));
        else if (a == "--mode") mode = argv[i + 1];
        else if (a == "--seconds") seconds = std::atof(argv[i + 1]);
        else if (a == "--wait") wait = std::atof(argv[i + 1]);
        else fail("unknown argument " + a, 2);
    }
    if (port == 0 || port > 65535 || argc % 2 == 0 || (mode != "keepalive" && mode != "trickle" && mode != "no-read" && mode != "no-ack"))
        fail("usage: holding_client --port PORT --mode keepalive|trickle|no-read|no-ack [--seconds T] [--wait SECONDS]", 2);

    EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    cfg.connection.tls.trust = tls::ClientCredentials::insecure();
    cfg.connection.tls.server_name = "localhost";
    // Longer than the test may take: what ends it must be the server.
    cfg.connection.idle_timeout = std::chrono::seconds(600);
    bool mute = false;
    cfg.egress_link = [&mute] { return std::make_unique<MutableLink>(mute); };
    tools::TestParams p;
    p.cc = "cubic";
    p.seconds = seconds;
    p.reverse = mode == "no-read" || mode == "no-ack";
    p.test_id = std::random_device{}();
    ConnectionConfig cc = cfg.connection;
    cc.application_params = tools::encode(p);
    // A small window: the no-read client's buffer fills soon.
    cc.initial_max_data = cc.initial_max_stream_data = 64 << 10;
    cc.autotune_receive_windows = false;
    Endpoint ep(cfg);
    const ConnectionHandle h = ep.connect("127.0.0.1", static_cast<std::uint16_t>(port), cc);
    const Instant start = steady_now();
    try {
        Connection& c = tools::await_established(ep, h, std::chrono::seconds(5));
        std::optional<StreamId> id;
        if (!p.reverse) {
            id = c.open_stream();
            if (!id) fail("the server allows no stream");
        }
        const std::vector<std::uint8_t> block(4096, 0x5a);
        const Instant data_end = start + from_seconds(seconds);
        Instant next_extra = start;
        std::uint64_t window = cc.initial_max_data;
        // The endpoint's loop, woken for the client's own next step too.
        const Instant give_up = start + from_seconds(wait);
        bool closed = false;
        for (Instant now = steady_now(); !closed && now < give_up; now = steady_now()) {
            Connection* cn = ep.connection(h);
            closed = !cn || cn->state() != ConnectionState::established;
            if (closed) break;
            if (mode == "no-ack" && !mute && cn->stats(now).stream_bytes_received > 0) mute = true;
            if (id && now >= next_extra) {
                if (now < data_end) {  // the test's data, a couple of MB/s
                    cn->write(*id, block);
                    next_extra = now + std::chrono::milliseconds(2);
                } else if (mode == "keepalive") {
                    window += 1024;
                    cn->set_receive_windows(window, window, false);
                    next_extra = now + std::chrono::seconds(1);
                } else {  // trickle
                    cn->write(*id, std::span(block).first(1));
                    next_extra = now + std::chrono::milliseconds(200);
                }
            }
            ep.run_once(std::min(id ? next_extra : give_up, give_up));
        }
        const CloseInfo* ci = ep.close_info(h);
        if (!closed || !ci) fail("the server did not end the test within " + std::to_string(wait) + " s");
        std::printf("close: %s\nheld: %.2f\n", tools::printable(ci->reason).c_str(), to_seconds(steady_now() - start));
    } catch (const std::exception& e) {
        fail(e.what());
    }
    return 0;
}
