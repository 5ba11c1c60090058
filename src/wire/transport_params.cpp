// Transport parameters (RFC 9000 §18): (id, length, value) entries, integer
// values as varints exactly filling their length (§18.2). Duplicate ids of any
// kind are rejected (§7.4); unknown and greasing ids are skipped (§7.4.2,
// §18.1). Every failure is a TRANSPORT_PARAMETER_ERROR (§7.4, §18.2).
#include "wire/transport_params.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "ndm/connection.hpp"

namespace ndm::wire {

namespace {

constexpr std::uint64_t kMaxAckDelayMs = std::uint64_t{1} << 14;  // RFC 9000 §18.2: < 2^14
constexpr std::uint64_t kMaxStreams = std::uint64_t{1} << 60;     // RFC 9000 §18.2
constexpr std::uint64_t kMaxExponent = 20;                         // RFC 9000 §18.2
// Figure 22: IPv4 address and port, IPv6 address and port, CID length, CID, token.
constexpr std::size_t kPreferredAddressFixed = 4 + 2 + 16 + 2 + 1 + 16;

bool fail(Error& err, ErrorKind kind, std::string what) {
    err.kind = kind;
    err.what = std::move(what);
    err.code = CloseCode::transport_parameter_error;
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
    {param_id::max_udp_payload_size, "max_udp_payload_size", &TransportParams::max_udp_payload_size,
     kMinUdpPayloadSize, kVarintMax},
    {param_id::initial_max_data, "initial_max_data", &TransportParams::initial_max_data, 0, kVarintMax},
    {param_id::initial_max_stream_data_bidi_local, "initial_max_stream_data_bidi_local",
     &TransportParams::initial_max_stream_data_bidi_local, 0, kVarintMax},
    {param_id::initial_max_stream_data_bidi_remote, "initial_max_stream_data_bidi_remote",
     &TransportParams::initial_max_stream_data_bidi_remote, 0, kVarintMax},
    {param_id::initial_max_stream_data_uni, "initial_max_stream_data_uni",
     &TransportParams::initial_max_stream_data_uni, 0, kVarintMax},
    {param_id::initial_max_streams_bidi, "initial_max_streams_bidi", &TransportParams::initial_max_streams_bidi, 0,
     kMaxStreams},
    {param_id::initial_max_streams_uni, "initial_max_streams_uni", &TransportParams::initial_max_streams_uni, 0,
     kMaxStreams},
    {param_id::ack_delay_exponent, "ack_delay_exponent", &TransportParams::ack_delay_exponent, 0, kMaxExponent},
    {param_id::max_ack_delay, "max_ack_delay", &TransportParams::max_ack_delay_ms, 0, kMaxAckDelayMs - 1},
    {param_id::active_connection_id_limit, "active_connection_id_limit",
     &TransportParams::active_connection_id_limit, kMinActiveConnectionIdLimit, kVarintMax},
    {param_id::max_datagram_frame_size, "max_datagram_frame_size", &TransportParams::max_datagram_frame_size, 0,
     kVarintMax},
};

static_assert(kIntParams[1].id == 0x03 && kIntParams[9].id == 0x0b && kIntParams[10].id == 0x0e &&
                  kIntParams[11].id == 0x20,
              "for_each_entry writes kIntParams in id order");

struct CidParam {
    std::uint64_t id;
    const char* name;
    std::optional<ConnectionId> TransportParams::*field;
};

constexpr CidParam kCidParams[] = {
    {param_id::original_destination_connection_id, "original_destination_connection_id",
     &TransportParams::original_destination_connection_id},
    {param_id::initial_source_connection_id, "initial_source_connection_id",
     &TransportParams::initial_source_connection_id},
    {param_id::retry_source_connection_id, "retry_source_connection_id",
     &TransportParams::retry_source_connection_id},
};

// RFC 9000 §18.2: only a server sends these; a server receiving one from a
// client closes with TRANSPORT_PARAMETER_ERROR.
constexpr bool server_only(std::uint64_t id) {
    return id == param_id::original_destination_connection_id || id == param_id::stateless_reset_token ||
           id == param_id::preferred_address || id == param_id::retry_source_connection_id;
}

const char* param_name(std::uint64_t id) {
    for (const auto& ip : kIntParams)
        if (ip.id == id) return ip.name;
    for (const auto& cp : kCidParams)
        if (cp.id == id) return cp.name;
    switch (id) {
        case param_id::stateless_reset_token: return "stateless_reset_token";
        case param_id::disable_active_migration: return "disable_active_migration";
        case param_id::preferred_address: return "preferred_address";
        case param_id::ndm_application_params: return "ndm_application_params";
        case param_id::min_ack_delay: return "min_ack_delay";
        case param_id::version_information: return "version_information";
        default: return nullptr;
    }
}

std::string label(std::uint64_t id) {
    const char* n = param_name(id);
    return "transport parameter " + (n ? std::string(n) : hex(id));
}

// A greasing id 31·N + 27 with a 4-byte varint encoding, and a 4-byte value,
// both from the seed (RFC 9000 §18.1).
std::uint64_t grease_id(std::uint32_t seed) {
    constexpr std::uint64_t kFirstN = 529;  // 31·529 + 27 = 16426 >= 2^14: four bytes
    return 31 * (kFirstN + (seed % (std::uint32_t{1} << 25))) + 27;  // < 2^30
}

void put_u16(std::uint8_t*& p, std::uint16_t v) {
    *p++ = static_cast<std::uint8_t>(v >> 8);
    *p++ = static_cast<std::uint8_t>(v);
}

template <class It>
void put_bytes(std::uint8_t*& p, It begin, It end) {
    p = std::copy(begin, end, p);
}

// Calls put(id, value bytes) for every parameter to encode, in the order of §8.
template <class Put>
void for_each_entry(const TransportParams& p, std::optional<std::uint32_t> grease_seed, Put&& put) {
    static const TransportParams kDefaults{};
    std::array<std::uint8_t, kPreferredAddressFixed + kMaxCidLength> buf{};
    auto integer = [&](const IntParam& ip) {
        const std::uint64_t v = p.*ip.field;
        if (v == kDefaults.*ip.field) return;
        Writer w(buf);
        w.varint(v);
        put(ip.id, w.written());
    };
    auto cid = [&](const CidParam& cp) {
        if (const auto& c = p.*cp.field) put(cp.id, c->span());
    };
    cid(kCidParams[0]);
    integer(kIntParams[0]);
    if (p.stateless_reset_token) put(param_id::stateless_reset_token, *p.stateless_reset_token);
    for (std::size_t i = 1; i <= 9; ++i) integer(kIntParams[i]);  // 0x03..0x0b
    if (p.disable_active_migration) put(param_id::disable_active_migration, {});
    if (const auto& a = p.preferred_address) {
        std::uint8_t* q = buf.data();
        put_bytes(q, a->ipv4.begin(), a->ipv4.end());
        put_u16(q, a->ipv4_port);
        put_bytes(q, a->ipv6.begin(), a->ipv6.end());
        put_u16(q, a->ipv6_port);
        *q++ = a->cid.length;
        put_bytes(q, a->cid.span().begin(), a->cid.span().end());
        put_bytes(q, a->reset_token.begin(), a->reset_token.end());
        put(param_id::preferred_address, std::span<const std::uint8_t>(buf.data(), q));
    }
    integer(kIntParams[10]);  // active_connection_id_limit (0x0e)
    cid(kCidParams[1]);
    cid(kCidParams[2]);
    if (const auto& v = p.version_information) {
        std::array<std::uint8_t, 4 * (1 + kMaxAvailableVersions)> versions{};
        Writer w(versions);
        w.u32(v->chosen);
        for (const std::uint32_t a : v->available) w.u32(a);
        put(param_id::version_information, w.written());
    }
    integer(kIntParams[11]);  // max_datagram_frame_size (0x20, RFC 9221 §3)
    if (p.min_ack_delay_us) {
        Writer w(buf);
        w.varint(*p.min_ack_delay_us);
        put(param_id::min_ack_delay, w.written());
    }
    if (grease_seed) {
        const std::uint8_t v[4] = {static_cast<std::uint8_t>(*grease_seed >> 24),
                                   static_cast<std::uint8_t>(*grease_seed >> 16),
                                   static_cast<std::uint8_t>(*grease_seed >> 8),
                                   static_cast<std::uint8_t>(*grease_seed)};
        put(grease_id(*grease_seed), std::span<const std::uint8_t>(v));
    }
    if (!p.application_params.empty()) put(param_id::ndm_application_params, p.application_params);
}

// draft-ietf-quic-ack-frequency-14 §3: min_ack_delay (µs) may not exceed
// max_ack_delay (ms, below 2^14: the product cannot overflow).
bool min_ack_delay_above_max(const TransportParams& p) {
    return p.min_ack_delay_us && *p.min_ack_delay_us > p.max_ack_delay_ms * 1000;
}

// What the peer would reject (RFC 9000 §18.2) is not sent.
bool encodable(const TransportParams& p, Role sender) {
    for (const auto& ip : kIntParams) {
        const std::uint64_t v = p.*ip.field;
        if (v < ip.min || v > ip.max) return false;
    }
    if (p.application_params.size() > kMaxApplicationParams) return false;
    if (p.preferred_address && p.preferred_address->cid.length == 0) return false;
    for (const auto& cp : kCidParams)
        if (const auto& c = p.*cp.field; c && c->length > kMaxCidLength) return false;
    if (p.preferred_address && p.preferred_address->cid.length > kMaxCidLength) return false;
    if (min_ack_delay_above_max(p)) return false;
    if (const auto& v = p.version_information;
        v && (v->chosen == 0 || v->available.size() > kMaxAvailableVersions ||
              std::ranges::find(v->available, 0u) != v->available.end()))
        return false;
    if (sender == Role::client &&
        (p.original_destination_connection_id || p.stateless_reset_token || p.preferred_address ||
         p.retry_source_connection_id))
        return false;
    return true;
}

// An integer parameter's value: exactly one varint (RFC 9000 §18.2).
std::optional<std::uint64_t> one_varint(std::uint64_t id, std::span<const std::uint8_t> value, Error& err) {
    Reader vr(value);
    const auto v = vr.varint();
    if (!v || !vr.empty()) {
        fail(err, ErrorKind::bad_varint,
             label(id) + ": value of length " + std::to_string(value.size()) + " is not exactly one varint");
        return std::nullopt;
    }
    return v;
}

bool decode_int(const IntParam& ip, std::span<const std::uint8_t> value, TransportParams& p, Error& err) {
    const auto v = one_varint(ip.id, value, err);
    if (!v) return false;
    if (*v < ip.min || *v > ip.max)
        return fail(err, ErrorKind::bad_value,
                    std::string("transport parameter ") + ip.name + ": value " + std::to_string(*v) + " outside " +
                        std::to_string(ip.min) + ".." + std::to_string(ip.max));
    p.*ip.field = *v;
    return true;
}

bool decode_cid(std::uint64_t id, std::span<const std::uint8_t> value, ConnectionId& out, Error& err) {
    if (value.size() > kMaxCidLength)
        return fail(err, ErrorKind::bad_value,
                    label(id) + ": length " + std::to_string(value.size()) + " exceeds 20");
    out = ConnectionId::from(value);
    return true;
}

bool decode_preferred_address(std::span<const std::uint8_t> value, PreferredAddress& a, Error& err) {
    const std::string what = label(param_id::preferred_address);
    if (value.size() < kPreferredAddressFixed)
        return fail(err, ErrorKind::truncated, what + ": length " + std::to_string(value.size()) + " too short");
    Reader r(value);
    auto copy = [&](auto& arr) {
        const auto b = *r.bytes(arr.size());
        std::copy(b.begin(), b.end(), arr.begin());
    };
    copy(a.ipv4);
    a.ipv4_port = static_cast<std::uint16_t>(*r.uint(2));
    copy(a.ipv6);
    a.ipv6_port = static_cast<std::uint16_t>(*r.uint(2));
    const std::uint8_t len = *r.u8();
    // RFC 9000 §18.2: a zero-length connection ID here is an error.
    if (len < 1 || len > kMaxCidLength)
        return fail(err, ErrorKind::bad_value, what + ": connection id length " + std::to_string(len) + " outside 1..20");
    if (value.size() != kPreferredAddressFixed + len)
        return fail(err, ErrorKind::bad_value,
                    what + ": length " + std::to_string(value.size()) + ", expected " +
                        std::to_string(kPreferredAddressFixed + len));
    a.cid = ConnectionId::from(*r.bytes(len));
    copy(a.reset_token);
    return true;
}

// RFC 9368 §4: Chosen Version, then Available Versions, 4 bytes each; a
// length that is not a multiple of 4, a version 0, or a client's Chosen
// Version missing from its Available Versions is a parsing failure
// (TRANSPORT_PARAMETER_ERROR in QUIC v1 and v2).
bool decode_version_information(std::span<const std::uint8_t> value, Role sender, VersionInformation& v, Error& err) {
    const std::string what = label(param_id::version_information);
    if (value.size() < 4 || value.size() % 4 != 0)
        return fail(err, ErrorKind::bad_value, what + ": length " + std::to_string(value.size()) +
                                                   " is not a positive multiple of 4");
    if (value.size() / 4 - 1 > kMaxAvailableVersions)
        return fail(err, ErrorKind::bad_value, what + ": " + std::to_string(value.size() / 4 - 1) +
                                                   " available versions, more than " +
                                                   std::to_string(kMaxAvailableVersions));
    Reader r(value);
    v.chosen = *r.u32();
    while (!r.empty()) v.available.push_back(*r.u32());
    if (v.chosen == 0 || std::ranges::find(v.available, 0u) != v.available.end())
        return fail(err, ErrorKind::bad_value, what + ": version 0");
    if (sender == Role::client && std::ranges::find(v.available, v.chosen) == v.available.end())
        return fail(err, ErrorKind::bad_value, what + ": the chosen version is not among the available ones");
    return true;
}

// One known parameter's value (the id is not an integer parameter).
bool decode_other(std::uint64_t id, std::span<const std::uint8_t> value, Role sender, TransportParams& p,
                  Error& err) {
    for (const auto& cp : kCidParams) {
        if (cp.id != id) continue;
        ConnectionId c;
        if (!decode_cid(id, value, c, err)) return false;
        p.*cp.field = c;
        return true;
    }
    switch (id) {
        case param_id::stateless_reset_token: {
            ResetToken t;
            if (value.size() != t.size())
                return fail(err, ErrorKind::bad_value,
                            label(id) + ": length " + std::to_string(value.size()) + ", expected 16");
            std::copy(value.begin(), value.end(), t.begin());
            p.stateless_reset_token = t;
            return true;
        }
        case param_id::disable_active_migration:
            if (!value.empty())
                return fail(err, ErrorKind::bad_value,
                            label(id) + ": length " + std::to_string(value.size()) + ", expected 0");
            p.disable_active_migration = true;
            return true;
        case param_id::preferred_address: {
            PreferredAddress a;
            if (!decode_preferred_address(value, a, err)) return false;
            p.preferred_address = a;
            return true;
        }
        case param_id::version_information: {
            VersionInformation v;
            if (!decode_version_information(value, sender, v, err)) return false;
            p.version_information = std::move(v);
            return true;
        }
        case param_id::min_ack_delay:
            p.min_ack_delay_us = one_varint(id, value, err);  // checked against max_ack_delay once both are known
            return p.min_ack_delay_us.has_value();
        case param_id::ndm_application_params:
            if (value.size() > kMaxApplicationParams)
                return fail(err, ErrorKind::bad_value,
                            label(id) + ": length " + std::to_string(value.size()) + " exceeds " +
                                std::to_string(kMaxApplicationParams));
            p.application_params.assign(value.begin(), value.end());
            return true;
        default: return true;  // unknown or greasing: skipped (RFC 9000 §7.4.2, §18.1)
    }
}

}  // namespace

bool encode_transport_params(Writer& w, const TransportParams& p, Role sender,
                             std::optional<std::uint32_t> grease_seed) {
    // Refuse to send what the peer would reject, and write nothing on failure.
    if (!encodable(p, sender)) return false;
    std::size_t size = 0;
    for_each_entry(p, grease_seed, [&](std::uint64_t id, std::span<const std::uint8_t> v) {
        size += varint_size(id) + varint_size(v.size()) + v.size();
    });
    if (size > w.remaining()) return false;
    for_each_entry(p, grease_seed, [&](std::uint64_t id, std::span<const std::uint8_t> v) {
        w.varint(id);
        w.varint(v.size());
        w.bytes(v);
    });
    return true;
}

bool decode_transport_params(std::span<const std::uint8_t> in, Role sender, TransportParams& out, Error& err) {
    TransportParams p;  // absent parameters take their defaults (RFC 9000 §18.2)
    std::vector<std::uint64_t> seen;  // at most in.size()/2 entries: bounded by the input
    Reader r(in);
    while (!r.empty()) {
        const auto id = r.varint();
        if (!id) return fail(err, ErrorKind::truncated, "transport parameters: id truncated");
        const auto len = r.varint();
        if (!len) return fail(err, ErrorKind::truncated, label(*id) + ": length truncated");
        if (*len > r.remaining())
            return fail(err, ErrorKind::truncated,
                        label(*id) + ": length " + std::to_string(*len) + " past end of parameters");
        const auto value = *r.bytes(static_cast<std::size_t>(*len));
        seen.push_back(*id);
        if (sender == Role::client && server_only(*id))
            return fail(err, ErrorKind::bad_value, label(*id) + ": sent by a client (server only)");
        const auto ip = std::find_if(std::begin(kIntParams), std::end(kIntParams),
                                     [&](const IntParam& x) { return x.id == *id; });
        if (!(ip != std::end(kIntParams) ? decode_int(*ip, value, p, err) : decode_other(*id, value, sender, p, err)))
            return false;
    }
    std::sort(seen.begin(), seen.end());
    if (const auto d = std::adjacent_find(seen.begin(), seen.end()); d != seen.end())
        return fail(err, ErrorKind::bad_value, label(*d) + ": duplicate id");
    // draft-ietf-quic-ack-frequency-14 §3: a min_ack_delay above max_ack_delay
    // is a TRANSPORT_PARAMETER_ERROR.
    if (min_ack_delay_above_max(p))
        return fail(err, ErrorKind::bad_value,
                    "transport parameter min_ack_delay: " + std::to_string(*p.min_ack_delay_us) +
                        " us exceeds max_ack_delay (" + std::to_string(p.max_ack_delay_ms) + " ms)");
    out = std::move(p);
    return true;
}

ndm::TransportParameters to_public(const TransportParams& p) {
    const auto bytes = [](const std::optional<ConnectionId>& c) {
        return c ? std::vector<std::uint8_t>(c->span().begin(), c->span().end()) : std::vector<std::uint8_t>{};
    };
    ndm::TransportParameters out;
    out.original_destination_connection_id = bytes(p.original_destination_connection_id);
    out.initial_source_connection_id = bytes(p.initial_source_connection_id);
    out.retry_source_connection_id = bytes(p.retry_source_connection_id);
    out.max_idle_timeout_ms = p.max_idle_timeout_ms;
    out.max_udp_payload_size = p.max_udp_payload_size;
    out.initial_max_data = p.initial_max_data;
    out.initial_max_stream_data_bidi_local = p.initial_max_stream_data_bidi_local;
    out.initial_max_stream_data_bidi_remote = p.initial_max_stream_data_bidi_remote;
    out.initial_max_stream_data_uni = p.initial_max_stream_data_uni;
    out.initial_max_streams_bidi = p.initial_max_streams_bidi;
    out.initial_max_streams_uni = p.initial_max_streams_uni;
    out.ack_delay_exponent = p.ack_delay_exponent;
    out.max_ack_delay_ms = p.max_ack_delay_ms;
    out.active_connection_id_limit = p.active_connection_id_limit;
    out.disable_active_migration = p.disable_active_migration;
    out.stateless_reset_token = p.stateless_reset_token.has_value();
    out.preferred_address = p.preferred_address.has_value();
    out.min_ack_delay_us = p.min_ack_delay_us.value_or(0);
    if (p.version_information) {
        out.chosen_version = p.version_information->chosen;
        out.available_versions = p.version_information->available;
    }
    out.max_datagram_frame_size = p.max_datagram_frame_size;
    out.application_params = p.application_params;
    return out;
}

}  // namespace ndm::wire
