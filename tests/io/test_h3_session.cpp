// h3::Session (include/ndm/h3.hpp) between two Connections back to back, in
// virtual time (tests/support/connection_pair.hpp): requests and responses
// byte-exact beyond the server's stream limit, a body that fails midway
// reset and reported as such (never as a whole one), requests cancelled by
// either side with RESET_STREAM and STOP_SENDING while the connection goes
// on, GOAWAY, streams of unknown types stopped. The same against ngtcp2's
// examples over sockets: tests/cli/ndm_h3_test.sh.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "connection_pair.hpp"
#include "ndm/h3.hpp"
#include "ndm/workload.hpp"

using namespace ndm;

namespace {

// A server answering /N with N bytes of workload::Payload(N), and the driver
// that hands both sessions their connection's events.
struct H3Pair {
    test::ConnectionPair p;
    std::unique_ptr<h3::Session> client = h3::Session::client();
    std::unique_ptr<h3::Session> server;
    std::uint64_t fail_at = ~std::uint64_t{0};  // a body's fill throws at this offset
    std::vector<event::StreamStopped> client_stopped;  // STOP_SENDING the client's transport received
    std::vector<event::StreamReset> client_resets;     // RESET_STREAM likewise

    H3Pair() {
        h3::SessionConfig sc;
        sc.handler = [this](const h3::Request& r) {
            const std::uint64_t n = std::stoull(r.path.substr(1));
            auto payload = std::make_shared<workload::Payload>(n);
            h3::Response resp;
            resp.body.size = n;
            resp.body.fill = [this, payload](std::uint64_t offset, std::span<std::uint8_t> out) {
                if (offset + out.size() > fail_at) throw std::runtime_error("the disk went away");
                payload->fill(offset, out);
            };
            return resp;
        };
        server = h3::Session::server(std::move(sc));
        for (ConnectionConfig* c : {&p.client_cfg, &p.server_cfg}) {
            c->tls.alpn = {h3::kAlpn};
            c->initial_max_streams_uni = 16;
            c->stream_send_buffer = 256 * 1024;  // small, so that streams block and unblock
        }
        p.server_cfg.initial_max_streams = 20;
        REQUIRE(p.handshake());
        pump();
    }

    void pump_one(Connection& c, h3::Session& s) {
        while (auto ev = c.poll_event()) {
            if (std::holds_alternative<event::Established>(*ev)) s.start(c);
            else s.on_event(c, *ev, p.now);
            if (&c != p.client.get()) continue;
            if (const auto* st = std::get_if<event::StreamStopped>(&*ev)) client_stopped.push_back(*st);
            if (const auto* r = std::get_if<event::StreamReset>(&*ev)) client_resets.push_back(*r);
        }
        s.flush(c, p.now);
    }
    void pump() {
        pump_one(*p.client, *client);
        if (p.server) pump_one(*p.server, *server);
    }
    bool run_until(const std::function<bool()>& pred) {
        return p.run_until([&] {
            pump();
            return pred();
        });
    }
};

struct Fetch {
    std::uint64_t size = 0;
    unsigned status = 0;
    std::unique_ptr<workload::PayloadCheck> check;
    std::optional<std::string> done;
};

h3::ResponseHandler handler(Fetch& f) {
    return {[&f](unsigned status, const std::vector<h3::Field>&) { f.status = status; },
            [&f](std::span<const std::uint8_t> b) { f.check->update(b); },
            [&f](const std::string& e) { f.done = e; }};
}

}  // namespace

namespace {
void sixty_gets(H3Pair& h) {
    std::vector<Fetch> fetches(60);
    for (std::size_t i = 0; i < fetches.size(); ++i) {
        fetches[i].size = i == 0 ? 0 : i * i * 571;  // up to ~2 MB
        fetches[i].check = std::make_unique<workload::PayloadCheck>(fetches[i].size);
    }
    std::size_t next = 0, refused = 0;
    const auto submit = [&] {
        while (next < fetches.size()) {
            h3::Request r{"GET", "https", "example.org", "/" + std::to_string(fetches[next].size), {}};
            if (!h.client->submit(*h.p.client, r, handler(fetches[next]))) {
                ++refused;
                return;
            }
            ++next;
        }
    };
    REQUIRE(h.run_until([&] {
        submit();
        for (const Fetch& f : fetches)
            if (!f.done) return false;
        return true;
    }));
    CHECK(refused > 0);  // the stream limit held some back until MAX_STREAMS
    for (const Fetch& f : fetches) {
        INFO("size " << f.size);
        CHECK(*f.done == "");
        CHECK(f.status == 200);
        CHECK(f.check->checked() == f.size);
        CHECK_FALSE(f.check->mismatched());
    }
    CHECK(h.client->open_requests() == 0);
    CHECK(h.server->open_requests() == 0);
    CHECK(h.client->error().empty());
    CHECK(h.p.client->is_established());
}
}  // namespace

TEST_CASE("h3 session: 60 GETs beyond a 20-stream limit arrive whole and byte-exact, 0 B to 2 MB") {
    H3Pair h;
    sixty_gets(h);
}

TEST_CASE("h3 session: the same with every 23rd datagram lost one way and every 31st the other") {
    H3Pair h;
    std::uint64_t up = 0, down = 0;
    h.p.to_server = [&](std::vector<std::uint8_t>&) { return ++up % 23 != 0; };
    h.p.to_client = [&](std::vector<std::uint8_t>&) { return ++down % 31 != 0; };
    sixty_gets(h);
    CHECK(h.p.server->stats(h.p.now).packets_lost > 0);  // the losses were repaired, not absent
}

namespace {
// A GET of /N that must arrive whole while the connection goes on.
void fetch_whole(H3Pair& h, std::uint64_t n) {
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(n);
    REQUIRE(h.client->submit(*h.p.client, {"GET", "https", "example.org", "/" + std::to_string(n), {}}, handler(f)));
    REQUIRE(h.run_until([&] { return f.done.has_value(); }));
    CHECK(*f.done == "");
    CHECK(f.check->checked() == n);
    CHECK_FALSE(f.check->mismatched());
}
}  // namespace

TEST_CASE("h3 session: a body that fails midway resets its stream, the client sees the code, the connection goes on") {
    H3Pair h;
    h.fail_at = 300'000;
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(1'000'000);
    const auto id = h.client->submit(*h.p.client, {"GET", "https", "example.org", "/1000000", {}}, handler(f));
    REQUIRE(id);
    REQUIRE(h.run_until([&] { return f.done.has_value(); }));
    INFO(*f.done);
    CHECK(f.done->find("H3_INTERNAL_ERROR") != std::string::npos);
    CHECK(f.check->checked() < 1'000'000);
    CHECK_FALSE(f.check->mismatched());  // what did arrive is right, and it is not called whole
    REQUIRE(h.client_resets.size() == 1);
    CHECK(h.client_resets[0].id == *id);
    CHECK(h.client_resets[0].error_code == h3::kInternalError);
    CHECK(h.server->error().empty());
    CHECK(h.client->error().empty());
    CHECK(h.p.client->is_established());
    CHECK(h.p.server->is_established());
    REQUIRE(h.run_until([&] { return h.server->open_requests() == 0 && h.client->open_requests() == 0; }));
    h.fail_at = ~std::uint64_t{0};
    fetch_whole(h, 200'000);
}

TEST_CASE("h3 session: the server cancels a request, the client is told H3_REQUEST_REJECTED and goes on") {
    H3Pair h;
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(5'000'000);
    const auto id = h.client->submit(*h.p.client, {"GET", "https", "example.org", "/5000000", {}}, handler(f));
    REQUIRE(id);
    REQUIRE(h.run_until([&] { return f.check->checked() > 0; }));  // the response is under way
    h.server->cancel(*h.p.server, *id, h3::kRequestRejected, h.p.now);
    h.server->cancel(*h.p.server, *id, h3::kRequestRejected, h.p.now);  // a second time: nothing
    h.server->cancel(*h.p.server, 1000, h3::kRequestRejected, h.p.now);  // no such request: nothing
    REQUIRE(h.run_until([&] { return f.done.has_value(); }));
    INFO(*f.done);
    CHECK(f.done->find("H3_REQUEST_REJECTED") != std::string::npos);
    CHECK(f.check->checked() < 5'000'000);
    CHECK_FALSE(f.check->mismatched());
    // Both halves: the response reset, the request's reading stopped (its
    // FIN had arrived, so no STOP_SENDING was needed).
    REQUIRE(h.client_resets.size() == 1);
    CHECK(h.client_resets[0].error_code == h3::kRequestRejected);
    CHECK(h.p.client->is_established());
    REQUIRE(h.run_until([&] { return h.server->open_requests() == 0 && h.client->open_requests() == 0; }));
    fetch_whole(h, 100'000);
}

TEST_CASE("h3 session: the client cancels a download, the server's response stops at its STOP_SENDING, the connection stays open") {
    H3Pair h;
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(20'000'000);
    const auto id = h.client->submit(*h.p.client, {"GET", "https", "example.org", "/20000000", {}}, handler(f));
    REQUIRE(id);
    REQUIRE(h.run_until([&] { return f.check->checked() > 100'000; }));
    h.client->cancel(*h.p.client, *id, h3::kRequestCancelled, h.p.now);
    REQUIRE(f.done.has_value());  // at once: the request is over for the client
    CHECK(f.done->find("H3_REQUEST_CANCELLED") != std::string::npos);
    const std::uint64_t got = f.check->checked();
    CHECK(got < 20'000'000);
    // The server hears STOP_SENDING, stops the response (its transport resets
    // the stream) and forgets the request; nothing more reaches the handler.
    REQUIRE(h.run_until([&] { return h.server->open_requests() == 0; }));
    CHECK(f.check->checked() == got);
    CHECK(h.server->error().empty());
    CHECK(h.p.server->is_established());
    CHECK(h.p.client->is_established());
    CHECK(h.p.server->stats(h.p.now).stream_bytes_sent < 20'000'000);
    fetch_whole(h, 300'000);
}

TEST_CASE("h3 session: the server's GOAWAY stops new requests, and the one in progress completes") {
    H3Pair h;
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(500'000);
    REQUIRE(h.client->submit(*h.p.client, {"GET", "https", "example.org", "/500000", {}}, handler(f)));
    REQUIRE(h.run_until([&] { return h.server->open_requests() == 1; }));
    h.server->shutdown(*h.p.server);
    REQUIRE(h.run_until([&] { return h.client->goaway_received() && f.done.has_value(); }));
    CHECK(*f.done == "");
    CHECK(f.check->checked() == 500'000);
    Fetch late;
    CHECK_FALSE(h.client->submit(*h.p.client, {"GET", "https", "example.org", "/1", {}}, handler(late)));
}

TEST_CASE("h3 session: streams of unknown types are read and ignored (RFC 9114 §6.2.3), requests go on") {
    H3Pair h;
    for (int i = 0; i < 40; ++i) {  // beyond the 16 unidirectional streams allowed at once: each must finish
        std::optional<StreamId> id;
        REQUIRE(h.run_until([&] { return (id = h.p.client->open_uni_stream()).has_value(); }));
        const std::uint8_t reserved_type_and_bytes[] = {0x40, 0x21, 'x', 'y', 'z'};  // type 0x21 (a reserved one)
        CHECK(h.p.client->write(*id, reserved_type_and_bytes, true) == sizeof reserved_type_and_bytes);
    }
    Fetch f;
    f.check = std::make_unique<workload::PayloadCheck>(10'000);
    REQUIRE(h.client->submit(*h.p.client, {"GET", "https", "example.org", "/10000", {}}, handler(f)));
    REQUIRE(h.run_until([&] { return f.done.has_value(); }));
    CHECK(*f.done == "");
    CHECK(f.check->checked() == 10'000);
    CHECK(h.server->error().empty());
    CHECK(h.p.server->is_established());
}

TEST_CASE("h3 session: a stream of an unknown type still open is stopped with H3_STREAM_CREATION_ERROR, and the connection stays open") {
    H3Pair h;
    std::vector<StreamId> ids;
    for (int i = 0; i < 40; ++i) {  // no FIN: the server's STOP_SENDING must end each (RFC 9000 §3.5)
        std::optional<StreamId> id;
        REQUIRE(h.run_until([&] { return (id = h.p.client->open_uni_stream()).has_value(); }));
        const std::uint8_t reserved_type_and_bytes[] = {0x40, 0x21, 'x', 'y', 'z'};
        CHECK(h.p.client->write(*id, reserved_type_and_bytes, false) == sizeof reserved_type_and_bytes);
        ids.push_back(*id);
    }
    REQUIRE(h.run_until([&] { return h.client_stopped.size() == ids.size(); }));
    for (const auto& st : h.client_stopped) CHECK(st.error_code == 0x103);  // H3_STREAM_CREATION_ERROR
    fetch_whole(h, 10'000);
    CHECK(h.server->error().empty());
    CHECK(h.p.server->is_established());
}

TEST_CASE("h3 session: error names and misuse") {
    CHECK(h3::error_name(0x100) == "H3_NO_ERROR");
    CHECK(h3::error_name(0x10c) == "H3_REQUEST_CANCELLED");
    CHECK(h3::error_name(0x201) == "QPACK_ENCODER_STREAM_ERROR");
    CHECK(h3::error_name(0x42) == "0x42");
    CHECK_THROWS_AS(h3::Session::server({}), h3::SessionError);
}
