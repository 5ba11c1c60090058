// Transport parameters (RFC 9000 §18): round trips, limits, duplicates,
// unknown ids and malformed input.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "transport/transport_params.hpp"

using namespace ndm::wire;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes encode(const TransportParams& p) {
    Bytes buf(2048);
    Writer w(buf);
    REQUIRE(encode_transport_params(w, p));
    buf.resize(w.position());
    return buf;
}

TransportParams decode_ok(const Bytes& b) {
    TransportParams p;
    Error err;
    const bool ok = decode_transport_params(b, p, err);
    INFO(err.what);
    REQUIRE(ok);
    return p;
}

Error decode_error(const Bytes& b) {
    TransportParams p;
    p.initial_max_data = 777;
    Error err{};
    REQUIRE_FALSE(decode_transport_params(b, p, err));
    CHECK(p.initial_max_data == 777);  // untouched on failure
    CHECK_FALSE(err.what.empty());
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

Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("transport_params: defaults and custom values round-trip") {
    CHECK(decode_ok(encode(TransportParams{})) == TransportParams{});
    TransportParams p;
    p.max_idle_timeout_ms = 0;
    p.max_datagram_size = 65507;
    p.initial_max_data = 32u << 20;
    p.initial_max_stream_data = (1ull << 62) - 1;
    p.initial_max_streams = 1ull << 60;
    p.max_ack_delay_ms = (1u << 14) - 1;
    p.application_params = Bytes(kMaxApplicationParams, 0xab);
    CHECK(decode_ok(encode(p)) == p);
    p.max_datagram_size = 1200;
    p.application_params = {1, 2, 3};
    CHECK(decode_ok(encode(p)) == p);
}

TEST_CASE("transport_params: absent parameters take defaults, decode resets the output") {
    TransportParams p;
    p.initial_max_data = 5;
    p.application_params = {9};
    Error err;
    REQUIRE(decode_transport_params({}, p, err));
    CHECK(p == TransportParams{});
    CHECK(decode_ok(entry(param_id::initial_max_streams, 7)).initial_max_streams == 7);
}

TEST_CASE("transport_params: unknown ids are skipped") {
    const Bytes b = cat({entry(0x2a, 5), Bytes{0x40, 0x99, 0x03, 'x', 'y', 'z'}, Bytes{0x3f, 0x00},
                         entry(param_id::initial_max_data, 1000)});
    CHECK(decode_ok(b).initial_max_data == 1000);
}

TEST_CASE("transport_params: duplicates are rejected") {
    {
        const Error e = decode_error(cat({entry(param_id::max_ack_delay, 5), entry(param_id::max_ack_delay, 6)}));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "duplicate"));
    }
    CHECK(contains(decode_error(cat({entry(0x2a, 1), entry(param_id::initial_max_data, 1), entry(0x2a, 2)})).what,
                   "0x2a: duplicate"));
    const Bytes app{0x80, 0x00, 0x4e, 0x44, 0x01, 0x07};
    CHECK(decode_ok(app).application_params == Bytes{7});
    CHECK(decode_error(cat({app, app})).kind == ErrorKind::bad_value);
}

TEST_CASE("transport_params: out-of-range values are rejected") {
    struct Case {
        std::uint64_t id, value;
        const char* name;
    };
    const Case bad[] = {
        {param_id::max_datagram_size, 1199, "max_datagram_size"},
        {param_id::max_datagram_size, 65508, "max_datagram_size"},
        {param_id::max_datagram_size, 0, "max_datagram_size"},
        {param_id::max_ack_delay, 1u << 14, "max_ack_delay"},
        {param_id::initial_max_streams, (1ull << 60) + 1, "initial_max_streams"},
    };
    for (const auto& c : bad) {
        CAPTURE(c.value);
        const Error e = decode_error(entry(c.id, c.value));
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, c.name));
    }
    CHECK(decode_ok(entry(param_id::max_ack_delay, (1u << 14) - 1)).max_ack_delay_ms == (1u << 14) - 1);
    {
        Bytes b{0x80, 0x00, 0x4e, 0x44, 0x42, 0x01};  // application_params, 513 bytes
        b.resize(b.size() + 513, 1);
        const Error e = decode_error(b);
        CHECK(e.kind == ErrorKind::bad_value);
        CHECK(contains(e.what, "application_params: length 513 exceeds 512"));
    }
}

TEST_CASE("transport_params: encoder refuses values the peer would reject") {
    std::array<std::uint8_t, 1024> buf{};
    auto refuses = [&](const TransportParams& p) {
        Writer w(buf);
        return !encode_transport_params(w, p) && w.position() == 0;
    };
    TransportParams p;
    p.max_datagram_size = 1000;
    CHECK(refuses(p));
    p = {};
    p.max_ack_delay_ms = 1u << 14;
    CHECK(refuses(p));
    p = {};
    p.application_params.resize(kMaxApplicationParams + 1);
    CHECK(refuses(p));
    p = {};
    p.initial_max_data = 1ull << 62;
    CHECK(refuses(p));
    // And refuses, writing nothing, when out of room.
    const Bytes full = encode(TransportParams{});
    Writer w(std::span<std::uint8_t>(buf).first(full.size() - 1));
    CHECK_FALSE(encode_transport_params(w, TransportParams{}));
    CHECK(w.position() == 0);
}

TEST_CASE("transport_params: malformed entries") {
    {  // value length does not match its varint
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
    for (std::size_t n = full.size() - 103; n < full.size(); ++n)
        decode_error(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
}

TEST_CASE("transport_params: random input never crashes, accepted input re-encodes (property)") {
    std::mt19937_64 rng(0x7a4a'0001);
    static constexpr std::uint8_t kIds[] = {0x01, 0x03, 0x04, 0x05, 0x08, 0x0b, 0x2a};
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
        TransportParams p;
        Error err{};
        if (!decode_transport_params(b, p, err)) {
            REQUIRE_FALSE(err.what.empty());
            continue;
        }
        ++accepted;
        REQUIRE(decode_ok(encode(p)) == p);
    }
    CHECK(accepted > 300);
}
