// ndm_probe: hand-crafted ndm datagrams for the tools' hostile-peer tests
// (tests/cli/ndm_hostile_peer_test.sh), built with the library's own wire
// codec so that they are exactly what a hostile peer could send.
//
//   ndm_probe hello --to ADDR:PORT --params TEXT [--bogus-ack] [--keepalive] [--close-with TEXT]
//       A client hello carrying TEXT as its application params (the tools'
//       test parameters), then an Initial acknowledging the server's packet 0,
//       which completes the handshake. --bogus-ack adds, in that same Initial,
//       a second ACK frame for a packet the server never sent: the server
//       becomes established and closes at once (issue 13's wedge). Prints
//       "close code=C reason=R" (R escaped) for the server's CONNECTION_CLOSE,
//       or "no close" when none arrives within 3 s (exit 1). --close-with TEXT:
//       when the server accepted the test, close it with TEXT as the reason,
//       byte for byte, and print "sent close". --keepalive: when the server
//       accepted the test, send a PING every 300 ms (for at most 60 s) until
//       the server closes.
//   ndm_probe close-server --bind ADDR:PORT --reason TEXT
//       Waits for one client hello and answers it with a CONNECTION_CLOSE
//       carrying TEXT as its reason, byte for byte. Exits 0 once answered.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/printable.hpp"
#include "ndm/connection.hpp"
#include "transport/frame.hpp"
#include "transport/packet.hpp"
#include "transport/transport_params.hpp"

using namespace ndm;

namespace {

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr, "ndm_probe: %s\n", msg);
    std::exit(2);
}

sockaddr_in parse_addr(const std::string& s) {
    const auto colon = s.rfind(':');
    if (colon == std::string::npos) usage("address must be ADDR:PORT");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(s.c_str() + colon + 1)));
    if (inet_pton(AF_INET, s.substr(0, colon).c_str(), &a.sin_addr) != 1) usage("bad IPv4 address");
    return a;
}

wire::ConnectionId random_cid() {
    std::random_device rd;
    wire::ConnectionId c;
    c.length = wire::kShortCidLength;
    for (std::size_t i = 0; i < c.length; ++i) c.bytes[i] = static_cast<std::uint8_t>(rd());
    return c;
}

// A sealed long-header packet with `frames`, padded to `pad_to` bytes when non-zero.
std::vector<std::uint8_t> packet(const wire::PacketHeader& h, const std::vector<wire::Frame>& frames, std::size_t pad_to) {
    std::vector<std::uint8_t> out(kMaxDatagramSize);
    wire::Writer w{std::span(out).first((pad_to ? pad_to : out.size()) - wire::kIntegrityTagSize)};
    if (!wire::write_header(w, h)) usage("header does not fit");
    for (const auto& f : frames)
        if (!wire::encode_frame(w, f)) usage("frame does not fit");
    if (pad_to && w.remaining() > 0) wire::encode_frame(w, wire::PaddingFrame{w.remaining()});
    out.resize(w.position() + wire::kIntegrityTagSize);
    wire::seal(out, h);
    return out;
}

// Next datagram within timeout_ms, or empty.
std::vector<std::uint8_t> receive(int fd, int timeout_ms, sockaddr_in* from = nullptr) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return {};
    std::vector<std::uint8_t> buf(65536);
    socklen_t len = sizeof(sockaddr_in);
    const ssize_t n = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(from), from ? &len : nullptr);
    buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return buf;
}

struct Close {
    std::uint64_t error_code = 0;
    std::string reason;  // a copy: the frame points into the datagram
};

// The first CONNECTION_CLOSE in a datagram, if any.
bool find_close(const std::vector<std::uint8_t>& d, Close& out) {
    wire::ParsedPacket pkt;
    wire::Error err;
    if (!wire::parse_packet(d, 0, false, pkt, err)) return false;
    wire::Reader r(pkt.payload);
    while (!r.empty()) {
        wire::Frame f;
        if (!wire::decode_frame(r, f, err)) return false;
        if (auto* c = std::get_if<wire::ConnectionCloseFrame>(&f)) {
            out = {c->error_code, std::string(c->reason)};
            return true;
        }
    }
    return false;
}

int hello(const sockaddr_in& to, const std::string& params, bool bogus_ack, bool keepalive,
          const std::optional<std::string>& close_with) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) usage("socket/connect failed");
    wire::TransportParams tp;
    tp.initial_max_data = 1u << 20;
    tp.initial_max_stream_data_bidi_local = tp.initial_max_stream_data_bidi_remote = 1u << 20;
    tp.initial_max_streams_bidi = 10;
    tp.application_params.assign(params.begin(), params.end());
    const wire::ConnectionId scid = random_cid();
    tp.initial_source_connection_id = scid;  // RFC 9000 §7.3: the SCID of our Initial
    std::vector<std::uint8_t> hello_bytes(1100);
    wire::Writer pw(hello_bytes);
    if (!wire::encode_transport_params(pw, tp, wire::Role::client)) usage("params do not fit");
    hello_bytes.resize(pw.position());

    wire::PacketHeader h;
    h.type = wire::PacketType::initial;
    h.version = kProtocolVersion;
    h.dcid = random_cid();
    h.scid = scid;
    h.packet_number = 0;
    h.pn_length = 2;
    const auto first = packet(h, {wire::CryptoFrame{0, hello_bytes}}, kMinDatagramSize);
    if (send(fd, first.data(), first.size(), 0) < 0) usage("send failed");
    // The server's answer: an Initial with its ACK, then its hello.
    const auto reply = receive(fd, 3000);
    Close close;
    if (reply.empty()) {
        std::puts("no answer");
        return 1;
    }
    if (!find_close(reply, close)) {
        // The server's hello is its Handshake packet 0 (its Initial carries
        // only an ACK): acknowledged in our Handshake packet 0 (RFC 9000 §12.3).
        wire::ParsedPacket answer;
        wire::Error perr;
        if (!wire::parse_packet(reply, 0, false, answer, perr)) usage("cannot parse the server's answer");
        h.type = wire::PacketType::handshake;
        h.dcid = answer.header.scid;  // Handshake packets carry the server's own ID
        h.packet_number = 0;
        wire::AckFrame ack0;
        ack0.ranges = {{0, 0}};
        std::vector<wire::Frame> frames{ack0};
        if (bogus_ack) {
            wire::AckFrame never;
            never.ranges = {{1000, 1000}};
            frames.push_back(never);
        }
        const auto second = packet(h, frames, kMinDatagramSize);
        if (send(fd, second.data(), second.size(), 0) < 0) usage("send failed");
        bool found = false;
        for (int i = 0; i < 10 && !found; ++i) {
            const auto d = receive(fd, 300);
            found = !d.empty() && find_close(d, close);
        }
        // 1-RTT packets to the server, from packet number 2 on.
        wire::ParsedPacket server;
        wire::Error err;
        if (!wire::parse_packet(reply, 0, false, server, err)) usage("cannot parse the server's hello");
        wire::PacketHeader s;
        s.type = wire::PacketType::one_rtt;
        s.dcid = server.header.scid;
        s.packet_number = 2;
        s.pn_length = 2;
        // Keep the connection alive with PINGs until the server closes it.
        for (int i = 0; i < 200 && !found && keepalive; ++i, ++s.packet_number) {
            const auto ping = packet(s, {wire::PingFrame{}}, 0);
            if (send(fd, ping.data(), ping.size(), 0) < 0) usage("send failed");
            for (auto d = receive(fd, 300); !d.empty() && !found; d = receive(fd, 0)) found = find_close(d, close);
        }
        if (!found && close_with) {
            // The test runs: end it from this side, the reason byte for byte.
            wire::ConnectionCloseFrame c;
            c.application = true;
            c.reason = *close_with;
            const auto bye = packet(s, {c}, 0);
            if (send(fd, bye.data(), bye.size(), 0) < 0) usage("send failed");
            std::puts("sent close");
            return 0;
        }
        if (!found) {
            std::puts("no close");
            return 1;
        }
    }
    std::printf("close code=%llu reason=%s\n", static_cast<unsigned long long>(close.error_code),
                tools::printable(close.reason).c_str());
    ::close(fd);
    return 0;
}

int close_server(const sockaddr_in& bind_to, const std::string& reason) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&bind_to), sizeof bind_to) != 0) usage("socket/bind failed");
    std::puts("listening");
    std::fflush(stdout);
    for (;;) {
        sockaddr_in from{};
        const auto d = receive(fd, 30000, &from);
        if (d.empty()) usage("no client within 30 s");
        wire::ParsedPacket pkt;
        wire::Error err;
        if (!wire::parse_packet(d, 0, false, pkt, err) || pkt.header.type != wire::PacketType::initial) continue;
        wire::PacketHeader h;
        h.type = wire::PacketType::handshake;
        h.version = kProtocolVersion;
        h.dcid = pkt.header.scid;
        h.scid = random_cid();
        h.packet_number = 0;
        h.pn_length = 2;
        wire::ConnectionCloseFrame c;
        c.error_code = static_cast<std::uint64_t>(CloseCode::protocol_violation);
        c.reason = reason;
        const auto out = packet(h, {c}, 0);
        if (sendto(fd, out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&from), sizeof from) < 0)
            usage("send failed");
        ::close(fd);
        return 0;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage("usage: ndm_probe hello|close-server ...");
    const std::string mode = argv[1];
    std::string addr, params, reason;
    std::optional<std::string> close_with;
    bool bogus_ack = false, keepalive = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage("missing value");
            return argv[++i];
        };
        if (a == "--to" || a == "--bind") addr = value();
        else if (a == "--params") params = value();
        else if (a == "--reason") reason = value();
        else if (a == "--bogus-ack") bogus_ack = true;
        else if (a == "--keepalive") keepalive = true;
        else if (a == "--close-with") close_with = value();
        else usage(("unknown argument " + a).c_str());
    }
    if (addr.empty()) usage("--to/--bind is required");
    if (mode == "hello") return hello(parse_addr(addr), params, bogus_ack, keepalive, close_with);
    if (mode == "close-server") return close_server(parse_addr(addr), reason);
    usage("unknown mode");
}
