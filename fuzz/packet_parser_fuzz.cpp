// libFuzzer target for the wire codec: parse_packet, then every frame of the
// payload, then transport parameters. Must never crash; anything that decodes
// must re-encode (to exactly encoded_size bytes) and decode to an equal value.
//
// Random mutations almost always break the CRC32C tag, which would stop the
// fuzzer at the integrity check; so each input is parsed twice: as given (the
// tag check) and with its last 4 bytes replaced by a valid tag (the header and
// frame parsers behind it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "../tests/frame_equal.hpp"
#include "transport/frame.hpp"
#include "transport/packet.hpp"
#include "transport/transport_params.hpp"

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

void check_packet(std::span<const std::uint8_t> datagram, std::uint64_t largest, bool has) {
    ParsedPacket p;
    Error err;
    if (!parse_packet(datagram, largest, has, p, err)) {
        FUZZ_CHECK(!err.what.empty());
        return;
    }
    FUZZ_CHECK(p.payload.size() + kIntegrityTagSize <= datagram.size());
    if (p.header.type == PacketType::version_negotiation) {
        FUZZ_CHECK(!p.supported_versions.empty());
        return;
    }
    Reader r(p.payload);
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
    // Vary the packet-number expansion with the input, deterministically.
    const std::uint64_t largest = size > 0 ? (std::uint64_t{data[0]} << 24) * (size + 1) : 0;
    const bool has = size % 2 == 0;

    check_packet(in, largest, has);
    if (size >= kIntegrityTagSize) {
        std::vector<std::uint8_t> sealed(in.begin(), in.end());
        seal(sealed);
        check_packet(sealed, largest, has);
    }
    check_transport_params(in);
    return 0;
}
