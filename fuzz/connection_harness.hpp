// The connection fuzzer's driver (fuzz/connection_fuzz.cpp; tests replay its
// corpus and regressions through it). A client and a server Connection
// (tests/support/connection_pair.hpp, virtual time, fixed seeds) first complete a
// real handshake, or not (the first byte chooses, and which side is the
// target of forged packets); then each following operation of the input
// moves, drops, duplicates, reorders or corrupts the pair's own datagrams,
// injects packets sealed with the peer's real keys (tests/support/quic_test_util.hpp)
// whose payload is well-formed frames chosen by the input or raw input bytes,
// steps the clock, or writes, reads, opens, resets, stops, reprioritizes
// and closes streams (forged RESET_STREAM and STOP_SENDING frames reach the
// receiver's cancellation too, RFC 9000 §3.5, §4.5). After every
// step the invariants of both sides are checked (FUZZ_CHECK traps):
//   - bytes in flight equal the sum of the in-flight packets' sizes, and the
//     ack-eliciting count per space matches (RFC 9002 §A.2);
//   - flow control holds both ways and stream offsets only grow (RFC 9000 §4;
//     but a reset stream's written bytes end at its final size);
//   - what the application reads is exactly what the peer wrote there (both
//     sides write pattern_byte(id, offset); forged STREAM frames carry the
//     same bytes, so reassembly is checked byte for byte);
//   - no event after Closed, and a closed connection stays closed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <vector>

#include "../tests/support/connection_pair.hpp"
#include "../tests/support/invariant_audit.hpp"
#include "fuzz_check.hpp"
#include "wire/frame.hpp"

namespace ndm::fuzz {

// The bytes every writer puts at `offset` of stream `id`.
inline std::uint8_t pattern_byte(StreamId id, std::uint64_t offset) {
    return static_cast<std::uint8_t>((offset * 131u) ^ (offset >> 8) ^ (id * 29u) ^ 0x5a);
}

// Consumes the fuzzer's input; zeros once it runs out.
class InputReader {
public:
    InputReader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
    [[nodiscard]] bool empty() const { return n_ == 0; }
    std::uint8_t byte() {
        if (n_ == 0) return 0;
        --n_;
        return *p_++;
    }
    std::uint64_t bytes_be(int k) {
        std::uint64_t v = 0;
        for (int i = 0; i < k; ++i) v = v << 8 | byte();
        return v;
    }
    // A 62-bit value biased towards the interesting ones: small, 16-bit,
    // near the varint limit, or anything.
    std::uint64_t value() {
        switch (byte() & 3) {
        case 0: return byte();
        case 1: return bytes_be(2);
        case 2: return ((std::uint64_t{1} << 62) - 1) - byte();
        default: return bytes_be(8) & ((std::uint64_t{1} << 62) - 1);
        }
    }
    std::span<const std::uint8_t> take(std::size_t k) {
        k = std::min(k, n_);
        std::span<const std::uint8_t> out(p_, k);
        p_ += k;
        n_ -= k;
        return out;
    }

private:
    const std::uint8_t* p_;
    std::size_t n_;
};

// What one input did, for tests that check the driver reaches what it should.
struct HarnessSummary {
    bool established = false;             // the handshake completed (before the operations, or during them)
    std::size_t steps = 0;                // operations run
    std::uint64_t bytes_read[2] = {0, 0};  // by the client's and the server's application, checked
    std::uint64_t resets_seen[2] = {0, 0};  // event::StreamReset raised at the client and the server
    std::uint64_t stops_seen[2] = {0, 0};   // event::StreamStopped
};

class ConnectionHarness {
public:
    static constexpr std::size_t kMaxSteps = 256;
    static constexpr std::size_t kMaxQueued = 64;

    ConnectionHarness(const std::uint8_t* data, std::size_t size) : in_(data, size) {}

    HarnessSummary run() {
        const std::uint8_t mode = in_.byte();
        target_ = mode & 1;  // 0: the client is the target of forged packets, 1: the server
        pair_.client_cfg.seed = 1;
        pair_.client_cfg.initial_max_data = 1u << 16;
        pair_.client_cfg.initial_max_stream_data = 1u << 14;
        pair_.client_cfg.stream_send_buffer = 1u << 15;
        pair_.server_cfg = pair_.client_cfg;
        pair_.server_cfg.seed = 2;
        pair_.server_cfg.initial_max_streams_uni = 3;
        // Both sides run the ACK frequency extension: forged ACK_FREQUENCY and
        // IMMEDIATE_ACK frames reach the receiver's rules, not the unknown-frame close.
        pair_.client_cfg.ack_frequency = pair_.server_cfg.ack_frequency = (mode & 4) != 0;
        if (mode & 2) pair_.start();  // fuzz the handshake itself
        else if (!pair_.handshake()) return summary_;
        else summary_.established = true;
        check_all();
        for (; summary_.steps < kMaxSteps && !in_.empty(); ++summary_.steps) {
            do_step();
            check_all();
        }
        return summary_;
    }

private:
    struct Side {
        std::deque<std::vector<std::uint8_t>> out;  // datagrams sent, not yet delivered
        std::vector<StreamId> streams;               // known to the application
        std::map<StreamId, std::uint64_t> written, read;
        bool closed_seen = false;
        bool tainted = false;  // forged STREAM bytes that are not the pattern reached it
        struct Snapshot {
            std::uint64_t read = 0, highest = 0, acked = 0, sent = 0, written = 0, window = 0, credit = 0;
        };
        std::map<StreamId, Snapshot> snap;
        std::uint64_t conn_window = 0, conn_credit = 0;
    };

    Connection* conn(int side) { return side == 0 ? pair_.client.get() : pair_.server.get(); }

    void do_step() {
        const std::uint8_t op = in_.byte();
        const int side = op >> 7;
        switch (op & 0x0f) {
        case 0: poll(side, 1 + (in_.byte() & 7)); break;
        case 1: deliver(side, in_.byte(), true, false); break;
        case 2: deliver(side, in_.byte(), false, false); break;   // duplicate: deliver a copy, keep it queued
        case 3: drop(side, in_.byte()); break;
        case 4: deliver(side, in_.byte(), true, true); break;     // corrupt one byte on the way
        case 5: advance(in_.byte()); break;
        case 6: to_next_timeout(); break;
        case 7: inject_frames(); break;
        case 8: inject_raw(); break;
        case 9: inject_datagram(); break;
        case 10: write(side); break;
        case 11: open(side, (op & 0x10) != 0); break;
        case 12: read(side); break;
        case 13: close(side); break;
        case 15: cancel(side); break;
        default: pump(); break;
        }
    }

    // ---- the pair's own datagrams

    void poll(int side, int n) {
        Connection* c = conn(side);
        if (!c) return;
        for (int i = 0; i < n; ++i) {
            const std::size_t len = c->poll_datagram(pair_.buf, pair_.now);
            if (!len) break;
            auto& q = sides_[side].out;
            q.emplace_back(pair_.buf.begin(), pair_.buf.begin() + static_cast<std::ptrdiff_t>(len));
            if (q.size() > kMaxQueued) q.pop_front();
        }
        drain_events(side);
    }

    // Datagram `idx` (mod the queue) of side's, to the other side.
    void deliver(int side, std::uint8_t idx, bool remove, bool corrupt) {
        auto& q = sides_[side].out;
        if (q.empty()) return;
        const std::size_t i = idx % q.size();
        std::vector<std::uint8_t> d = q[i];
        if (remove) q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
        if (corrupt) d[in_.byte() % d.size()] ^= static_cast<std::uint8_t>(1 | in_.byte());
        receive(1 - side, d);
    }

    void receive(int side, std::span<const std::uint8_t> d) {
        if (side == 1 && !pair_.server) {
            pair_.server = Connection::Impl::accept(pair_.server_cfg, d, pair_.now, {});
        } else if (Connection* c = conn(side)) {
            c->on_datagram(d, pair_.now);
        }
        drain_events(side);
    }

    void drop(int side, std::uint8_t idx) {
        auto& q = sides_[side].out;
        if (!q.empty()) q.erase(q.begin() + static_cast<std::ptrdiff_t>(idx % q.size()));
    }

    // Everything queued is delivered and both sides send until quiet.
    void pump() {
        for (int round = 0; round < 16; ++round) {
            poll(0, 64);
            poll(1, 64);
            if (sides_[0].out.empty() && sides_[1].out.empty()) return;
            for (int side = 0; side < 2; ++side) {
                while (!sides_[side].out.empty()) deliver(side, 0, true, false);
            }
        }
    }

    // ---- time

    void fire_timeouts() {
        for (int side = 0; side < 2; ++side) {
            Connection* c = conn(side);
            if (c && c->next_timeout() <= pair_.now) c->on_timeout(pair_.now);
            drain_events(side);
        }
    }

    // 1 µs .. 67 s, on a logarithmic scale.
    void advance(std::uint8_t b) {
        pair_.now += std::chrono::microseconds(std::int64_t{(b & 0x1f) + 1} << (3 * (b >> 5)));
        fire_timeouts();
    }

    void to_next_timeout() {
        Instant t = kNever;
        for (int side = 0; side < 2; ++side)
            if (Connection* c = conn(side)) t = std::min(t, c->next_timeout());
        if (t == kNever || t > pair_.now + std::chrono::seconds(120)) return;
        pair_.now = std::max(pair_.now, t);
        fire_timeouts();
    }

    // ---- forged packets, sealed with the peer's keys

    transport::PacketSpace pick_space(std::uint8_t b) const {
        switch (b % 4) {
        case 0: return transport::PacketSpace::initial;
        case 1: return transport::PacketSpace::handshake;
        default: return transport::PacketSpace::application;
        }
    }

    // Seals `payload` as the target's peer would and delivers it to the
    // target. pn_mode (an input byte) picks the packet number: the sender's
    // next ones (colliding with its own future packets, as a replay would)
    // or anywhere in the 4-byte window; its top bit pads the packet to 1200
    // bytes with PADDING (zeros after the payload).
    void inject_sealed(transport::PacketSpace space, std::span<const std::uint8_t> payload, std::uint8_t pn_mode) {
        const int target = target_;
        Connection* from = conn(1 - target);
        if (!from || !conn(target)) return;
        auto& impl = Connection::Impl::of(*from);
        std::uint64_t pn = impl.loss.next_packet_number(space) + (pn_mode & 0x3f);
        if (pn_mode & 0x40) pn = in_.bytes_be(4);
        std::vector<std::uint8_t> d(kMaxDatagramSize);
        const std::size_t pad_to = (pn_mode & 0x80) ? kMinDatagramSize : 0;
        const std::size_t n = impl.seal_payload(d, space, pn, payload, pad_to);
        if (n == 0) return;
        d.resize(n);
        receive(target, d);
    }

    void inject_raw() {
        const auto space = pick_space(in_.byte());
        const auto payload = in_.take(in_.byte() + 1);
        const std::uint8_t pn_mode = in_.byte();
        taint_if_foreign_stream_bytes(payload, (pn_mode & 0x80) != 0);
        inject_sealed(space, payload, pn_mode);
    }

    // A raw payload may decode to STREAM frames whose bytes are not the
    // pattern; the target's reads are then not checked against it. Padding
    // counts: a truncated STREAM frame may take its data from the zeros.
    void taint_if_foreign_stream_bytes(std::span<const std::uint8_t> payload, bool padded) {
        std::vector<std::uint8_t> bytes(payload.begin(), payload.end());
        if (padded) bytes.resize(bytes.size() + kMinDatagramSize, 0);
        wire::Reader r(bytes);
        wire::Error err;
        for (wire::Frame f; !r.empty() && wire::decode_frame(r, f, err);) {
            const auto* s = std::get_if<wire::StreamFrame>(&f);
            if (!s) continue;
            for (std::size_t i = 0; i < s->data.size(); ++i)
                if (s->data[i] != pattern_byte(s->stream_id, s->offset + i)) sides_[target_].tainted = true;
        }
    }

    void inject_datagram() {
        const auto d = in_.take(in_.bytes_be(2) % 1500 + 1);
        if (!d.empty()) receive(target_, d);
    }

    void inject_frames() {
        if (!conn(0) || !conn(1)) return;  // the handshake has not reached the server yet
        const auto space = pick_space(in_.byte());
        std::vector<wire::Frame> frames;
        const int count = 1 + (in_.byte() & 3);
        for (int i = 0; i < count; ++i) frames.push_back(make_frame(space));
        std::vector<std::uint8_t> payload(4096);
        wire::Writer w(payload);
        for (const auto& f : frames)
            if (!wire::encode_frame(w, f)) break;
        payload.resize(w.position());
        if (!payload.empty()) inject_sealed(space, payload, in_.byte());
        storage_.clear();
    }

    std::span<const std::uint8_t> keep(std::vector<std::uint8_t> v) {
        storage_.push_back(std::move(v));
        return storage_.back();
    }

    // A stream ID the target knows, or any.
    StreamId pick_stream() {
        const auto& known = sides_[target_].streams;
        const std::uint8_t b = in_.byte();
        if (!known.empty() && b < 0xc0) return known[b % known.size()];
        return b < 0xf0 ? (b & 0x3f) : in_.value();
    }

    // ACK ranges near what the target really sent in `space` (sometimes
    // beyond it: never sent, a PROTOCOL_VIOLATION).
    wire::AckFrame make_ack(transport::PacketSpace space) {
        wire::AckFrame a;
        const auto& impl = Connection::Impl::of(*conn(target_));
        const std::uint64_t next = impl.loss.next_packet_number(space);
        const std::uint8_t b = in_.byte();
        std::uint64_t largest = (b & 0x80) ? next + (b & 0x0f) : (next > (b & 0x7f) ? next - 1 - (b & 0x7f) : 0);
        const int ranges = 1 + (in_.byte() & 3);
        for (int i = 0; i < ranges; ++i) {
            const std::uint64_t len = in_.byte() & 0x1f;
            const std::uint64_t smallest = largest > len ? largest - len : 0;
            a.ranges.push_back({smallest, largest});
            const std::uint64_t gap = 2 + (in_.byte() & 0x0f);
            if (smallest < gap) break;
            largest = smallest - gap;
        }
        a.ack_delay = std::chrono::microseconds(in_.bytes_be(2));
        if (in_.byte() & 1) a.ecn = wire::EcnCounts{in_.byte(), in_.byte(), in_.byte()};
        return a;
    }

    wire::StreamFrame make_stream_frame() {
        wire::StreamFrame s;
        s.stream_id = pick_stream();
        const std::uint8_t b = in_.byte();
        s.offset = (b & 0x80) ? in_.value() : in_.bytes_be(2);
        std::size_t len = in_.bytes_be(2) % 1200;
        if (s.offset > (std::uint64_t{1} << 62) - 1 - len) len = 0;
        std::vector<std::uint8_t> data(len);
        for (std::size_t i = 0; i < len; ++i) data[i] = pattern_byte(s.stream_id, s.offset + i);
        s.data = keep(std::move(data));
        s.fin = b & 1;
        return s;
    }

    wire::Frame make_frame(transport::PacketSpace space) {
        using namespace wire;
        const std::uint8_t t = in_.byte();
        switch (t % 20) {
        case 0: return PaddingFrame{static_cast<std::size_t>(1 + (in_.byte() & 0x3f))};
        case 1: return PingFrame{};
        case 2: return make_ack(space);
        case 3: {
            const std::uint64_t offset = in_.byte() & 0x80 ? in_.value() : in_.bytes_be(2);
            const auto data = in_.take(in_.byte());
            return CryptoFrame{offset, keep({data.begin(), data.end()})};
        }
        case 4: return make_stream_frame();
        case 5: return MaxDataFrame{in_.value()};
        case 6: return MaxStreamDataFrame{pick_stream(), in_.value()};
        case 7: return MaxStreamsFrame{in_.value() & ((std::uint64_t{1} << 60) - 1), (t & 0x20) != 0};
        case 8: return DataBlockedFrame{in_.value()};
        case 9: return StreamDataBlockedFrame{pick_stream(), in_.value()};
        case 10: {
            const auto reason = in_.take(in_.byte() & 0x1f);
            return ConnectionCloseFrame{in_.value(), in_.byte(),
                                        std::string_view(reinterpret_cast<const char*>(reason.data()), reason.size()),
                                        (t & 0x20) != 0};
        }
        case 11: return HandshakeDoneFrame{};
        case 12: return ResetStreamFrame{pick_stream(), in_.value(), in_.byte() & 0x80 ? in_.value() : in_.bytes_be(2)};
        case 13: return StopSendingFrame{pick_stream(), in_.value()};
        case 14: {
            auto token = in_.take(1 + (in_.byte() & 0x3f));
            if (token.empty()) return PingFrame{};
            return NewTokenFrame{keep({token.begin(), token.end()})};
        }
        case 15: return StreamsBlockedFrame{in_.value() & ((std::uint64_t{1} << 60) - 1), (t & 0x20) != 0};
        case 16: {
            NewConnectionIdFrame f;
            f.sequence = in_.byte() & 0x80 ? in_.value() : in_.byte() & 0x0f;
            f.retire_prior_to = std::min<std::uint64_t>(f.sequence, in_.byte() & 0x0f);
            std::vector<std::uint8_t> cid(1 + in_.byte() % kMaxConnectionIdLength);
            for (auto& c : cid) c = in_.byte();
            f.cid = keep(std::move(cid));
            std::vector<std::uint8_t> token(kStatelessResetTokenSize);
            for (auto& c : token) c = in_.byte();
            f.reset_token = keep(std::move(token));
            return f;
        }
        case 17: return RetireConnectionIdFrame{in_.byte() & 0x80 ? in_.value() : in_.byte() & 0x0f};
        case 18: {
            PathChallengeFrame f;
            for (auto& c : f.data) c = in_.byte();
            return f;
        }
        default: {
            PathResponseFrame f;
            for (auto& c : f.data) c = in_.byte();
            return f;
        }
        }
    }

    // ---- the application

    void open(int side, bool uni) {
        Connection* c = conn(side);
        if (!c) return;
        const auto id = uni ? c->open_uni_stream() : c->open_stream();
        if (id) sides_[side].streams.push_back(*id);
    }

    StreamId app_stream(int side) {
        const auto& known = sides_[side].streams;
        const std::uint8_t b = in_.byte();
        return known.empty() ? (b & 0x0f) : known[b % known.size()];
    }

    void write(int side) {
        Connection* c = conn(side);
        if (!c) return;
        const StreamId id = app_stream(side);
        const std::size_t len = in_.bytes_be(2) % 40000;
        const bool fin = in_.byte() & 1;
        std::uint64_t& off = sides_[side].written[id];
        std::vector<std::uint8_t> data(len);
        for (std::size_t i = 0; i < len; ++i) data[i] = pattern_byte(id, off + i);
        try {
            const std::size_t n = c->write(id, data, fin);
            FUZZ_CHECK(n <= len);
            off += n;
        } catch (const std::logic_error&) {
            // Not writable (unknown, finished, the peer's unidirectional stream): documented.
        }
        drain_events(side);
    }

    void read(int side) {
        Connection* c = conn(side);
        if (!c) return;
        const StreamId id = app_stream(side);
        std::vector<std::uint8_t> buf(1 + in_.bytes_be(2) % 50000);
        const std::size_t n = c->read(id, buf);
        FUZZ_CHECK(n <= buf.size());
        std::uint64_t& off = sides_[side].read[id];
        if (!sides_[side].tainted)
            for (std::size_t i = 0; i < n; ++i) FUZZ_CHECK(buf[i] == pattern_byte(id, off + i));
        if (!sides_[side].tainted) summary_.bytes_read[side] += n;
        off += n;
        drain_events(side);
    }

    // reset_stream, stop_sending or set_stream_priority on a stream the
    // application knows (or not); an urgency of 8 is out of range.
    void cancel(int side) {
        Connection* c = conn(side);
        if (!c) return;
        const std::uint8_t what = in_.byte();
        const StreamId id = app_stream(side);
        try {
            switch (what % 3) {
            case 0: c->reset_stream(id, in_.value()); break;
            case 1: c->stop_sending(id, in_.value()); break;
            default: c->set_stream_priority(id, {static_cast<std::uint8_t>(in_.byte() % 9), (what & 0x80) != 0}); break;
            }
        } catch (const std::invalid_argument&) {
            // Not open, or an urgency above 7: documented.
        } catch (const std::logic_error&) {
            // The wrong half of a unidirectional stream: documented.
        }
        drain_events(side);
    }

    void close(int side) {
        Connection* c = conn(side);
        if (!c) return;
        c->close(in_.value(), "fuzz", pair_.now, (in_.byte() & 1) != 0);
        drain_events(side);
    }

    // ---- invariants

    void drain_events(int side) {
        Connection* c = conn(side);
        if (!c) return;
        Side& s = sides_[side];
        while (auto ev = c->poll_event()) {
            FUZZ_CHECK(!s.closed_seen);  // nothing after Closed
            if (std::holds_alternative<event::Closed>(*ev)) s.closed_seen = true;
            if (std::holds_alternative<event::Established>(*ev)) summary_.established = true;
            if (const auto* o = std::get_if<event::StreamOpened>(&*ev)) s.streams.push_back(o->id);
            if (std::holds_alternative<event::StreamReset>(*ev)) ++summary_.resets_seen[side];
            if (std::holds_alternative<event::StreamStopped>(*ev)) ++summary_.stops_seen[side];
        }
    }

    void check_all() {
        for (int side = 0; side < 2; ++side) {
            drain_events(side);
            check(side);
        }
    }

    void check(int side) {
        Connection* c = conn(side);
        if (!c) return;
        Side& s = sides_[side];
        auto& impl = Connection::Impl::of(*c);
        if (s.closed_seen) FUZZ_CHECK(c->state() == ConnectionState::closed || c->state() == ConnectionState::draining ||
                                      c->state() == ConnectionState::closing);
        const auto flight = test::InvariantAudit::flight(impl.loss);
        FUZZ_CHECK(flight.bytes == impl.loss.bytes_in_flight());
        for (std::size_t sp = 0; sp < transport::kPacketSpaces; ++sp)
            FUZZ_CHECK(flight.eliciting[sp] == impl.loss.ack_eliciting_in_flight(static_cast<transport::PacketSpace>(sp)));
        FUZZ_CHECK(test::InvariantAudit::flow_control_holds(impl.streams, [&](StreamId id, const transport::StreamState& st) {
            auto& old = s.snap[id];
            const Side::Snapshot now{st.recv.read_offset(), st.recv.highest_received(), st.send.acked_end(),
                                     st.send.sent_end(), st.send.written(), st.window.limit(), st.credit.limit()};
            FUZZ_CHECK(now.read >= old.read && now.highest >= old.highest && now.acked >= old.acked &&
                       now.sent >= old.sent && (now.written >= old.written || st.send.is_reset()) &&
                       now.window >= old.window && now.credit >= old.credit);
            // A reset half holds no bytes (RFC 9000 §3.1, §3.5: memory follows bytes).
            if (st.send.is_reset()) FUZZ_CHECK(st.send.written() == st.send.sent_end());
            if (st.recv.discarding()) FUZZ_CHECK(st.recv.memory() == 0 && st.recv.held() == 0);
            old = now;
        }));
        const std::uint64_t window = test::InvariantAudit::conn_window_limit(impl.streams);
        const std::uint64_t credit = test::InvariantAudit::conn_credit_limit(impl.streams);
        FUZZ_CHECK(window >= s.conn_window && credit >= s.conn_credit);
        s.conn_window = window;
        s.conn_credit = credit;
    }

    InputReader in_;
    test::ConnectionPair pair_;
    int target_ = 0;
    Side sides_[2];
    std::deque<std::vector<std::uint8_t>> storage_;  // the bytes forged frames point into
    HarnessSummary summary_;
};

// One input: never crashes, every invariant holds after every step.
inline HarnessSummary run_connection_input(const std::uint8_t* data, std::size_t size) {
    ConnectionHarness h(data, size);
    return h.run();
}

}  // namespace ndm::fuzz
