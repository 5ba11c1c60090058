// PeerConnectionIds on its own: the IDs a peer issues with NEW_CONNECTION_ID
// (RFC 9000 §5.1, §19.15), the limit we advertised, Retire Prior To and the
// RETIRE_CONNECTION_ID frames that answer it, and the reset tokens kept.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "transport/peer_connection_ids.hpp"

using namespace ndm;
using namespace ndm::transport;
using FT = trace::Frame::Type;

namespace {

struct Issued {
    std::array<std::uint8_t, 8> cid;
    std::array<std::uint8_t, 16> token;
    wire::NewConnectionIdFrame frame(std::uint64_t seq, std::uint64_t retire_prior_to = 0) const {
        return {seq, retire_prior_to, cid, token};
    }
};
Issued issued(std::uint8_t n) {
    Issued i{};
    i.cid.fill(n);
    i.token.fill(static_cast<std::uint8_t>(0x80 + n));
    return i;
}

wire::ConnectionId cid_of(std::uint8_t n) {
    std::array<std::uint8_t, 8> b{};
    b.fill(n);
    return wire::ConnectionId::from(b);
}

// The RETIRE_CONNECTION_ID sequence numbers written into one packet.
std::vector<std::uint64_t> retirements(PeerConnectionIds& ids) {
    std::vector<std::uint8_t> buf(1200);
    wire::Writer w(buf);
    SentFrames sent;
    std::vector<trace::Frame> frames;
    FrameSink sink(w, sent, &frames);
    ids.write_frames(sink);
    std::vector<std::uint64_t> out;
    for (const auto& f : frames)
        if (f.type == FT::retire_connection_id) out.push_back(f.value);
    return out;
}

}  // namespace

TEST_CASE("peer connection ids: new ones are kept up to the limit we advertised, one more is CONNECTION_ID_LIMIT_ERROR") {
    PeerConnectionIds ids(2);
    ids.set_initial(cid_of(0));
    CHECK_FALSE(ids.on_new_connection_id(issued(1).frame(1)));
    CHECK(ids.active() == 2);
    CHECK(ids.current() == cid_of(0));  // no reason to switch
    auto err = ids.on_new_connection_id(issued(2).frame(2));
    REQUIRE(err);
    CHECK(err->code == CloseCode::connection_id_limit_error);
}

TEST_CASE("peer connection ids: Retire Prior To retires the ID in use, and RETIRE_CONNECTION_ID goes out until acknowledged") {
    PeerConnectionIds ids(2);
    ids.set_initial(cid_of(0));
    CHECK_FALSE(ids.on_new_connection_id(issued(1).frame(1)));
    // Sequence 2 retires 0 and 1: within the limit, since retired IDs do not count.
    CHECK_FALSE(ids.on_new_connection_id(issued(2).frame(2, 2)));
    CHECK(ids.current() == cid_of(2));
    CHECK(ids.active() == 1);
    CHECK(ids.has_pending());
    CHECK(retirements(ids) == std::vector<std::uint64_t>{0, 1});
    CHECK_FALSE(ids.has_pending());
    ids.on_lost(1);
    ids.on_acked(0);
    CHECK(retirements(ids) == std::vector<std::uint64_t>{1});  // only the lost one again
    ids.on_acked(1);
    ids.on_lost(1);  // acknowledged already: nothing to resend
    CHECK_FALSE(ids.has_pending());
    // Issued late, below Retire Prior To: retired on arrival (RFC 9000 §19.15).
    CHECK_FALSE(ids.on_new_connection_id(issued(9).frame(1)));
    CHECK(retirements(ids) == std::vector<std::uint64_t>{1});
    CHECK(ids.current() == cid_of(2));
    // The client follows the server's first packets only while sequence 0 lives.
    ids.set_initial(cid_of(7));
    CHECK(ids.current() == cid_of(2));
}

TEST_CASE("peer connection ids: conflicting repeats and IDs from a zero-length-ID peer are PROTOCOL_VIOLATION") {
    PeerConnectionIds ids(4);
    ids.set_initial(cid_of(0));
    CHECK_FALSE(ids.on_new_connection_id(issued(1).frame(1)));
    CHECK_FALSE(ids.on_new_connection_id(issued(1).frame(1)));  // an exact repeat (a retransmission)
    CHECK(ids.active() == 2);
    auto other_cid = ids.on_new_connection_id(issued(5).frame(1));
    REQUIRE(other_cid);
    CHECK(other_cid->code == CloseCode::protocol_violation);
    auto same_cid = ids.on_new_connection_id(issued(1).frame(2));
    REQUIRE(same_cid);
    CHECK(same_cid->code == CloseCode::protocol_violation);

    PeerConnectionIds empty(4);
    empty.set_initial(wire::ConnectionId{});
    auto zero = empty.on_new_connection_id(issued(1).frame(1));
    REQUIRE(zero);
    CHECK(zero->code == CloseCode::protocol_violation);
}

TEST_CASE("peer connection ids: outstanding retirements are bounded") {
    PeerConnectionIds ids(2);
    ids.set_initial(cid_of(0));
    // Each frame retires everything before it; nothing is ever acknowledged.
    std::optional<ConnectionIdError> err;
    for (std::uint8_t seq = 1; seq < 10 && !err; ++seq) err = ids.on_new_connection_id(issued(seq).frame(seq, seq));
    REQUIRE(err);
    CHECK(err->code == CloseCode::connection_id_limit_error);
}

// A stateless reset's shape (RFC 9000 §10.3): short-header form, unpredictable bytes, the token last.
std::vector<std::uint8_t> reset_datagram(std::span<const std::uint8_t> token, std::size_t size = 40) {
    std::vector<std::uint8_t> d(size, 0x5c);
    d[0] = 0x4b;
    std::copy(token.begin(), token.end(), d.end() - 16);
    return d;
}

TEST_CASE("peer connection ids: a datagram ending in a reset token is a stateless reset while its ID is active") {
    PeerConnectionIds ids(2);
    ids.set_initial(cid_of(0));
    wire::ResetToken t0{};
    t0.fill(0x42);
    ids.set_initial_reset_token(t0);
    CHECK(ids.is_stateless_reset(reset_datagram(t0)));
    CHECK_FALSE(ids.is_stateless_reset(reset_datagram(t0, 20)));  // under 21 bytes it cannot be one
    auto long_header = reset_datagram(t0);
    long_header[0] |= 0x80;
    CHECK_FALSE(ids.is_stateless_reset(long_header));
    const Issued one = issued(1);
    CHECK_FALSE(ids.is_stateless_reset(reset_datagram(one.token)));
    CHECK_FALSE(ids.on_new_connection_id(one.frame(1, 1)));
    CHECK(ids.is_stateless_reset(reset_datagram(one.token)));
    CHECK_FALSE(ids.is_stateless_reset(reset_datagram(t0)));  // sequence 0 is retired
}
