// Writes a few valid payloads and headers (one per file) into the directory given as
// argv[1], as the starting corpus for packet_parser_fuzz. A build tool, not
// library code.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ndm/connection.hpp"
#include "wire/frame.hpp"
#include "wire/packet.hpp"
#include "wire/quic_header.hpp"
#include "wire/transport_params.hpp"

using namespace ndm::wire;
using Bytes = std::vector<std::uint8_t>;

namespace {

const std::uint8_t kCidA[] = {1, 2, 3, 4, 5, 6, 7, 8};
const std::uint8_t kCidB[] = {9, 10, 11, 12, 13};

// Frames as a decrypted payload.
Bytes payload(const std::vector<Frame>& frames) {
    Bytes buf(2048);
    Writer w(buf);
    for (const Frame& f : frames)
        if (!encode_frame(w, f)) return {};
    buf.resize(w.position());
    return buf;
}

// A v1 long header with `payload_len` payload bytes (unprotected: the header
// parser's view), or a short header with the rest of the datagram.
Bytes header(bool long_header, std::size_t payload_len) {
    Bytes buf(2048);
    Writer w(buf);
    quic::HeaderLayout layout;
    if (long_header) {
        quic::LongHeader h;
        h.dcid = ConnectionId::from(kCidA);
        h.scid = ConnectionId::from(kCidB);
        h.packet_number = 3;
        if (!quic::write_long_header(w, h, layout)) return {};
    } else {
        quic::ShortHeader h;
        h.dcid = ConnectionId::from(kCidA);
        if (!quic::write_short_header(w, h, layout)) return {};
    }
    buf.resize(w.position() + payload_len + 16);
    if (long_header && !quic::finish_long_header(buf, layout)) return {};
    return buf;
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
    tp.min_ack_delay_us = 1000;
    tp.max_datagram_frame_size = 65535;  // RFC 9221 §3
    Bytes tp_bytes(256);
    Writer tw(tp_bytes);
    encode_transport_params(tw, tp, Role::client);
    tp_bytes.resize(tw.position());

    std::vector<Bytes> seeds;
    seeds.push_back(payload({CryptoFrame{0, hello}, PaddingFrame{200}}));
    seeds.push_back(payload({ack1, CryptoFrame{300, data}, PingFrame{}}));
    seeds.push_back(payload({ack, StreamFrame{4, 1000, data, true}, StreamFrame{0, 0, data, false},
                             MaxDataFrame{1 << 24}, MaxStreamDataFrame{4, 1 << 20}, MaxStreamsFrame{100},
                             DataBlockedFrame{77}, StreamDataBlockedFrame{8, 99}, HandshakeDoneFrame{}}));
    seeds.push_back(payload({AckFrequencyFrame{1, 8, 25000, 3}, ImmediateAckFrame{}, PingFrame{}}));
    seeds.push_back(payload({ConnectionCloseFrame{0x0a, 0x08, "protocol violation", false}}));
    seeds.push_back(payload({ConnectionCloseFrame{3, 0, "bye", true}}));
    {
        Bytes coalesced = header(true, 40);
        const Bytes one_rtt = header(false, 30);
        coalesced.insert(coalesced.end(), one_rtt.begin(), one_rtt.end());
        seeds.push_back(coalesced);
    }
    {
        Bytes vn(128);
        const std::uint32_t versions[] = {ndm::kProtocolVersion, 0x0a0a0a0a};
        vn.resize(quic::write_version_negotiation(vn, kCidB, kCidA, versions, 0x15));
        seeds.push_back(vn);
    }
    seeds.push_back(tp_bytes);
    // Last, so that the earlier seeds keep their names.
    seeds.push_back(payload({DatagramFrame{data, true}, DatagramFrame{{}, true}, PingFrame{}}));  // RFC 9221 §4

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
