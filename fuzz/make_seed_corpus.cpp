// Writes a few valid packets (one per file) into the directory given as
// argv[1], as the starting corpus for packet_parser_fuzz. A build tool, not
// library code.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ndm/connection.hpp"
#include "transport/frame.hpp"
#include "transport/packet.hpp"
#include "transport/transport_params.hpp"

using namespace ndm::wire;
using Bytes = std::vector<std::uint8_t>;

namespace {

const std::uint8_t kCidA[] = {1, 2, 3, 4, 5, 6, 7, 8};
const std::uint8_t kCidB[] = {9, 10, 11, 12, 13};

Bytes packet(const PacketHeader& h, const std::vector<Frame>& frames) {
    Bytes buf(2048);
    Writer w(buf);
    if (!write_header(w, h)) return {};
    for (const Frame& f : frames)
        if (!encode_frame(w, f)) return {};
    if (!w.u32(0)) return {};
    buf.resize(w.position());
    seal(buf);
    return buf;
}

PacketHeader header(PacketType t, std::uint64_t pn, std::size_t pn_len) {
    PacketHeader h;
    h.type = t;
    h.version = ndm::kProtocolVersion;
    h.dcid = ConnectionId::from(kCidA);
    if (t != PacketType::one_rtt) h.scid = ConnectionId::from(kCidB);
    h.packet_number = pn;
    h.pn_length = pn_len;
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const Bytes hello(300, 'c');
    const Bytes data{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
    AckFrame ack;
    ack.ranges = {{90, 100}, {80, 83}, {10, 70}};
    ack.ack_delay = std::chrono::microseconds(1234);
    AckFrame ack1;
    ack1.ranges = {{0, 2}};

    TransportParams tp;
    tp.initial_max_data = 1 << 20;
    tp.application_params = {'n', 'd', 'm'};
    Bytes tp_bytes(256);
    Writer tw(tp_bytes);
    encode_transport_params(tw, tp, Role::client);
    tp_bytes.resize(tw.position());

    std::vector<Bytes> seeds;
    seeds.push_back(packet(header(PacketType::initial, 0, 1), {CryptoFrame{0, hello}, PaddingFrame{200}}));
    seeds.push_back(packet(header(PacketType::handshake, 3, 2), {ack1, CryptoFrame{300, data}, PingFrame{}}));
    seeds.push_back(packet(header(PacketType::one_rtt, 0x1234, 2),
                           {ack, StreamFrame{4, 1000, data, true}, StreamFrame{0, 0, data, false},
                            MaxDataFrame{1 << 24}, MaxStreamDataFrame{4, 1 << 20}, MaxStreamsFrame{100},
                            DataBlockedFrame{77}, StreamDataBlockedFrame{8, 99}, HandshakeDoneFrame{}}));
    seeds.push_back(packet(header(PacketType::one_rtt, 0xabcdef01, 4),
                           {ConnectionCloseFrame{0x0a, 0x08, "protocol violation", false}}));
    seeds.push_back(packet(header(PacketType::one_rtt, 7, 1), {ConnectionCloseFrame{3, 0, "bye", true}}));
    PacketHeader unknown = header(PacketType::initial, 1, 1);
    unknown.version = 0x0a1a2a3a;
    seeds.push_back(packet(unknown, {PingFrame{}}));
    {
        Bytes vn(128);
        const std::uint32_t versions[] = {ndm::kProtocolVersion, 0x0a0a0a0a};
        vn.resize(write_version_negotiation(vn, ConnectionId::from(kCidB), ConnectionId::from(kCidA), versions));
        seeds.push_back(vn);
    }
    seeds.push_back(tp_bytes);

    const std::string dir = argv[1];
    int n = 0;
    for (const Bytes& s : seeds) {
        if (s.empty()) {
            std::fprintf(stderr, "make_seed_corpus: failed to build seed %d\n", n);
            return 1;
        }
        std::ofstream out(dir + "/seed-" + std::to_string(n++), std::ios::binary);
        out.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size()));
        if (!out) {
            std::fprintf(stderr, "make_seed_corpus: cannot write to %s\n", dir.c_str());
            return 1;
        }
    }
    std::printf("make_seed_corpus: wrote %d seeds to %s\n", n, dir.c_str());
    return 0;
}
