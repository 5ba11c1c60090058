// Recorded controller-event streams ("ACK traces") for tests and benchmarks:
// a recording Controller decorator, the compact file format of
// tests/data/ack-traces/README.md, its loader, and a replayer. A test/bench
// utility, not library API: header-only so that bench/ can include it too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cc/forwarding.hpp"
#include "ndm/cc.hpp"
#include "ndm/time.hpp"

namespace ndm::testing {

struct IdleRestart {
    Instant now;
};

using TraceEvent = std::variant<cc::PacketSent, cc::AckEvent, cc::CongestionEvent, cc::SpuriousEvent, IdleRestart>;

struct AckTrace {
    std::string name;
    std::string description;  // one line: how it was recorded
    std::uint64_t max_datagram_size = 0;
    std::vector<TraceEvent> events;
};

// Feeds one event to a controller.
inline void apply(cc::Controller& c, const TraceEvent& ev) {
    struct Visitor {
        cc::Controller& c;
        void operator()(const cc::PacketSent& e) const { c.on_packet_sent(e); }
        void operator()(const cc::AckEvent& e) const { c.on_ack(e); }
        void operator()(const cc::CongestionEvent& e) const { c.on_congestion_event(e); }
        void operator()(const cc::SpuriousEvent& e) const { c.on_spurious_congestion(e); }
        void operator()(const IdleRestart& e) const { c.on_idle_restart(e.now); }
    };
    std::visit(Visitor{c}, ev);
}

// FNV-1a over 64-bit words: the digest of a window trajectory.
class Digest {
public:
    void add(std::uint64_t v) noexcept {
        for (int i = 0; i < 8; ++i) {
            h_ ^= (v >> (8 * i)) & 0xff;
            h_ *= 0x100000001b3ULL;
        }
    }
    [[nodiscard]] std::uint64_t value() const noexcept { return h_; }

private:
    std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// What a replay produced: the digest of (cwnd, ssthresh) after every event,
// and the window's range over the ACKs.
struct ReplayResult {
    std::uint64_t digest = 0;
    std::uint64_t min_cwnd = UINT64_MAX;
    std::uint64_t max_cwnd = 0;
    std::uint64_t acks = 0;
};

inline void digest_state(const cc::Controller& c, Digest& d) {
    d.add(c.cwnd());
    d.add(c.ssthresh());
}

// Replays a trace into c; `after` (if given) sees c after every event.
template <typename After>
ReplayResult replay(cc::Controller& c, const AckTrace& t, After&& after) {
    ReplayResult r;
    Digest d;
    for (std::size_t i = 0; i < t.events.size(); ++i) {
        apply(c, t.events[i]);
        digest_state(c, d);
        if (std::holds_alternative<cc::AckEvent>(t.events[i])) {
            ++r.acks;
            r.min_cwnd = std::min(r.min_cwnd, c.cwnd());
            r.max_cwnd = std::max(r.max_cwnd, c.cwnd());
        }
        after(i);
    }
    r.digest = d.value();
    return r;
}

inline ReplayResult replay(cc::Controller& c, const AckTrace& t) {
    return replay(c, t, [](std::size_t) {});
}

// ------------------------------------------------------------ the recorder

struct Recording;

// A Controller decorator: forwards every call to the controller it wraps and
// appends the event to a trace. Register it with register_recorder() and
// name it as a connection's controller.
class RecordingController final : public cc::Forwarding {
public:
    RecordingController(std::unique_ptr<cc::Controller> inner, Recording& rec, std::uint32_t generation)
        : Forwarding(std::move(inner)), rec_(rec), generation_(generation) {}

    void on_packet_sent(const cc::PacketSent& p) override { Forwarding::on_packet_sent(p); record(p); }
    void on_ack(const cc::AckEvent& ev) override { Forwarding::on_ack(ev); record(ev); }
    void on_congestion_event(const cc::CongestionEvent& ev) override { Forwarding::on_congestion_event(ev); record(ev); }
    void on_spurious_congestion(const cc::SpuriousEvent& ev) override { Forwarding::on_spurious_congestion(ev); record(ev); }
    void on_idle_restart(Instant now) override { Forwarding::on_idle_restart(now); record(IdleRestart{now}); }

private:
    // After the wrapped controller has seen the event.
    template <typename Ev>
    void record(const Ev& ev);

    Recording& rec_;
    std::uint32_t generation_;  // records only while it is the latest controller created
};

// One recording. A connection creates its controller again when the
// handshake settles the datagram size (the first one works at the 1200-byte
// minimum), so the controller created last records, from its creation on:
// use the registered name for one connection only (the client's).
struct Recording {
    std::string inner;  // the wrapped controller's name
    std::string inner_options;
    std::vector<TraceEvent> events;
    Digest digest;  // of the wrapped controller's (cwnd, ssthresh) after each event
    std::uint64_t max_datagram_size = 0;  // of the recording controller
    std::uint32_t generation = 0;         // controllers created so far
};

template <typename Ev>
void RecordingController::record(const Ev& ev) {
    if (generation_ != rec_.generation) return;
    rec_.events.emplace_back(ev);
    digest_state(inner(), rec_.digest);
}

// Registers `name` as a controller that wraps rec.inner and records into rec
// (which must outlive every connection using the name).
inline void register_recorder(const std::string& name, Recording& rec) {
    cc::register_controller({name, "records controller events (tests)", [&rec](const cc::Params& p, const cc::Options&) {
                                 auto inner = cc::make(rec.inner, p, rec.inner_options);
                                 rec.events.clear();
                                 rec.digest = Digest{};
                                 rec.max_datagram_size = p.max_datagram_size;
                                 return std::make_unique<RecordingController>(std::move(inner), rec,
                                                                              ++rec.generation);
                             }});
}

// register_recorder() for a scope: when the scope ends (a failed REQUIRE
// included) the name makes a plain reno again, so no registration keeps
// pointing at a Recording that is gone. Declare it after the Recording.
class ScopedRecorder {
public:
    ScopedRecorder(std::string name, Recording& rec) : name_(std::move(name)) { register_recorder(name_, rec); }
    ~ScopedRecorder() {
        cc::register_controller({name_, "unused", [](const cc::Params& p, const cc::Options&) {
                                     return cc::make("reno", p);
                                 }});
    }
    ScopedRecorder(const ScopedRecorder&) = delete;
    ScopedRecorder& operator=(const ScopedRecorder&) = delete;

private:
    std::string name_;
};

// ------------------------------------------------------------ the file format

namespace trace_detail {

enum Kind : std::uint8_t { kSent = 0, kAck = 1, kCongestion = 2, kSpurious = 3, kIdle = 4 };

inline void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
inline std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
inline std::int64_t ns(Instant t) { return t.time_since_epoch().count(); }
inline std::int64_t ns(Duration d) { return d.count(); }

inline std::uint64_t fnv(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

// Running context shared by the encoder and the decoder: values are coded
// as differences from it, and common cases as flag bits.
struct Context {
    std::int64_t time = 0;
    std::uint64_t pn = 0;
    std::uint64_t in_flight = 0;
    std::int64_t rtt[4] = {0, 0, 0, 0};  // latest, smoothed, rttvar, min
};

class Reader {
public:
    Reader(std::string_view data, const std::string& where) : d_(data), where_(where) {}
    [[nodiscard]] bool done() const { return pos_ == d_.size(); }
    std::uint8_t byte() {
        if (pos_ >= d_.size()) fail("truncated data");
        return static_cast<std::uint8_t>(d_[pos_++]);
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            const std::uint8_t b = byte();
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) return v;
        }
        fail("varint longer than 10 bytes");
    }
    std::int64_t svarint() { return unzigzag(varint()); }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(where_ + ": " + what + " at data byte " + std::to_string(pos_));
    }

private:
    std::string_view d_;
    std::size_t pos_ = 0;
    const std::string& where_;
};

}  // namespace trace_detail

inline constexpr std::string_view kAckTraceMagic = "ndm-ack-trace";
inline constexpr int kAckTraceVersion = 1;

// Encodes the events (the data section of the format).
inline std::string encode_events(const std::vector<TraceEvent>& events, std::uint64_t mds) {
    using namespace trace_detail;
    std::string out;
    Context c;
    auto time = [&](std::int64_t t) {
        put_varint(out, zigzag(t - c.time));
        c.time = t;
    };
    for (const auto& ev : events) {
        if (const auto* p = std::get_if<cc::PacketSent>(&ev)) {
            const bool next_pn = p->packet_number == c.pn + 1;
            const bool full = p->bytes == mds;
            const bool adds = p->bytes_in_flight == c.in_flight + p->bytes;
            out.push_back(static_cast<char>(kSent | (p->app_limited ? 0x08 : 0) | (next_pn ? 0x10 : 0) |
                                            (full ? 0x20 : 0) | (adds ? 0x40 : 0)));
            time(ns(p->time));
            if (!next_pn) put_varint(out, zigzag(static_cast<std::int64_t>(p->packet_number - c.pn)));
            if (!full) put_varint(out, p->bytes);
            if (!adds) put_varint(out, p->bytes_in_flight);
            c.pn = p->packet_number;
            c.in_flight = p->bytes_in_flight;
        } else if (const auto* a = std::get_if<cc::AckEvent>(&ev)) {
            const bool full = a->bytes_acked == a->packets_acked * mds;
            const bool prior = a->prior_bytes_in_flight == c.in_flight;
            const bool removes = a->bytes_in_flight + a->bytes_acked == a->prior_bytes_in_flight;
            out.push_back(static_cast<char>(kAck | (a->app_limited ? 0x08 : 0) | (a->has_rtt_sample ? 0x10 : 0) |
                                            (full ? 0x20 : 0) | (prior ? 0x40 : 0) | (removes ? 0x80 : 0)));
            time(ns(a->now));
            put_varint(out, a->packets_acked);
            if (!full) put_varint(out, a->bytes_acked);
            if (!prior) put_varint(out, a->prior_bytes_in_flight);
            if (!removes) put_varint(out, a->bytes_in_flight);
            const std::int64_t r[4] = {ns(a->latest_rtt), ns(a->smoothed_rtt), ns(a->rttvar), ns(a->min_rtt)};
            for (int i = 0; i < 4; ++i) {
                put_varint(out, zigzag(r[i] - c.rtt[i]));
                c.rtt[i] = r[i];
            }
            put_varint(out, zigzag(ns(a->now) - ns(a->largest_acked_sent_time)));
            c.in_flight = a->bytes_in_flight;
        } else if (const auto* l = std::get_if<cc::CongestionEvent>(&ev)) {
            const bool full = l->bytes_lost == l->packets_lost * mds;
            const bool removes = l->bytes_in_flight + l->bytes_lost == c.in_flight;
            out.push_back(static_cast<char>(kCongestion | (l->persistent ? 0x08 : 0) | (full ? 0x20 : 0) |
                                            (removes ? 0x40 : 0)));
            time(ns(l->now));
            put_varint(out, l->packets_lost);
            if (!full) put_varint(out, l->bytes_lost);
            if (!removes) put_varint(out, l->bytes_in_flight);
            put_varint(out, zigzag(ns(l->now) - ns(l->largest_lost_sent_time)));
            c.in_flight = l->bytes_in_flight;
        } else if (const auto* s = std::get_if<cc::SpuriousEvent>(&ev)) {
            out.push_back(static_cast<char>(kSpurious));
            time(ns(s->now));
        } else {
            out.push_back(static_cast<char>(kIdle));
            time(ns(std::get<IdleRestart>(ev).now));
        }
    }
    return out;
}

inline std::vector<TraceEvent> decode_events(std::string_view data, std::uint64_t mds, const std::string& where) {
    using namespace trace_detail;
    Reader r(data, where);
    Context c;
    std::vector<TraceEvent> out;
    // Sums wrap (unsigned) rather than overflow on a crafted file.
    auto add = [](std::int64_t a, std::int64_t b) {
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
    };
    auto time = [&] {
        c.time = add(c.time, r.svarint());
        return Instant{} + Duration(c.time);
    };
    while (!r.done()) {
        const std::uint8_t tag = r.byte();
        switch (tag & 0x07) {
            case kSent: {
                cc::PacketSent p;
                p.app_limited = (tag & 0x08) != 0;
                p.time = time();
                p.packet_number = (tag & 0x10) != 0 ? c.pn + 1 : c.pn + static_cast<std::uint64_t>(r.svarint());
                p.bytes = (tag & 0x20) != 0 ? mds : r.varint();
                p.bytes_in_flight = (tag & 0x40) != 0 ? c.in_flight + p.bytes : r.varint();
                c.pn = p.packet_number;
                c.in_flight = p.bytes_in_flight;
                out.emplace_back(p);
                break;
            }
            case kAck: {
                cc::AckEvent a;
                a.app_limited = (tag & 0x08) != 0;
                a.has_rtt_sample = (tag & 0x10) != 0;
                a.now = time();
                a.packets_acked = r.varint();
                a.bytes_acked = (tag & 0x20) != 0 ? a.packets_acked * mds : r.varint();
                a.prior_bytes_in_flight = (tag & 0x40) != 0 ? c.in_flight : r.varint();
                a.bytes_in_flight = (tag & 0x80) != 0 ? a.prior_bytes_in_flight - a.bytes_acked : r.varint();
                Duration* rtt[4] = {&a.latest_rtt, &a.smoothed_rtt, &a.rttvar, &a.min_rtt};
                for (int i = 0; i < 4; ++i) {
                    c.rtt[i] = add(c.rtt[i], r.svarint());
                    *rtt[i] = Duration(c.rtt[i]);
                }
                a.largest_acked_sent_time = Instant{} + Duration(add(c.time, -r.svarint()));
                c.in_flight = a.bytes_in_flight;
                out.emplace_back(a);
                break;
            }
            case kCongestion: {
                cc::CongestionEvent l;
                l.persistent = (tag & 0x08) != 0;
                l.now = time();
                l.packets_lost = r.varint();
                l.bytes_lost = (tag & 0x20) != 0 ? l.packets_lost * mds : r.varint();
                l.bytes_in_flight = (tag & 0x40) != 0 ? c.in_flight - l.bytes_lost : r.varint();
                l.largest_lost_sent_time = Instant{} + Duration(add(c.time, -r.svarint()));
                c.in_flight = l.bytes_in_flight;
                out.emplace_back(l);
                break;
            }
            case kSpurious:
                out.emplace_back(cc::SpuriousEvent{time()});
                break;
            case kIdle:
                out.emplace_back(IdleRestart{time()});
                break;
            default:
                r.fail("unknown event kind " + std::to_string(tag & 0x07));
        }
    }
    return out;
}

// The whole file: text header lines, then the binary data section.
inline std::string serialize_trace(const AckTrace& t) {
    const std::string data = encode_events(t.events, t.max_datagram_size);
    std::ostringstream h;
    h << kAckTraceMagic << ' ' << kAckTraceVersion << '\n'
      << "name " << t.name << '\n'
      << "description " << t.description << '\n'
      << "mds " << t.max_datagram_size << '\n'
      << "events " << t.events.size() << '\n'
      << "fnv1a " << trace_detail::fnv(data) << '\n'
      << "data " << data.size() << '\n';
    return h.str() + data;
}

inline AckTrace parse_trace(std::string_view file, const std::string& where) {
    AckTrace t;
    std::size_t pos = 0;
    auto line = [&](std::string_view key) -> std::string {
        const auto end = file.find('\n', pos);
        if (end == std::string_view::npos) throw std::runtime_error(where + ": truncated header");
        const std::string_view l = file.substr(pos, end - pos);
        pos = end + 1;
        if (l.substr(0, key.size()) != key || l.size() <= key.size() || l[key.size()] != ' ') {
            throw std::runtime_error(where + ": expected a \"" + std::string(key) + "\" header line, got \"" +
                                     std::string(l.substr(0, 40)) + "\"");
        }
        return std::string(l.substr(key.size() + 1));
    };
    auto number = [&](std::string_view key) -> std::uint64_t {
        const std::string v = line(key);
        try {
            std::size_t used = 0;
            const auto n = std::stoull(v, &used);
            if (used == v.size()) return n;
        } catch (const std::exception&) {
        }
        throw std::runtime_error(where + ": bad " + std::string(key) + " value \"" + v + "\"");
    };
    if (const auto version = number(kAckTraceMagic); version != kAckTraceVersion) {
        throw std::runtime_error(where + ": unsupported version " + std::to_string(version) + " (expected " +
                                 std::to_string(kAckTraceVersion) + ")");
    }
    t.name = line("name");
    t.description = line("description");
    t.max_datagram_size = number("mds");
    if (t.max_datagram_size == 0) throw std::runtime_error(where + ": mds must be > 0");
    const auto count = number("events");
    const auto checksum = number("fnv1a");
    const auto size = number("data");
    if (file.size() - pos != size) {
        throw std::runtime_error(where + ": data section has " + std::to_string(file.size() - pos) +
                                 " bytes, header says " + std::to_string(size));
    }
    const std::string_view data = file.substr(pos);
    if (trace_detail::fnv(data) != checksum) throw std::runtime_error(where + ": checksum mismatch (corrupt file)");
    t.events = decode_events(data, t.max_datagram_size, where);
    if (t.events.size() != count) {
        throw std::runtime_error(where + ": " + std::to_string(t.events.size()) + " events, header says " +
                                 std::to_string(count));
    }
    return t;
}

inline AckTrace load_trace(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_trace(file, path);
}

inline void save_trace(const AckTrace& t, const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string s = serialize_trace(t);
    out.write(s.data(), static_cast<std::streamsize>(s.size()));
    if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace ndm::testing
