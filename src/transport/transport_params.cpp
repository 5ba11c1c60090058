// Transport parameters (RFC 9000 §18): (id, length, value) entries, integer
// values as varints exactly filling their length (§18.2). Duplicate ids of any
// kind are rejected (§7.4); unknown ids are skipped (§7.4.2).
#include "transport/transport_params.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "ndm/connection.hpp"

namespace ndm::wire {

namespace {

constexpr std::uint64_t kMaxAckDelayMs = std::uint64_t{1} << 14;  // RFC 9000 §18.2: < 2^14
constexpr std::uint64_t kMaxStreamCount = std::uint64_t{1} << 60;  // RFC 9000 §18.2

bool fail(Error& err, ErrorKind kind, std::string what) {
    err.kind = kind;
    err.what = std::move(what);
    return false;
}

std::string hex(std::uint64_t v) {
    char buf[2 + 16] = {'0', 'x'};
    auto res = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
    return std::string(buf, res.ptr);
}

struct IntParam {
    std::uint64_t id;
    const char* name;
    std::uint64_t TransportParams::*field;
    std::uint64_t min;
    std::uint64_t max;
};

constexpr IntParam kIntParams[] = {
    {param_id::max_idle_timeout, "max_idle_timeout", &TransportParams::max_idle_timeout_ms, 0, kVarintMax},
    {param_id::max_datagram_size, "max_datagram_size", &TransportParams::max_datagram_size,
     kMinDatagramSize, kMaxDatagramSize},
    {param_id::initial_max_data, "initial_max_data", &TransportParams::initial_max_data, 0, kVarintMax},
    {param_id::initial_max_stream_data, "initial_max_stream_data",
     &TransportParams::initial_max_stream_data, 0, kVarintMax},
    {param_id::initial_max_streams, "initial_max_streams", &TransportParams::initial_max_streams, 0,
     kMaxStreamCount},
    {param_id::max_ack_delay, "max_ack_delay", &TransportParams::max_ack_delay_ms, 0, kMaxAckDelayMs - 1},
};

}  // namespace

bool encode_transport_params(Writer& w, const TransportParams& p) {
    // Refuse to send what the peer would reject, and write nothing on failure.
    std::size_t size = 0;
    for (const auto& ip : kIntParams) {
        const std::uint64_t v = p.*ip.field;
        if (v < ip.min || v > ip.max) return false;
        size += varint_size(ip.id) + varint_size(varint_size(v)) + varint_size(v);
    }
    if (p.application_params.size() > kMaxApplicationParams) return false;
    if (!p.application_params.empty())
        size += varint_size(param_id::application_params) + varint_size(p.application_params.size()) +
                p.application_params.size();
    if (size > w.remaining()) return false;
    for (const auto& ip : kIntParams) {
        const std::uint64_t v = p.*ip.field;
        w.varint(ip.id);
        w.varint(varint_size(v));
        w.varint(v);
    }
    if (!p.application_params.empty()) {
        w.varint(param_id::application_params);
        w.varint(p.application_params.size());
        w.bytes(p.application_params);
    }
    return true;
}

bool decode_transport_params(std::span<const std::uint8_t> in, TransportParams& out, Error& err) {
    TransportParams p;  // absent parameters take their defaults (RFC 9000 §18.2)
    std::vector<std::uint64_t> seen;  // at most in.size()/2 entries: bounded by the input
    Reader r(in);
    while (!r.empty()) {
        const auto id = r.varint();
        if (!id) return fail(err, ErrorKind::truncated, "transport parameters: id truncated");
        const auto len = r.varint();
        if (!len)
            return fail(err, ErrorKind::truncated,
                        "transport parameter " + hex(*id) + ": length truncated");
        if (*len > r.remaining())
            return fail(err, ErrorKind::truncated,
                        "transport parameter " + hex(*id) + ": length " + std::to_string(*len) +
                            " past end of parameters");
        const auto value = *r.bytes(static_cast<std::size_t>(*len));
        seen.push_back(*id);

        if (*id == param_id::application_params) {
            if (value.size() > kMaxApplicationParams)
                return fail(err, ErrorKind::bad_value,
                            "transport parameter application_params: length " +
                                std::to_string(value.size()) + " exceeds " +
                                std::to_string(kMaxApplicationParams));
            p.application_params.assign(value.begin(), value.end());
            continue;
        }
        const auto ip = std::find_if(std::begin(kIntParams), std::end(kIntParams),
                                     [&](const IntParam& x) { return x.id == *id; });
        if (ip == std::end(kIntParams)) continue;  // unknown: skip (RFC 9000 §7.4.2)
        Reader vr(value);
        const auto v = vr.varint();
        if (!v || !vr.empty())
            return fail(err, ErrorKind::bad_varint,
                        std::string("transport parameter ") + ip->name + ": value of length " +
                            std::to_string(value.size()) + " is not exactly one varint");
        if (*v < ip->min || *v > ip->max)
            return fail(err, ErrorKind::bad_value,
                        std::string("transport parameter ") + ip->name + ": value " +
                            std::to_string(*v) + " outside " + std::to_string(ip->min) + ".." +
                            std::to_string(ip->max));
        p.*ip->field = *v;
    }
    std::sort(seen.begin(), seen.end());
    if (const auto d = std::adjacent_find(seen.begin(), seen.end()); d != seen.end())
        return fail(err, ErrorKind::bad_value, "transport parameter " + hex(*d) + ": duplicate id");
    out = std::move(p);
    return true;
}

}  // namespace ndm::wire
