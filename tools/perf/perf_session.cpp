#include "tools/perf/perf_session.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndm/cc.hpp"
#include "ndm/workload.hpp"
#include "tools/cli/interrupt.hpp"
#include "tools/cli/printable.hpp"
#include "tools/cli/units.hpp"

namespace ndm::tools {

namespace {
using nlohmann::json;

// Tags the blobs so a stray client (or a future format) is rejected clearly.
constexpr const char* kParamsMagic = "ndm-perf/1";

std::vector<std::uint8_t> to_bytes(const json& j) {
    std::string s = j.dump();
    return {s.begin(), s.end()};
}
json from_bytes(std::span<const std::uint8_t> blob, const char* what) {
    auto j = json::parse(blob.begin(), blob.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::invalid_argument(std::string("malformed ") + what);
    return j;
}

// Fields from the peer. Integers must be JSON integers (a float such as 1e300
// would not convert to an integer type defined), read as 64 bits before any
// narrowing, within [0, max]; absent ones take `absent` when given.
std::uint64_t uint_field(const json& j, const char* key, std::optional<std::uint64_t> absent = std::nullopt,
                         std::uint64_t max = UINT64_MAX) {
    if (!j.contains(key)) {
        if (absent) return *absent;
        throw std::invalid_argument(fmt::format("field {} is missing", key));
    }
    const json& v = j[key];
    if (!v.is_number_unsigned())
        throw std::invalid_argument(fmt::format("field {} is not a non-negative integer", key));
    const auto x = v.get<std::uint64_t>();
    if (x > max) throw std::invalid_argument(fmt::format("field {} value {} exceeds {}", key, x, max));
    return x;
}

double number_field(const json& j, const char* key) {
    if (!j.contains(key) || !j[key].is_number()) throw std::invalid_argument(fmt::format("field {} is missing or not a number", key));
    return j[key].get<double>();
}

double report_seconds(const json& j) {
    const double s = number_field(j, "seconds");
    if (!(s >= 0 && s <= kMaxReportSeconds))
        throw std::invalid_argument(fmt::format("field seconds {:g} outside 0..{:g}", s, kMaxReportSeconds));
    return s;
}
// "check": how the receiver checks the client's stream, "payload" (true)
// or "hash" (false, also when absent).
bool check_field(const json& j) {
    if (!j.contains("check")) return false;
    const json& v = j["check"];
    if (v == "payload") return true;
    if (v == "hash") return false;
    throw std::invalid_argument("field check is not \"payload\" or \"hash\"");
}

RemoteCpu cpu_fields(const json& j) {
    RemoteCpu c;
    for (auto [key, into] : {std::pair{"cpu_user", &c.user}, std::pair{"cpu_system", &c.system}}) {
        if (!j.contains(key)) continue;
        *into = number_field(j, key);
        if (!(*into >= 0 && *into <= kMaxCpuPercent))
            throw std::invalid_argument(fmt::format("field {} {:g} outside 0..{:g}", key, *into, kMaxCpuPercent));
    }
    return c;
}

// A controller name from the peer is only ever one this process has registered.
bool registered(std::string_view name) {
    const auto known = cc::list();
    return std::any_of(known.begin(), known.end(), [&](const cc::Info& i) { return i.name == name; });
}

// ndm's model=PATH names a file on the host that runs the controller. A
// server must never open a file a client names (a device, another user's
// file, or a probe of which paths exist): in -R, where the server runs the
// client's controller, only the built-in model may be asked for; in a
// forward test the file is the client's and the server neither runs nor
// opens it.
bool names_model_file(const TestParams& p) {
    if (p.cc_options.empty() || p.cc_options.size() > kMaxCcOptions) return false;  // validate() refuses the latter
    const cc::Options opts = cc::parse_options(p.cc_options);
    const auto it = opts.find("model");
    return it != opts.end() && it->second != "default";
}

}  // namespace

void validate(const TestParams& p) {
    auto out_of = [](const char* name, double v, double lo, double hi, const char* unit) {
        if (!(v >= lo && v <= hi))  // also NaN
            throw std::invalid_argument(fmt::format("test parameter {} {:g}{} outside {:g}..{:g}{}", name, v, unit, lo, hi, unit));
    };
    out_of("interval", p.interval, kMinInterval, kMaxInterval, " s");
    if (p.bytes == 0) {
        out_of("seconds", p.seconds, kMinSeconds, kMaxSeconds, " s");
    } else {
        out_of("seconds", p.seconds, 0, kMaxSeconds, " s");  // ignored with a byte budget
        if (p.bytes > kMaxTestBytes)
            throw std::invalid_argument(fmt::format("test parameter bytes {} exceeds {} (1 PiB)", p.bytes, kMaxTestBytes));
    }
    if (p.packet_size < kMinDatagramSize || p.packet_size > kMaxDatagramSize)
        throw std::invalid_argument(fmt::format("test parameter packet_size {} outside {}..{} bytes", p.packet_size,
                                                kMinDatagramSize, kMaxDatagramSize));
    if (p.streams < 1 || p.streams > kMaxParallel)
        throw std::invalid_argument(fmt::format("test parameter streams {} outside 1..{}", p.streams, kMaxParallel));
    if (p.index >= p.streams)
        throw std::invalid_argument(fmt::format("test parameter index {} not below streams {}", p.index, p.streams));
    if (!registered(p.cc))
        throw std::invalid_argument(fmt::format("test parameter cc \"{}\" is not a known controller", p.cc));
    if (p.cc_options.size() > kMaxCcOptions)
        throw std::invalid_argument(fmt::format("test parameter cc_options longer than {} bytes", kMaxCcOptions));
    if ((p.reverse || p.bidir) && names_model_file(p))
        throw std::invalid_argument(
            "test parameter cc_options: model= names a file, which in -R or --bidir the server would open; a server opens no file "
            "a client names (use model=default)");
    if (p.bitrate > kMaxBitrate)
        throw std::invalid_argument(fmt::format("test parameter bitrate {} exceeds {} bit/s", p.bitrate, kMaxBitrate));
    if (p.burst > kMaxBurst)
        throw std::invalid_argument(fmt::format("test parameter burst {} exceeds {} blocks", p.burst, kMaxBurst));
    out_of("omit", p.omit, 0, kMaxOmit, " s");
    if (p.bidir && p.reverse) throw std::invalid_argument("test parameters reverse and bidir exclude each other");
    if (p.window != 0 && (p.window < kMinWindow || p.window > kMaxWindow))
        throw std::invalid_argument(
            fmt::format("test parameter window {} outside {}..{} bytes", p.window, kMinWindow, kMaxWindow));

    if (p.omit > 0 && p.bytes != 0) throw std::invalid_argument("test parameter omit applies to timed tests only, not with bytes");
    if (p.datagram && (p.reverse || p.bidir || p.bytes != 0 || p.bitrate == 0))
        throw std::invalid_argument("test parameter datagram: a timed test at a bitrate, the client's direction only");
    if (!p.cc_options.empty()) {  // the controller itself names a bad key or value
        cc::Params cp;
        cp.max_datagram_size = p.packet_size;
        (void)cc::make(p.cc, cp, p.cc_options);
    }
}

std::vector<std::uint8_t> encode(const TestParams& p) {
    return to_bytes({{"magic", kParamsMagic}, {"cc", p.cc}, {"cc_options", p.cc_options}, {"packet_size", p.packet_size}, {"seconds", p.seconds},
                     {"bytes", p.bytes}, {"interval", p.interval}, {"seed", p.seed},
                     {"streams", p.streams}, {"index", p.index}, {"test_id", p.test_id}, {"reverse", p.reverse}, {"bidir", p.bidir}, {"window", p.window},
                     {"server_output", static_cast<unsigned>(p.server_output)},
                     {"bitrate", p.bitrate}, {"burst", p.burst}, {"omit", p.omit},
                     {"check", p.check_payload ? "payload" : "hash"}, {"datagram", p.datagram},
                     {"workload", workload::kFormatVersion}});
}

TestParams decode_test_params(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "test parameters");
    if (!j.contains("magic") || j["magic"] != kParamsMagic) throw std::invalid_argument("not an ndm-send test request");
    TestParams p;
    const json& cc = j.contains("cc") ? j["cc"] : json();
    if (!cc.is_string()) throw std::invalid_argument("test parameter cc is missing or not a string");
    p.cc = cc.get<std::string>();
    if (j.contains("cc_options")) {  // absent from older clients
        if (!j["cc_options"].is_string()) throw std::invalid_argument("test parameter cc_options is not a string");
        p.cc_options = j["cc_options"].get<std::string>();
    }
    p.packet_size = static_cast<std::size_t>(uint_field(j, "packet_size", std::nullopt, kMaxDatagramSize));
    p.seconds = number_field(j, "seconds");
    p.bytes = uint_field(j, "bytes", std::nullopt, kMaxTestBytes);
    p.interval = number_field(j, "interval");
    p.seed = uint_field(j, "seed", std::nullopt, UINT64_MAX);
    p.streams = static_cast<unsigned>(uint_field(j, "streams", 1, kMaxParallel));
    p.index = static_cast<unsigned>(uint_field(j, "index", 0, kMaxParallel));
    p.test_id = uint_field(j, "test_id", 0, UINT64_MAX);
    if (j.contains("reverse")) {
        if (!j["reverse"].is_boolean()) throw std::invalid_argument("test parameter reverse is not a boolean");
        p.reverse = j["reverse"].get<bool>();
    }
    p.window = uint_field(j, "window", 0, kMaxWindow);  // absent from older clients; validate() checks the range
    p.server_output = static_cast<TestParams::ServerOutput>(uint_field(j, "server_output", 0, 2));
    if (j.contains("bidir")) {  // absent from older clients
        if (!j["bidir"].is_boolean()) throw std::invalid_argument("test parameter bidir is not a boolean");
        p.bidir = j["bidir"].get<bool>();
    }
    // -b and -O: absent from older clients; validate() bounds omit.
    p.bitrate = uint_field(j, "bitrate", 0, kMaxBitrate);
    p.burst = static_cast<unsigned>(uint_field(j, "burst", 0, kMaxBurst));
    if (j.contains("omit")) p.omit = number_field(j, "omit");
    p.check_payload = check_field(j) && !p.reverse;  // the client's direction only
    if (j.contains("datagram")) {  // absent from older clients
        if (!j["datagram"].is_boolean()) throw std::invalid_argument("test parameter datagram is not a boolean");
        p.datagram = j["datagram"].get<bool>();
    }
    if (!p.reverse && !p.bidir && names_model_file(p)) {
        TestParams checked = p;  // the client's own model file: the server does not open it
        checked.cc_options.clear();
        validate(checked);
    } else {
        validate(p);
    }
    // Both ends generate or hash the payload: different formats would report
    // correct data as corrupt. Clients before the field had format 1.
    if (const auto v = uint_field(j, "workload", 1); v != workload::kFormatVersion)
        throw std::invalid_argument(fmt::format(
            "the client's test payload format is version {}, this server's is {}: run the same ndm release on both sides",
            v, workload::kFormatVersion));
    return p;
}

std::vector<std::uint8_t> encode(const ReceiverReport& r) {
    json j = {{"bytes", r.bytes}, {"seconds", r.seconds}, {"hash", r.hash}, {"omitted_bytes", r.omitted_bytes},
              {"cpu_user", r.cpu.user}, {"cpu_system", r.cpu.system}, {"cc", r.cc},
              {"check", r.checked_payload ? "payload" : "hash"}};
    if (r.checked_payload && r.mismatch_at != ReceiverReport::kNoMismatch) j["mismatch_at"] = r.mismatch_at;
    if (const auto& d = r.datagrams)
        j["datagrams"] = {{"received", d->received},         {"expected", d->expected},
                          {"out_of_order", d->out_of_order}, {"duplicates", d->duplicates},
                          {"malformed", d->malformed},       {"jitter_ms", d->jitter_ms}};
    return to_bytes(j);
}

namespace {
// -u's counts from the peer: received within expected, jitter a finite time.
ReceiverReport::Datagrams datagram_fields(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("field datagrams is not an object");
    ReceiverReport::Datagrams d;
    d.expected = uint_field(j, "expected");
    d.received = uint_field(j, "received", std::nullopt, d.expected);
    d.out_of_order = uint_field(j, "out_of_order", std::nullopt, d.received);
    d.duplicates = uint_field(j, "duplicates");
    d.malformed = uint_field(j, "malformed");
    d.jitter_ms = number_field(j, "jitter_ms");
    if (!(d.jitter_ms >= 0 && d.jitter_ms <= kMaxReportSeconds * 1000))
        throw std::invalid_argument(fmt::format("field jitter_ms {:g} outside 0..{:g}", d.jitter_ms,
                                                kMaxReportSeconds * 1000));
    return d;
}
}  // namespace

ReceiverReport decode_receiver_report(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "receiver report");
    ReceiverReport r;
    r.bytes = uint_field(j, "bytes");
    r.seconds = report_seconds(j);
    r.hash = uint_field(j, "hash");
    r.omitted_bytes = uint_field(j, "omitted_bytes", 0, r.bytes);  // a part of bytes
    r.checked_payload = check_field(j);
    if (j.contains("mismatch_at")) {
        if (!r.checked_payload) throw std::invalid_argument("field mismatch_at without check payload");
        if (r.bytes == 0) throw std::invalid_argument("field mismatch_at with no bytes received");
        r.mismatch_at = uint_field(j, "mismatch_at", std::nullopt, r.bytes - 1);  // an offset of a byte read
    }
    r.cpu = cpu_fields(j);
    if (j.contains("cc")) {  // printed by the client: only a name it knows
        if (!j["cc"].is_string()) throw std::invalid_argument("field cc is not a string");
        r.cc = j["cc"].get<std::string>();
        if (!r.cc.empty() && !registered(r.cc))
            throw std::invalid_argument("field cc is not a known controller");
    }
    if (j.contains("datagrams")) r.datagrams = datagram_fields(j["datagrams"]);
    return r;
}

std::vector<std::uint8_t> encode(const SenderReport& r) {
    json j = {{"bytes", r.bytes}, {"seconds", r.seconds}, {"retransmits", r.retransmits}, {"hash", r.hash},
              {"omitted_bytes", r.omitted_bytes}, {"omitted_retransmits", r.omitted_retransmits},
              {"cpu_user", r.cpu.user}, {"cpu_system", r.cpu.system}};
    if (r.path)
        j.update({{"rtt_min", static_cast<std::uint64_t>(r.path->rtt_min)},
                  {"rtt_mean", static_cast<std::uint64_t>(r.path->rtt_mean)},
                  {"rtt_max", static_cast<std::uint64_t>(r.path->rtt_max)},
                  {"max_cwnd", r.path->max_cwnd}});
    return to_bytes(j);
}

SenderReport decode_sender_report(std::span<const std::uint8_t> blob) {
    auto j = from_bytes(blob, "sender report");
    SenderReport r;
    r.bytes = uint_field(j, "bytes");
    r.seconds = report_seconds(j);
    r.retransmits = uint_field(j, "retransmits");
    r.hash = uint_field(j, "hash");
    r.omitted_bytes = uint_field(j, "omitted_bytes", 0, r.bytes);  // parts of the totals
    r.omitted_retransmits = uint_field(j, "omitted_retransmits", 0, r.retransmits);
    r.cpu = cpu_fields(j);
    if (j.contains("rtt_min")) {
        const auto rtt = [&](const char* key) {
            return static_cast<std::int64_t>(uint_field(j, key, std::nullopt, kMaxReportRttUs));
        };
        SenderPath p{rtt("rtt_min"), rtt("rtt_mean"), rtt("rtt_max"), uint_field(j, "max_cwnd")};
        if (!(p.rtt_min <= p.rtt_mean && p.rtt_mean <= p.rtt_max))
            throw std::invalid_argument("fields rtt_min, rtt_mean, rtt_max out of order");
        r.path = p;
    }
    return r;
}

Bitrate parse_bitrate(std::string_view text) {
    const std::size_t slash = text.find('/');
    Bitrate b;
    b.bits_per_second = parse_rate(text.substr(0, slash));
    if (b.bits_per_second < 1 || b.bits_per_second > kMaxBitrate)
        throw std::invalid_argument(fmt::format("bitrate \"{}\" outside 1..{} bit/s", text, kMaxBitrate));
    if (slash != std::string_view::npos) {
        const std::string burst(text.substr(slash + 1));
        unsigned n = 0;
        const auto [ptr, ec] = std::from_chars(burst.data(), burst.data() + burst.size(), n);
        if (ec != std::errc() || ptr != burst.data() + burst.size() || burst.empty() || n < 1 || n > kMaxBurst)
            throw std::invalid_argument(fmt::format("burst \"{}\" is not a whole number of blocks in 1..{}", burst, kMaxBurst));
        b.burst = n;
    }
    return b;
}

Connection& await_established(Endpoint& ep, ConnectionHandle h, Duration timeout) {
    run_until(ep,
        [&] {
            const Connection* c = ep.find(h);
            return !c || c->is_established() || c->is_closed() || ep.close_info(h);
        },
        timeout);
    Connection* c = ep.connection(h);
    if (!c || !c->is_established()) {
        const CloseInfo* ci = ep.close_info(h);
        throw std::runtime_error(ci ? "connection failed: " + printable(ci->reason) : "connection failed: handshake did not complete");
    }
    return *c;
}

std::uint64_t PayloadPump::rate_limit(Instant now) const {
    const std::uint64_t limit = writer_.limit(), written = writer_.written();
    if (bits_per_second_ == 0) return limit;
    if (!paced_from_) return std::min(limit, written + 1);
    const double due = static_cast<double>(bits_per_second_) / 8 * to_seconds(now - *paced_from_);
    if (burst_bytes_) {
        // A burst goes once half of it is due.
        if (static_cast<double>(written) + static_cast<double>(burst_bytes_) / 2 > due) return written;
        return std::min(limit, written + burst_bytes_);
    }
    if (static_cast<double>(written) >= due) return written;  // ahead of the rate: wait
    return std::min(limit, static_cast<std::uint64_t>(std::ceil(due)));
}

Duration write_coalescing(std::uint64_t bits_per_second, std::size_t datagram_size) {
    if (bits_per_second == 0) return Duration::zero();
    const double two_datagrams = 2.0 * 8 * static_cast<double>(datagram_size) / static_cast<double>(bits_per_second);
    return std::min<Duration>(from_seconds(two_datagrams), std::chrono::milliseconds(25));
}

bool PayloadPump::wants(const Connection& c, StreamId id, const ConnectionStats& st, Instant now) const {
    return c.stream_send_capacity(id) > 0 && writer_.allowance(st, c.stream_send_limit(id), rate_limit(now)) > 0;
}

void PayloadPump::pump(Connection& c, StreamId id, const ConnectionStats& st, Instant now) {
    if (bits_per_second_ && !paced_from_) {
        paced_from_ = now;  // -b's clock starts with the first write
        c.set_send_coalescing(write_coalescing(bits_per_second_, c.max_datagram_size()));
    }
    writer_.write(c, id, st, rate_limit(now));
}

}  // namespace ndm::tools
