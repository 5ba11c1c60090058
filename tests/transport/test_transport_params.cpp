// Transport parameters (RFC 9000 §18): round trips of the full v1 set, every
// validation rule with its error code, role checks, unknown and greasing ids,
// malformed input, and the parameters of RFC 9001 §A.2's ClientHello.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "wire/transport_params.hpp"

using namespace ndm::wire;
using ndm::CloseCode;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes encode(const TransportParams& p, Role sender = Role::server, std::optional<std::uint32_t> grease = {}) {
    Bytes buf(2048);
    Writer w(buf);
    REQUIRE(encode_transport_params(w, p, sender, grease));
    buf.resize(w.position());
    return buf;
}

TransportParams decode_ok(const Bytes& b, Role sender = Role::server) {
    TransportParams p;
    Error err;
    const bool ok = decode_transport_params(b, sender, p, err);
    INFO(err.what);
    REQUIRE(ok);
    return p;
}

Error decode_error(const Bytes& b, Role sender = Role::server) {
    TransportParams p;
    p.initial_max_data = 777;
    Error err{};
    REQUIRE_FALSE(decode_transport_params(b, sender, p, err));
    CHECK(p.initial_max_data == 777);  // untouched on failure
    CHECK_FALSE(err.what.empty());
    CHECK(err.code == CloseCode::transport_parameter_error);  // RFC 9000 §7.4, §18.2
    return err;
}

// One (id, length, value) entry with a varint value.
Bytes entry(std::uint64_t id, std::uint64_t value) {
    Bytes buf(32);
    Writer w(buf);
    REQUIRE(w.varint(id));
    REQUIRE(w.varint(varint_size(value)));
    REQUIRE(w.varint(value));
    buf.resize(w.position());
    return buf;
}

// One entry with raw value bytes.
Bytes raw(std::uint64_t id, const Bytes& value) {
    Bytes buf(16 + value.size());
    Writer w(buf);
    REQUIRE(w.varint(id));
    REQUIRE(w.varint(value.size()));
    REQUIRE(w.bytes(value));
    buf.resize(w.position());
    return buf;
}

Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

Bytes unhex(std::string_view s) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16)));
    return out;
}

ConnectionId cid(std::initializer_list<std::uint8_t> b) { return ConnectionId::from(Bytes(b)); }

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Every parameter away from its default.
TransportParams full_set() {
    TransportParams p;
    p.original_destination_connection_id = cid({1, 2, 3, 4, 5, 6, 7, 8});
    p.max_idle_timeout_ms = 30000;
    p.stateless_reset_token = ResetToken{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    p.max_udp_payload_size = 65527 + 1000;  // above what UDP carries: valid on the wire
    p.initial_max_data = kVarintMax;
    p.initial_max_stream_data_bidi_local = 1;
    p.initial_max_stream_data_bidi_remote = 1u << 20;
    p.initial_max_stream_data_uni = 77;
    p.initial_max_streams_bidi = 1ull << 60;
    p.initial_max_streams_uni = 3;
    p.ack_delay_exponent = 20;
    p.max_ack_delay_ms = (1u << 14) - 1;
    p.disable_active_migration = true;
    PreferredAddress a;
    a.ipv4 = {192, 0, 2, 1};
    a.ipv4_port = 4433;
    a.ipv6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    a.ipv6_port = 443;
    a.cid = ConnectionId::from(Bytes(20, 0xcd));
    a.reset_token.fill(0xee);
    p.preferred_address = a;
    p.active_connection_id_limit = 8;
    p.initial_source_connection_id = cid({});  // zero-length CIDs are valid here
    p.retry_source_connection_id = cid({9, 9, 9});
    p.application_params = Bytes(kMaxApplicationParams, 0xab);
    return p;
}

}  // namespace

TEST_CASE("transport_params: defaults follow RFC 9000 18.2 and encode to nothing") {
    const TransportParams d;
    CHECK(d.max_idle_timeout_ms == 0);
    CHECK(d.max_udp_payload_size == 65527);
    CHECK(d.ack_delay_exponent == 3);
    CHECK(d.max_ack_delay_ms == 25);
    CHECK(d.active_connection_id_limit == 2);
    CHECK(d.initial_max_data == 0);
    CHECK_FALSE(d.disable_active_migration);
    CHECK(encode(d).empty());
    CHECK(decode_ok({}) == d);
}

TEST_CASE("transport_params: the full v1 set round-trips, in id order") {
    const TransportParams p = full_set();
    const Bytes b = encode(p);
    CHECK(decode_ok(b) == p);
    // Ids appear in ascending order, each once.
    Reader r(b);
    std::uint64_t last = 0;
    bool first = true;
    int n = 0;
    while (!r.empty()) {
        const auto id = r.varint();
        const auto len = r.varint();
        REQUIRE((id && len));
        REQUIRE(r.bytes(*len));
        CHECK((first || *id > last));
        first = false;
        last = *id;
        ++n;
    }
    CHECK(n == 18);  // 0x00..0x10 and the ndm blob
    CHECK(last == param_id::ndm_application_params);
    // Golden bytes of a few entries (RFC 9000 §18.2 encodings).
    TransportParams q;
    q.disable_active_migration = true;
    q.max_idle_timeout_ms = 30000;
    q.stateless_reset_token = ResetToken{};
    CHECK(encode(q) == cat({Bytes{0x01, 0x04, 0x80, 0x00, 0x75, 0x30}, raw(0x02, Bytes(16, 0)), Bytes{0x0c, 0x00}}));
}

TEST_CASE("transport_params: ndm's blob sits under its private id, not of greasing form") {
    CHECK_FALSE(is_greasing_id(param_id::ndm_application_params));
    CHECK(param_id::ndm_application_params > 0x3fff);  // past the Specification Required range
    TransportParams p;
    p.application_params = {1, 2, 3};
    CHECK(encode(p) == Bytes{0xc0, 0x00, 0x6e, 0x64, 0x6d, 0x2d, 0x61, 0x70, 0x03, 1, 2, 3});
    // The old id 0x4e44 is now an unknown parameter: skipped.
    CHECK(decode_ok(raw(0x4e44, {7})).application_params.empty());
}

TEST_CASE("transport_params: decodes the parameters of RFC 9001 A.2's ClientHello") {
    // The quic_transport_parameters extension (0x0039, 50 bytes) of the
    // client Initial in RFC 9001 Appendix A.2, written by another stack. Its
    // 65535s use 4-byte varints (0x8000ffff): non-minimal, and valid.
    const Bytes b = unhex(
        "0408ffffffffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e51570806048000ffff");
    REQUIRE(b.size() == 50);
    const TransportParams p = decode_ok(b, Role::client);
    CHECK(p.initial_max_data == kVarintMax);
    CHECK(p.initial_max_stream_data_bidi_local == 65535);
    CHECK(p.initial_max_stream_data_bidi_remote == 65535);
    CHECK(p.initial_max_stream_data_uni == 65535);
    CHECK(p.initial_max_streams_bidi == 16);
    CHECK(p.initial_max_streams_uni == 16);
    CHECK(p.max_idle_timeout_ms == 30000);
    REQUIRE(p.initial_source_connection_id);
    CHECK(*p.initial_source_connection_id == cid({0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}));
    // Everything else at its default.
    CHECK(p.max_udp_payload_size == 65527);
    CHECK(p.ack_delay_exponent == 3);
    CHECK(p.max_ack_delay_ms == 25);
    CHECK(p.active_connection_id_limit == 2);
    CHECK_FALSE(p.original_destination_connection_id);
    // Re-encoded in shortest form it decodes to the same.
    CHECK(decode_ok(encode(p, Role::client), Role::client) == p);
}

TEST_CASE("transport_params: a client must not send the server-only parameters") {
    const Bytes server_only[] = {
        raw(param_id::original_destination_connection_id, {1, 2}),
        raw(param_id::stateless_reset_token, Bytes(16, 1)),
        raw(param_id::preferred_address, Bytes(42, 1)),  // CID length byte 1: a valid layout
        raw(param_id::retry_source_connection_id, {3}),
    };
    for (const auto& b : server_only) {
        CAPTURE(b[0]);
        const Error e = decode_error(b, Role::client);
        CHECK(contains(e.what, "sent by a client"));
        // From a server: fine (a client rejects none of them).
        TransportParams p;
        Error err;
        CHECK(decode_transport_params(b, Role::server, p, err));
    }
    // The encoder refuses to write them for a client, writing nothing.
    std::array<std::uint8_t, 256> buf{};
    for (int i = 0; i < 4; ++i) {
        TransportParams p;
        if (i == 0) p.original_destination_connection_id = cid({1});
        if (i == 1) p.stateless_reset_token = ResetToken{};
        if (i == 2) p.preferred_address = full_set().preferred_address;
        if (i == 3) p.retry_source_connection_id = cid({1});
        Writer w(buf);
        CHECK_FALSE(encode_transport_params(w, p, Role::client));
        CHECK(w.position() == 0);
        Writer ws(buf);
        CHECK(encode_transport_params(ws, p, Role::server));
    }
    // initial_source_connection_id comes from both.
    CHECK(decode_ok(raw(param_id::initial_source_connection_id, {5}), Role::client).initial_source_connection_id);
}

TEST_CASE("transport_params: unknown and greasing ids are skipped") {
    const Bytes b = cat({entry(0x2a, 5), Bytes{0x40, 0x99, 0x03, 'x', 'y', 'z'}, Bytes{0x3f, 0x00},
                         raw(27, {1, 2}), raw(31 * 1000 + 27, Bytes(200, 9)), entry(param_id::initial_max_data, 1000)});
    CHECK(is_greasing_id(27));
    CHECK(is_greasing_id(31 * 1000 + 27));
    CHECK_FALSE(is_greasing_id(0x2a));
    CHECK(decode_ok(b).initial_max_data == 1000);
}

TEST_CASE("transport_params: one greasing parameter, deterministic and of fixed size") {
    const TransportParams p = full_set();
    const Bytes plain = encode(p);
    const Bytes g1 = encode(p, Role::server, 1);
    const Bytes g1_again = encode(p, Role::server, 1);
    const Bytes g2 = encode(p, Role::server, 0xdeadbeef);
    CHECK(g1 == g1_again);
    CHECK(g1 != g2);
    CHECK(g1.size() == plain.size() + 4 + 1 + 4);  // 4-byte id, length, 4-byte value
    CHECK(g2.size() == g1.size());
    CHECK(decode_ok(g1) == p);
    CHECK(decode_ok(g2) == p);
    // The id is of greasing form.
    for (std::uint32_t seed : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) {
        TransportParams none;
        const Bytes g = encode(none, Role::client, seed);
        Reader r(g);
        const auto id = r.varint();
        REQUIRE(id);
        CHECK(is_greasing_id(*id));
        CHECK(varint_size(*id) == 4);
    }
}

TEST_CASE("transport_params: duplicates are rejected") {
    {
        const Error e = decode_error(cat({entry(param_id::max_ack_delay, 5), entry(param_id::max_ack_delay, 6)}));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "max_ack_delay: duplicate"));
    }
    CHECK(contains(decode_error(cat({entry(0x2a, 1), entry(param_id::initial_max_data, 1), entry(0x2a, 2)})).what,
                   "0x2a: duplicate"));
    const Bytes app = raw(param_id::ndm_application_params, {7});
    CHECK(decode_ok(app).application_params == Bytes{7});
    CHECK(decode_error(cat({app, app})).kind == ErrorKind::bad_value);
    const Bytes flag = raw(param_id::disable_active_migration, {});
    CHECK(contains(decode_error(cat({flag, flag})).what, "disable_active_migration: duplicate"));
}

TEST_CASE("transport_params: out-of-range integer values are rejected") {
    struct Case {
        std::uint64_t id, value;
        const char* name;
    };
    const Case bad[] = {
        {param_id::max_udp_payload_size, 1199, "max_udp_payload_size"},
        {param_id::max_udp_payload_size, 0, "max_udp_payload_size"},
        {param_id::max_ack_delay, 1u << 14, "max_ack_delay"},
        {param_id::initial_max_streams_bidi, (1ull << 60) + 1, "initial_max_streams_bidi"},
        {param_id::initial_max_streams_uni, (1ull << 60) + 1, "initial_max_streams_uni"},
        {param_id::ack_delay_exponent, 21, "ack_delay_exponent"},
        {param_id::active_connection_id_limit, 1, "active_connection_id_limit"},
        {param_id::active_connection_id_limit, 0, "active_connection_id_limit"},
    };
    for (const auto& c : bad) {
        CAPTURE(c.value);
        const Error e = decode_error(entry(c.id, c.value));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, c.name));
    }
    // The limits themselves are accepted.
    CHECK(decode_ok(entry(param_id::max_ack_delay, (1u << 14) - 1)).max_ack_delay_ms == (1u << 14) - 1);
    CHECK(decode_ok(entry(param_id::ack_delay_exponent, 20)).ack_delay_exponent == 20);
    CHECK(decode_ok(entry(param_id::initial_max_streams_uni, 1ull << 60)).initial_max_streams_uni == 1ull << 60);
    CHECK(decode_ok(entry(param_id::active_connection_id_limit, 2)).active_connection_id_limit == 2);
    CHECK(decode_ok(entry(param_id::max_udp_payload_size, 1200)).max_udp_payload_size == 1200);
    CHECK(decode_ok(entry(param_id::max_udp_payload_size, kVarintMax)).max_udp_payload_size == kVarintMax);
}

TEST_CASE("transport_params: wrong lengths are rejected") {
    // 16-byte reset token, empty disable_active_migration, CIDs up to 20 bytes.
    CHECK(contains(decode_error(raw(param_id::stateless_reset_token, Bytes(15, 0))).what, "expected 16"));
    CHECK(contains(decode_error(raw(param_id::stateless_reset_token, Bytes(17, 0))).what, "expected 16"));
    CHECK(contains(decode_error(raw(param_id::disable_active_migration, {0})).what, "expected 0"));
    for (auto id : {param_id::original_destination_connection_id, param_id::initial_source_connection_id,
                    param_id::retry_source_connection_id}) {
        CHECK(contains(decode_error(raw(id, Bytes(21, 1))).what, "exceeds 20"));
        CHECK(decode_ok(raw(id, Bytes(20, 1))) != TransportParams{});
    }
    {
        Bytes b = raw(param_id::ndm_application_params, Bytes(513, 1));
        const Error e = decode_error(b);
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "ndm_application_params: length 513 exceeds 512"));
    }
}

TEST_CASE("transport_params: preferred_address layout (RFC 9000 18.2 Figure 22)") {
    TransportParams p;
    p.preferred_address = full_set().preferred_address;
    const Bytes b = encode(p);
    // id, length 61, then the fields in order.
    REQUIRE(b.size() == 2 + 41 + 20);
    CHECK(b[0] == 0x0d);
    CHECK(b[1] == 61);
    CHECK(Bytes(b.begin() + 2, b.begin() + 8) == Bytes{192, 0, 2, 1, 0x11, 0x51});  // 4433
    CHECK(b[2 + 6 + 16] == 0x01);       // IPv6 port 443, high byte
    CHECK(b[2 + 6 + 16 + 1] == 0xbb);
    CHECK(b[2 + 24] == 20);             // CID length
    CHECK(b.back() == 0xee);            // reset token last
    CHECK(decode_ok(b) == p);
    // Zero-length CID, CID over 20, length mismatch both ways, too short.
    Bytes value(b.begin() + 2, b.end());
    auto with_cid_len = [&](std::uint8_t len) {
        Bytes v = value;
        v[24] = len;
        return raw(param_id::preferred_address, v);
    };
    CHECK(contains(decode_error(with_cid_len(0)).what, "outside 1..20"));
    CHECK(contains(decode_error(with_cid_len(21)).what, "outside 1..20"));
    CHECK(contains(decode_error(with_cid_len(19)).what, "expected 60"));
    Bytes longer = value;
    longer.push_back(0);
    CHECK(contains(decode_error(raw(param_id::preferred_address, longer)).what, "expected 61"));
    CHECK(decode_error(raw(param_id::preferred_address, Bytes(40, 0))).kind == ErrorKind::truncated);
}

TEST_CASE("transport_params: encoder refuses values the peer would reject") {
    std::array<std::uint8_t, 1024> buf{};
    auto refuses = [&](const TransportParams& p) {
        Writer w(buf);
        return !encode_transport_params(w, p, Role::server) && w.position() == 0;
    };
    TransportParams p;
    p.max_udp_payload_size = 1000;
    CHECK(refuses(p));
    p = {};
    p.max_ack_delay_ms = 1u << 14;
    CHECK(refuses(p));
    p = {};
    p.ack_delay_exponent = 21;
    CHECK(refuses(p));
    p = {};
    p.active_connection_id_limit = 1;
    CHECK(refuses(p));
    p = {};
    p.initial_max_streams_uni = (1ull << 60) + 1;
    CHECK(refuses(p));
    p = {};
    p.application_params.resize(kMaxApplicationParams + 1);
    CHECK(refuses(p));
    p = {};
    p.initial_max_data = 1ull << 62;
    CHECK(refuses(p));
    p = {};
    p.preferred_address = PreferredAddress{};  // zero-length CID
    CHECK(refuses(p));
    // And refuses, writing nothing, when out of room.
    const Bytes full = encode(full_set());
    Writer w(std::span<std::uint8_t>(buf).first(full.size() - 1));
    CHECK_FALSE(encode_transport_params(w, full_set(), Role::server));
    CHECK(w.position() == 0);
}

TEST_CASE("transport_params: malformed entries") {
    {  // value length past the end
        const Error e = decode_error(Bytes{0x04, 0x02, 0x05});
        CHECK(e.kind == ErrorKind::truncated);
        CHECK(contains(e.what, "length 2 past end"));
    }
    {
        const Error e = decode_error(Bytes{0x04, 0x02, 0x05, 0x00});  // trailing byte in the value
        CHECK(e.kind == ErrorKind::bad_varint);
        CHECK(contains(e.what, "initial_max_data"));
    }
    CHECK(decode_error(Bytes{0x04, 0x01, 0x40}).kind == ErrorKind::bad_varint);  // truncated varint value
    CHECK(decode_error(Bytes{0x04, 0x00}).kind == ErrorKind::bad_varint);        // empty value
    CHECK(contains(decode_error(Bytes{0x40}).what, "id truncated"));
    CHECK(contains(decode_error(Bytes{0x04}).what, "length truncated"));
    CHECK(contains(decode_error(Bytes{0x04, 0xff}).what, "length truncated"));
    // Cutting an encoding inside its last entry always fails.
    TransportParams p;
    p.application_params = Bytes(100, 3);
    const Bytes full = encode(p);
    for (std::size_t n = full.size() - 109; n < full.size(); ++n)
        decode_error(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
}

TEST_CASE("transport_params: random input never crashes, accepted input re-encodes (property)") {
    std::mt19937_64 rng(0x7a4a'0001);
    static constexpr std::uint8_t kIds[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x08, 0x0a,
                                            0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x1b, 0x2a};
    int accepted = 0;
    for (int i = 0; i < 10000; ++i) {
        Bytes b;
        for (int k = 0, n = int(rng() % 6); k < n; ++k) {
            if (rng() % 8 == 0) {
                for (int j = 0, m = int(rng() % 6); j < m; ++j) b.push_back(static_cast<std::uint8_t>(rng()));
            } else {
                b.push_back(kIds[rng() % std::size(kIds)]);
                const std::uint8_t len = static_cast<std::uint8_t>(rng() % 5);
                b.push_back(len);
                for (int j = 0; j < len; ++j) b.push_back(static_cast<std::uint8_t>(rng() % 3 ? rng() % 0x50 : rng()));
            }
        }
        const Role sender = rng() % 2 ? Role::client : Role::server;
        TransportParams p;
        Error err{};
        if (!decode_transport_params(b, sender, p, err)) {
            REQUIRE_FALSE(err.what.empty());
            REQUIRE(err.code == CloseCode::transport_parameter_error);
            continue;
        }
        ++accepted;
        REQUIRE(decode_ok(encode(p, sender), sender) == p);
    }
    CHECK(accepted > 300);
}

TEST_CASE("transport_params: min_ack_delay (draft-ietf-quic-ack-frequency-14 §3) round-trips and stays within max_ack_delay") {
    TransportParams p;
    p.min_ack_delay_us = 1000;
    const TransportParams back = decode_ok(encode(p));
    REQUIRE(back.min_ack_delay_us);
    CHECK(*back.min_ack_delay_us == 1000);
    CHECK(to_public(back).min_ack_delay_us == 1000);
    CHECK_FALSE(decode_ok(encode(TransportParams{})).min_ack_delay_us);
    // Absent max_ack_delay means 25 ms: 25 000 us is the most min_ack_delay may be.
    CHECK(*decode_ok(entry(param_id::min_ack_delay, 25000)).min_ack_delay_us == 25000);
    const Error e = decode_error(entry(param_id::min_ack_delay, 25001));
    CHECK(e.code == ndm::CloseCode::transport_parameter_error);
    CHECK(contains(e.what, "min_ack_delay: 25001 us exceeds max_ack_delay (25 ms)"));
    // The order of the two parameters does not matter.
    CHECK(contains(decode_error(cat({entry(param_id::max_ack_delay, 2), entry(param_id::min_ack_delay, 2001)})).what,
                   "exceeds max_ack_delay (2 ms)"));
    CHECK(contains(decode_error(raw(param_id::min_ack_delay, Bytes{0x01, 0x02})).what, "not exactly one varint"));
    // Nor is it sent.
    p.max_ack_delay_ms = 0;
    Bytes buf(256);
    ndm::wire::Writer w(buf);
    CHECK_FALSE(encode_transport_params(w, p, Role::client));
}

TEST_CASE("transport_params: max_datagram_frame_size (RFC 9221 §3) is 0 when absent, sent when not, in id order") {
    CHECK(TransportParams{}.max_datagram_frame_size == 0);
    CHECK(encode(TransportParams{}).empty());  // 0: not sent
    TransportParams p;
    p.max_datagram_frame_size = 65535;
    CHECK(encode(p) == Bytes{0x20, 0x04, 0x80, 0x00, 0xff, 0xff});
    const TransportParams back = decode_ok(encode(p));
    CHECK(back.max_datagram_frame_size == 65535);
    CHECK(to_public(back).max_datagram_frame_size == 65535);
    // After retry_source_connection_id (0x10), before min_ack_delay.
    p.min_ack_delay_us = 1000;
    p.initial_source_connection_id = ConnectionId::from(Bytes{1, 2, 3, 4});
    const Bytes b = encode(p);
    CHECK(decode_ok(b) == p);
    const Bytes dgram{0x20, 0x04, 0x80, 0x00, 0xff, 0xff};
    const auto at = std::search(b.begin(), b.end(), dgram.begin(), dgram.end());
    REQUIRE(at != b.end());
    CHECK(at == b.begin() + 6);  // 0x0f's entry (2 + 4 bytes) comes first
    CHECK(contains(decode_error(raw(param_id::max_datagram_frame_size, Bytes{0x01, 0x02})).what,
                   "max_datagram_frame_size: value of length 2 is not exactly one varint"));
}
