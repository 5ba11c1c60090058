// ECN in the core (RFC 9000 §13.4, RFC 9002 §7.1): the receiver's counts and
// ACK_ECN frames, the sender's validation against hostile or mangled counts,
// the controllers' response to a CE event, and two connections back to back
// over paths that carry, clear or rewrite the codepoint.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cc_test_util.hpp"
#include "connection_pair.hpp"
#include "ndm/cc.hpp"
#include "ndm/connection.hpp"
#include "ndm/qlog.hpp"
#include "quic_test_util.hpp"
#include "transport/ack_tracker.hpp"
#include "transport/ecn_validator.hpp"
#include "wire/frame.hpp"

using namespace std::chrono_literals;
using ndm::Ecn;
using ndm::EcnState;
using ndm::Instant;
using ndm::transport::EcnValidator;
using ndm::transport::PacketSpace;
using ndm::wire::EcnCounts;

namespace {

constexpr PacketSpace kApp = PacketSpace::application;
constexpr std::uint64_t kMaxVarint = (std::uint64_t{1} << 62) - 1;

// A validator that sent `n` ECT(0) packets in the application space.
EcnValidator sent_ect0(std::uint64_t n) {
    EcnValidator v(true);
    for (std::uint64_t i = 0; i < n; ++i) v.on_packet_sent(v.codepoint(), kApp);
    return v;
}

EcnValidator::Acked acked(std::uint64_t ect0, bool largest_is_new = true) { return {ect0, largest_is_new}; }

}  // namespace

TEST_CASE("ecn: codepoints are the TOS byte's two low bits (RFC 3168 §5)") {
    CHECK(ndm::ecn_of_tos(0x02) == Ecn::ect0);
    CHECK(ndm::ecn_of_tos(0x01) == Ecn::ect1);
    CHECK(ndm::ecn_of_tos(0xb3) == Ecn::ce);  // DSCP bits ignored
    CHECK(ndm::ecn_of_tos(0xb8) == Ecn::not_ect);
    CHECK(ndm::tos_with(0xb8, Ecn::ect0) == 0xba);
    CHECK(ndm::tos_with(0xbb, Ecn::not_ect) == 0xb8);
    CHECK(ndm::is_ect(Ecn::ce));
    CHECK_FALSE(ndm::is_ect(Ecn::not_ect));
}

TEST_CASE("ecn: the receiver counts codepoints per packet and sends ACK_ECN once one is non-zero (RFC 9000 §13.4.1)") {
    ndm::transport::AckTracker t({});
    const Instant now{};
    CHECK(t.on_packet_received(0, true, now, Ecn::not_ect));
    CHECK_FALSE(t.build_ack(now).ecn.has_value());  // all not-ECT: a plain ACK (type 0x02)
    CHECK(t.on_packet_received(1, false, now, Ecn::ect0));
    CHECK(t.on_packet_received(2, false, now, Ecn::ect0));
    CHECK(t.on_packet_received(3, false, now, Ecn::ect1));
    CHECK(t.on_packet_received(4, false, now, Ecn::ce));
    CHECK_FALSE(t.on_packet_received(4, false, now, Ecn::ce));  // a duplicate is not counted again
    const auto f = t.build_ack(now);
    REQUIRE(f.ecn.has_value());
    CHECK(*f.ecn == EcnCounts{2, 1, 1});
    CHECK(t.ecn_counts() == EcnCounts{2, 1, 1});

    // The frame round-trips as type 0x03 with its counts, the largest varints included.
    ndm::wire::AckFrame a = f;
    a.ecn = EcnCounts{kMaxVarint, 0, kMaxVarint};
    std::vector<std::uint8_t> buf(256);
    ndm::wire::Writer w(buf);
    REQUIRE(ndm::wire::encode_frame(w, a, 3));
    CHECK(buf[0] == ndm::wire::frame_type::ack_ecn);
    ndm::wire::Reader r({buf.data(), w.position()});
    ndm::wire::Frame back;
    ndm::wire::Error err;
    REQUIRE(ndm::wire::decode_frame(r, back, err, 3));
    const auto* b = std::get_if<ndm::wire::AckFrame>(&back);
    REQUIRE(b != nullptr);
    REQUIRE(b->ecn.has_value());
    CHECK(*b->ecn == *a.ecn);
}

TEST_CASE("ecn: a CE-marked ack-eliciting packet is acknowledged at once (RFC 9000 §13.2.1)") {
    ndm::transport::AckTracker t({});
    const Instant now = Instant{} + 1s;
    CHECK(t.on_packet_received(0, true, now, Ecn::ect0));
    CHECK(t.ack_deadline() > now);  // the first in-order packet waits for max_ack_delay
    ndm::transport::AckTracker u({});
    CHECK(u.on_packet_received(0, true, now, Ecn::ce));
    CHECK(u.ack_deadline() == now);
}

TEST_CASE("ecn validation: testing, then unknown, then capable on counts that cover the marked packets") {
    EcnValidator v(true);
    CHECK(v.state() == EcnState::testing);
    for (std::uint64_t i = 0; i < EcnValidator::kTestingPackets; ++i) {
        CHECK(v.codepoint() == Ecn::ect0);
        v.on_packet_sent(v.codepoint(), kApp);
    }
    CHECK(v.state() == EcnState::unknown);
    CHECK(v.codepoint() == Ecn::not_ect);  // §13.4.2: no marking until validated
    v.on_packet_sent(v.codepoint(), kApp);
    CHECK(v.ect0_sent() == EcnValidator::kTestingPackets);
    CHECK(v.on_ack(EcnCounts{4, 0, 0}, acked(4), kApp) == 0);
    CHECK(v.state() == EcnState::capable);
    CHECK(v.codepoint() == Ecn::ect0);
    // CE: the increase is the congestion signal, counted once.
    CHECK(v.on_ack(EcnCounts{7, 0, 2}, acked(5), kApp) == 2);
    CHECK(v.on_ack(EcnCounts{8, 0, 2}, acked(1), kApp) == 0);
    CHECK(v.ce_reported() == 2);
    CHECK(v.state() == EcnState::capable);
}

TEST_CASE("ecn validation: counts of a reordered ACK (no new largest) are skipped, not failed (§13.4.2.1)") {
    auto v = sent_ect0(10);
    CHECK(v.on_ack(EcnCounts{6, 0, 0}, acked(6), kApp) == 0);
    CHECK(v.on_ack(EcnCounts{3, 0, 0}, acked(1, false), kApp) == 0);  // older, lower counts
    CHECK(v.state() == EcnState::capable);
}

TEST_CASE("ecn validation fails, and marking stops, on mangled or hostile counts") {
    SUBCASE("no counts for acknowledged ECT(0) packets (the peer or path drops them)") {
        auto v = sent_ect0(3);
        CHECK(v.on_ack(std::nullopt, acked(2), kApp) == 0);
        CHECK(v.state() == EcnState::failed);
    }
    SUBCASE("marks cleared: ECT(0)+CE rose by less than the ECT(0) packets acknowledged") {
        auto v = sent_ect0(10);
        CHECK(v.on_ack(EcnCounts{2, 0, 0}, acked(5), kApp) == 0);
        CHECK(v.state() == EcnState::failed);
        CHECK(v.failure().find("cleared") != std::string::npos);
    }
    SUBCASE("decreasing counts") {
        auto v = sent_ect0(10);
        CHECK(v.on_ack(EcnCounts{5, 0, 1}, acked(5), kApp) == 1);
        CHECK(v.on_ack(EcnCounts{6, 0, 0}, acked(1), kApp) == 0);
        CHECK(v.state() == EcnState::failed);
        CHECK(v.failure().find("decreased") != std::string::npos);
    }
    SUBCASE("counts beyond the packets sent, up to the largest varint and beyond") {
        for (const EcnCounts c : {EcnCounts{11, 0, 0}, EcnCounts{5, 0, 6}, EcnCounts{5, 1, 0},
                                  EcnCounts{kMaxVarint, kMaxVarint, kMaxVarint}, EcnCounts{0, 0, kMaxVarint},
                                  EcnCounts{UINT64_MAX, 0, UINT64_MAX}}) {
            CAPTURE(c.ect0);
            CAPTURE(c.ce);
            auto v = sent_ect0(10);
            CHECK(v.on_ack(c, acked(2), kApp) == 0);
            CHECK(v.state() == EcnState::failed);
            CHECK(v.ce_reported() == 0);
        }
    }
    SUBCASE("every packet marked while testing is lost") {
        auto v = sent_ect0(EcnValidator::kTestingPackets);
        for (std::uint64_t i = 0; i + 1 < EcnValidator::kTestingPackets; ++i) v.on_packet_lost(Ecn::ect0);
        CHECK(v.state() == EcnState::unknown);
        v.on_packet_lost(Ecn::ect0);
        CHECK(v.state() == EcnState::failed);
    }
    SUBCASE("a failed validator ignores later counts and never marks again") {
        auto v = sent_ect0(10);
        v.on_ack(std::nullopt, acked(1), kApp);
        REQUIRE(v.state() == EcnState::failed);
        CHECK(v.on_ack(EcnCounts{10, 0, 5}, acked(5), kApp) == 0);
        CHECK(v.codepoint() == Ecn::not_ect);
    }
}

TEST_CASE("ecn validation: counts are per packet number space (RFC 9000 §13.4.1)") {
    EcnValidator v(true);
    v.on_packet_sent(Ecn::ect0, PacketSpace::initial);
    v.on_packet_sent(Ecn::ect0, PacketSpace::handshake);
    v.on_packet_sent(Ecn::ect0, kApp);
    // One ECT(0) packet per space: a count of 2 in one space is impossible.
    CHECK(v.on_ack(EcnCounts{1, 0, 0}, acked(1), PacketSpace::initial) == 0);
    CHECK(v.on_ack(EcnCounts{1, 0, 0}, acked(1), PacketSpace::handshake) == 0);
    CHECK(v.state() == EcnState::capable);
    CHECK(v.on_ack(EcnCounts{2, 0, 0}, acked(1), kApp) == 0);
    CHECK(v.state() == EcnState::failed);
}

TEST_CASE("ecn: disabled sends not-ECT and ignores counts") {
    EcnValidator v(false);
    CHECK(v.state() == EcnState::disabled);
    CHECK(v.codepoint() == Ecn::not_ect);
    CHECK(v.on_ack(EcnCounts{0, 0, 3}, acked(0), kApp) == 0);
    CHECK(v.state() == EcnState::disabled);
}

// ---------------------------------------------------------------- controllers

namespace {
ndm::cc::CongestionEvent ce_event(Instant now, Instant largest_acked_sent, std::uint64_t ce = 1) {
    ndm::cc::CongestionEvent ev;
    ev.now = now;
    ev.ecn_ce = ce;
    ev.largest_lost_sent_time = largest_acked_sent;
    return ev;
}
}  // namespace

TEST_CASE("ecn: reno, cubic, ndm-cubic and ndm-lkm reduce once per round on CE events and never undo them (RFC 9002 §7.1, B.7)") {
    using ndm::test::at;
    for (const std::string name : {"reno", "cubic", "ndm-cubic", "ndm-lkm"}) {
        CAPTURE(name);
        auto cc = ndm::cc::make(name, ndm::test::cc_params());
        // Grow out of the initial window first.
        for (int i = 1; i <= 20; ++i) cc->on_ack(ndm::test::ack_event(at(i * 10ms), 12000, at(i * 10ms - 5ms), 10ms));
        const std::uint64_t before = cc->cwnd();
        cc->on_congestion_event(ce_event(at(300ms), at(290ms), 3));
        const std::uint64_t reduced = cc->cwnd();
        CHECK(reduced < before);
        CHECK(reduced >= before / 2);  // Reno's β is 0.5, Cubic's 0.7: a loss's reduction, not a collapse
        // More marks on packets sent before the reduction: the same round.
        cc->on_congestion_event(ce_event(at(305ms), at(295ms), 5));
        CHECK(cc->cwnd() == reduced);
        // A spurious-loss undo must not restore a window that CE reduced.
        cc->on_spurious_congestion({at(306ms)});
        CHECK(cc->cwnd() <= reduced);
        // A packet sent after the reduction is acknowledged (recovery ends, as Linux's
        // ndm-lkm host needs), and a mark on a later one is the next round's.
        cc->on_ack(ndm::test::ack_event(at(390ms), 1200, at(340ms), 10ms));
        cc->on_congestion_event(ce_event(at(400ms), at(350ms), 1));
        CHECK(cc->cwnd() < reduced);
    }
}

TEST_CASE("ecn: bbr1 ignores CE events, as Linux's tcp_bbr.c does") {
    auto cc = ndm::cc::make("bbr1", ndm::test::cc_params());
    using ndm::test::at;
    for (int i = 1; i <= 20; ++i) cc->on_ack(ndm::test::ack_event(at(i * 10ms), 12000, at(i * 10ms - 5ms), 10ms));
    const auto cwnd = cc->cwnd();
    const auto state = std::string(cc->state());
    cc->on_congestion_event(ce_event(at(300ms), at(290ms), 4));
    CHECK(cc->cwnd() == cwnd);
    CHECK(std::string(cc->state()) == state);
}

// ---------------------------------------------------------------- two connections

namespace {
struct EcnRun {
    ndm::ConnectionStats client, server;
    bool ok = false;
};

// A 2 MB client → server transfer back to back over an ECN path `path`;
// the client's qlog goes to `qlog` when given.
EcnRun transfer(std::function<Ecn(Ecn)> path, bool client_ecn = true, std::ostream* qlog = nullptr) {
    ndm::test::ConnectionPair p;
    p.client_cfg.ecn = client_ecn;
    if (qlog) p.client_cfg.observer = [qlog](const ndm::trace::ConnectionInfo& i) { return ndm::qlog::make_writer(*qlog, i); };
    p.ecn_path = std::move(path);
    EcnRun out;
    if (!p.handshake()) return out;
    const auto id = p.client->open_stream();
    REQUIRE(id);
    std::vector<std::uint8_t> data(2u << 20, 0x5a), rx(1u << 16);
    std::size_t written = 0, read = 0;
    out.ok = p.run_until([&] {
        if (written < data.size()) written += p.client->write(*id, {data.data() + written, data.size() - written}, true);
        while (std::size_t n = p.server->read(*id, rx)) read += n;
        return read == data.size();
    });
    out.client = p.client->stats(p.now);
    out.server = p.server->stats(p.now);
    p.client.reset();  // flushes the qlog
    return out;
}
}  // namespace

TEST_CASE("ecn end to end: a path that carries ECT(0) validates, and the server's counts match what was sent") {
    std::ostringstream qlog;
    const auto r = transfer([](Ecn e) { return e; }, true, &qlog);
    REQUIRE(r.ok);
    CHECK(r.client.ecn_state == EcnState::capable);
    CHECK(r.server.ecn_state == EcnState::capable);
    CHECK(r.client.ecn_ect0_sent > 1000);  // every packet of the 2 MB
    // Lossless: each one arrived and was counted once, but for the few Initial and Handshake
    // packets that arrive after the receiver discarded those keys (RFC 9001 §4.9).
    CHECK(r.server.ecn_ect0_received <= r.client.ecn_ect0_sent);
    CHECK(r.server.ecn_ect0_received + 4 >= r.client.ecn_ect0_sent);
    CHECK(r.client.ecn_ect0_received <= r.server.ecn_ect0_sent);
    CHECK(r.client.ecn_ect0_received + 4 >= r.server.ecn_ect0_sent);
    CHECK(r.client.ecn_ce_reported == 0);
    CHECK(r.client.packets_lost == 0);

    // qlog: the validation's path (testing, then capable, maybe through unknown) and the ACK frames' counts.
    std::vector<std::string> states;
    std::uint64_t last_ect0 = 0;
    std::istringstream in(qlog.str());
    for (std::string rec; std::getline(in, rec, '\x1e');) {
        if (rec.empty()) continue;
        const auto j = nlohmann::json::parse(rec);
        if (j.value("name", "") == "recovery:ecn_state_updated")
            states.push_back(j["data"]["old"].get<std::string>() + ">" + j["data"]["new"].get<std::string>());
        if (j.value("name", "") == "transport:packet_received")
            for (const auto& f : j["data"]["frames"])
                if (f["frame_type"] == "ack" && f.contains("ect0")) last_ect0 = f["ect0"].get<std::uint64_t>();
    }
    REQUIRE_FALSE(states.empty());
    CHECK(states.front().starts_with("testing>"));
    CHECK(states.back().ends_with(">capable"));
    CHECK(states.size() <= 2);
    CHECK(last_ect0 > 0);
}

TEST_CASE("ecn end to end: CE marks reach the sender's controller as congestion without a loss") {
    int n = 0;
    // Every 50th datagram the client sends is marked CE on the way.
    const auto r = transfer([&n](Ecn e) { return e == Ecn::ect0 && ++n % 50 == 0 ? Ecn::ce : e; });
    REQUIRE(r.ok);
    CHECK(r.server.ecn_ce_received > 0);
    CHECK(r.client.ecn_ce_reported > 0);
    CHECK(r.client.ecn_ce_reported <= r.server.ecn_ce_received);
    CHECK(r.client.congestion_events > 0);
    CHECK(r.client.packets_lost == 0);
    CHECK(r.client.ecn_state == EcnState::capable);
}

TEST_CASE("ecn end to end: paths that clear or rewrite the codepoint fail validation and marking stops") {
    SUBCASE("bleached (not-ECT on arrival)") {
        const auto r = transfer([](Ecn) { return Ecn::not_ect; });
        REQUIRE(r.ok);
        CHECK(r.client.ecn_state == EcnState::failed);
        CHECK(r.server.ecn_ect0_received == 0);
        // Testing's 10 packets (a datagram's coalesced packets may add one or two), then none.
        CHECK(r.client.ecn_ect0_sent <= EcnValidator::kTestingPackets + 2);
    }
    SUBCASE("ECT(0) rewritten to ECT(1)") {
        const auto r = transfer([](Ecn e) { return e == Ecn::ect0 ? Ecn::ect1 : e; });
        REQUIRE(r.ok);
        CHECK(r.client.ecn_state == EcnState::failed);
        CAPTURE(r.server.ecn_ect0_received);
        CAPTURE(r.client.ecn_ect1_received);
        CAPTURE(r.client.ecn_ect0_sent);
        CHECK(r.server.ecn_ect1_received > 0);
        CHECK(r.client.ecn_ect0_sent <= EcnValidator::kTestingPackets + 2);
    }
    SUBCASE("ECN off at the sender: nothing is marked, the peer still reports nothing") {
        const auto r = transfer([](Ecn e) { return e; }, false);
        REQUIRE(r.ok);
        CHECK(r.client.ecn_state == EcnState::disabled);
        CHECK(r.client.ecn_ect0_sent == 0);
        CHECK(r.server.ecn_ect0_received == 0);
    }
}

TEST_CASE("ecn end to end: a peer's hostile ACK_ECN counts fail validation without closing, overflowing or reducing") {
    using ndm::transport::PacketSpace;
    for (const EcnCounts hostile : {EcnCounts{kMaxVarint, kMaxVarint, kMaxVarint}, EcnCounts{0, 0, kMaxVarint},
                                    EcnCounts{0, 0, 0}}) {
        CAPTURE(hostile.ect0);
        CAPTURE(hostile.ce);
        ndm::test::ConnectionPair p;
        p.ecn_path = [](Ecn e) { return e; };
        p.client_cfg.skip_packet_numbers = false;  // the forged ACK below covers every number
        REQUIRE(p.handshake());
        const auto id = p.client->open_stream();
        REQUIRE(id);
        // Some data both ways validates ECN; then the client sends more, which the path loses.
        std::vector<std::uint8_t> data(200'000, 1);
        p.client->write(*id, data);
        REQUIRE(p.run_until([&] { return p.client->stats(p.now).bytes_in_flight == 0; }));
        REQUIRE(p.client->stats(p.now).ecn_state == EcnState::capable);
        p.client->write(*id, data);
        std::vector<std::uint8_t> buf(ndm::kMaxDatagramSize);
        Ecn ecn = Ecn::not_ect;
        while (p.client->poll_datagram(buf, p.now, ecn) > 0) CHECK(ecn == Ecn::ect0);
        const auto before = p.client->stats(p.now);
        // The server "acknowledges" all of it with counts no honest receiver reports
        // (the last one decreases: the real ones were above zero).
        auto& impl = ndm::Connection::Impl::of(*p.client);
        const std::uint64_t largest = impl.loss.next_packet_number(PacketSpace::application) - 1;
        ndm::wire::AckFrame ack;
        ack.ranges.push_back({0, largest});
        ack.ecn = hostile;
        const auto pkt = ndm::test::seal(*p.server, PacketSpace::application, before.packets_received + 1000,
                                         ndm::test::encode({ack}));
        p.client->on_datagram(pkt, p.now, Ecn::ect0);
        const auto after = p.client->stats(p.now);
        CHECK(p.client->is_established());
        CHECK(after.ecn_state == EcnState::failed);
        CHECK(after.ecn_ce_reported == before.ecn_ce_reported);
        CHECK(after.congestion_events == before.congestion_events);
        CHECK(after.cwnd >= before.cwnd);
        // No more marking from here on.
        p.client->write(*id, data);
        while (p.client->poll_datagram(buf, p.now, ecn) > 0) CHECK(ecn == Ecn::not_ect);
    }
}
