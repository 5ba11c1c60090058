// libFuzzer target for the wire codec, on each input: the QUIC v1 headers of
// its coalesced packets, the input as a decrypted payload of frames, as
// transport parameters, and as a truncated packet number. Must never crash;
// anything that decodes must re-encode (to exactly encoded_size bytes) and
// decode to an equal value. (What lies behind packet protection is reached
// by treating the input as a payload: a forged packet never decrypts.)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "../tests/support/frame_equal.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"
#include "wire/quic_header.hpp"
#include "wire/transport_params.hpp"

using namespace ndm::wire;

namespace {

#define FUZZ_CHECK(cond)                 \
    do {                                 \
        if (!(cond)) __builtin_trap();   \
    } while (0)

using ndm::test::frames_equal;

void check_frame_round_trip(const Frame& f) {
    if (const auto* a = std::get_if<AckFrame>(&f)) FUZZ_CHECK(!a->ranges.empty() && a->ranges.size() <= kMaxAckRanges);
    if (const auto* c = std::get_if<ConnectionCloseFrame>(&f)) FUZZ_CHECK(c->reason.size() <= kMaxReasonLength);
    const std::size_t size = encoded_size(f);
    std::vector<std::uint8_t> buf(size);
    Writer w(buf);
    FUZZ_CHECK(encode_frame(w, f));
    FUZZ_CHECK(w.position() == size);
    Reader r(buf);
    Frame again;
    Error err;
    FUZZ_CHECK(decode_frame(r, again, err));
    FUZZ_CHECK(r.empty());
    FUZZ_CHECK(frames_equal(f, again));
}

// The QUIC v1 headers of a datagram's coalesced packets (RFC 9000 §12.2,
// §17): every view lies inside the datagram, in order, without overlap.
void check_datagram(std::span<const std::uint8_t> datagram) {
    quic::DatagramPackets packets(datagram, kShortCidLength);
    std::size_t end = 0;
    for (quic::PacketView v; packets.next(v);) {
        FUZZ_CHECK(v.offset >= end);
        FUZZ_CHECK(v.offset + v.packet.size() <= datagram.size());
        FUZZ_CHECK(!v.packet.empty());
        FUZZ_CHECK(v.pn_offset < v.packet.size() || !v.has_packet_number());
        FUZZ_CHECK(v.dcid.data() >= datagram.data() && v.dcid.data() + v.dcid.size() <= datagram.data() + datagram.size());
        end = v.offset + v.packet.size();
    }
}

// A decrypted payload: every frame that decodes re-encodes to itself.
void check_frames(std::span<const std::uint8_t> payload) {
    Reader r(payload);
    Error err;
    while (!r.empty()) {
        Frame f;
        const std::size_t before = r.position();
        if (!decode_frame(r, f, err)) {
            FUZZ_CHECK(!err.what.empty());
            break;
        }
        FUZZ_CHECK(r.position() > before);
        check_frame_round_trip(f);
    }
}

// RFC 9000 §A.3: the expanded number is within half a window of the expected one.
void check_packet_number(std::uint64_t largest, std::uint64_t truncated, std::size_t pn_length) {
    pn_length = 1 + pn_length % 4;
    const std::uint64_t pn = decode_packet_number(largest, true, truncated, pn_length);
    const std::uint64_t win = std::uint64_t{1} << (8 * pn_length);
    FUZZ_CHECK((pn & (win - 1)) == (truncated & (win - 1)));
    FUZZ_CHECK(pn < (std::uint64_t{1} << 62) + win);
}

void check_transport_params(std::span<const std::uint8_t> in) {
    TransportParams p;
    Error err;
    if (!decode_transport_params(in, Role::server, p, err)) return;
    std::vector<std::uint8_t> buf(4096);
    Writer w(buf);
    FUZZ_CHECK(encode_transport_params(w, p, Role::server));
    TransportParams again;
    FUZZ_CHECK(decode_transport_params(w.written(), Role::server, again, err));
    FUZZ_CHECK(again == p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> in(data, size);
    check_datagram(in);
    check_frames(in);
    check_transport_params(in);
    if (size >= 9) {
        std::uint64_t a = 0, b = 0;
        for (std::size_t i = 0; i < 4; ++i) a = a << 8 | data[i];
        for (std::size_t i = 4; i < 8; ++i) b = b << 8 | data[i];
        check_packet_number(a % (std::uint64_t{1} << 62), b, data[8]);
    }
    return 0;
}
