// ndm_probe: hostile peers for the tools' tests
// (tests/cli/ndm_hostile_peer_test.sh). The handshake is the library's own
// client (TLS included, trusting any certificate); what a hostile peer sends
// after it is hand-made with the library's wire codec.
//
//   ndm_probe hello --to ADDR:PORT --params TEXT [--bogus-ack] [--keepalive] [--close-with TEXT]
//       A handshake carrying TEXT as its application params (the tools' test
//       parameters). Prints "close code=C reason=R" (R escaped) for the
//       server's CONNECTION_CLOSE, or "no close" when none arrives within
//       3 s (exit 1); a server that refuses the test closes within 1 s of the
//       handshake. --bogus-ack: the client's Finished goes in a Handshake
//       packet that also acknowledges a packet the server never sent: the
//       server completes its handshake and closes at once (an ACK of a packet never
//       sent is a PROTOCOL_VIOLATION, RFC 9000 §13.1). --close-with TEXT: when the server accepted
//       the test, close it with TEXT as the reason, byte for byte, and print
//       "sent close". --keepalive: when the server accepted the test, send a
//       PING every 300 ms (for at most 60 s) until the server closes.
//   ndm_probe close-server --bind ADDR:PORT --reason TEXT
//       Waits for one client Initial and answers it with a CONNECTION_CLOSE
//       carrying TEXT as its reason, byte for byte. Exits 0 once answered.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "crypto/packet_protection.hpp"
#include "ipv4_endpoint.hpp"
#include "ndm/connection.hpp"
#include "quic_test_util.hpp"
#include "tools/cli/printable.hpp"
#include "wire/frame.hpp"
#include "wire/packet_codec.hpp"

using namespace ndm;

namespace {

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr, "ndm_probe: %s\n", msg);
    std::exit(2);
}

sockaddr_in parse_addr(const std::string& s) {
    std::string error;
    const auto a = test::parse_ipv4_endpoint(s, error);
    if (!a) usage(error.c_str());
    return *a;
}

wire::ConnectionId random_cid() {
    std::random_device rd;
    wire::ConnectionId c;
    c.length = wire::kShortCidLength;
    for (std::size_t i = 0; i < c.length; ++i) c.bytes[i] = static_cast<std::uint8_t>(rd());
    return c;
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

// The first CONNECTION_CLOSE of a datagram to `to`, opened with its keys.
bool find_close(Connection& to, const std::vector<std::uint8_t>& d, Close& out) {
    const auto opened = test::open_datagram(to, d, steady_now());
    for (const auto& p : opened.packets)
        for (const auto& f : p.frames)
            if (const auto* c = std::get_if<wire::ConnectionCloseFrame>(&f)) {
                out = {c->error_code, std::string(c->reason)};
                return true;
            }
    return false;
}

using Rewrite = std::function<void(std::vector<std::uint8_t>&)>;

// Drives `conn` over the connected socket until pred() holds or timeout_ms
// passes, passing each datagram it sends through `rewrite`; false on timeout.
bool drive(Connection& conn, int fd, const std::function<bool()>& pred, int timeout_ms, const Rewrite& rewrite = {}) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> buf(kMaxDatagramSize);
    for (;;) {
        const Instant now = steady_now();
        if (conn.next_timeout() <= now) conn.on_timeout(now);
        while (const std::size_t n = conn.poll_datagram(buf, now)) {
            std::vector<std::uint8_t> d(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
            if (rewrite) rewrite(d);
            if (send(fd, d.data(), d.size(), 0) < 0) usage("send failed");
        }
        if (pred()) return true;
        const auto waited = std::chrono::steady_clock::now() - t0;
        if (waited > std::chrono::milliseconds(timeout_ms)) return false;
        for (auto d = receive(fd, 10); !d.empty(); d = receive(fd, 0)) conn.on_datagram(d, steady_now());
    }
}

// --bogus-ack: the packet that completes the server's handshake (the
// client's Finished) also acknowledges a packet the server never sent.
// The client's own packets are opened with its write keys (the keys of
// a direction are one, whoever holds them) and that one sealed again.
void add_ack_of_unsent(Connection& conn, std::vector<std::uint8_t>& d) {
    auto& c = Connection::Impl::of(conn);
    wire::quic::DatagramPackets packets(d, wire::kShortCidLength);
    for (wire::quic::PacketView v; packets.next(v);) {
        if (v.kind != wire::quic::PacketKind::handshake) continue;
        std::vector<std::uint8_t> copy(d.begin() + static_cast<std::ptrdiff_t>(v.offset),
                                       d.begin() + static_cast<std::ptrdiff_t>(v.offset + v.packet.size()));
        wire::quic::PacketView own;
        wire::quic::OpenedPacket o;
        if (wire::quic::parse_packet_header(copy, wire::kShortCidLength, own) != wire::quic::HeaderError::none ||
            wire::quic::open_packet(copy, own, c.write_keys_of(transport::PacketSpace::handshake), std::nullopt, o) !=
                wire::quic::OpenError::none)
            return;
        std::vector<wire::Frame> frames;
        wire::Reader r(o.payload);
        wire::Error err;
        for (wire::Frame f; !r.empty() && wire::decode_frame(r, f, err);)
            if (!std::holds_alternative<wire::PaddingFrame>(f)) frames.push_back(f);
        if (!std::ranges::any_of(frames, [](const wire::Frame& f) { return std::holds_alternative<wire::CryptoFrame>(f); }))
            return;
        wire::AckFrame never;
        never.ranges = {{1000, 1000}};
        frames.push_back(never);
        auto forged = test::seal(conn, transport::PacketSpace::handshake, o.packet_number, test::encode(frames));
        // The rest of the datagram (a 1-RTT packet, if any) goes as it was.
        forged.insert(forged.end(), d.begin() + static_cast<std::ptrdiff_t>(v.offset + v.packet.size()), d.end());
        d.erase(d.begin() + static_cast<std::ptrdiff_t>(v.offset), d.end());
        d.insert(d.end(), forged.begin(), forged.end());
        return;
    }
}

int hello(const sockaddr_in& to, const std::string& params, bool bogus_ack, bool keepalive,
          const std::optional<std::string>& close_with) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) usage("socket/connect failed");
    // The handshake is the library's own (TLS included), carrying `params`
    // as the tools' test parameters; the hostile part comes after it.
    ConnectionConfig cfg;
    cfg.application_params.assign(params.begin(), params.end());
    cfg.tls.trust = tls::ClientCredentials::insecure();
    cfg.tls.wall_time = std::chrono::system_clock::now();
    cfg.random_bytes = [](std::span<std::uint8_t> out) {
        std::random_device rd;
        for (auto& b : out) b = static_cast<std::uint8_t>(rd());
    };
    auto conn = Connection::connect(cfg, steady_now());
    const auto report = [&](const CloseInfo& c) {
        std::printf("close code=%llu reason=%s\n", static_cast<unsigned long long>(c.code),
                    tools::printable(c.reason).c_str());
        ::close(fd);
        return 0;
    };
    const Rewrite wedge = [&conn](std::vector<std::uint8_t>& d) { add_ack_of_unsent(*conn, d); };
    if (!drive(*conn, fd, [&] { return conn->state() != ConnectionState::handshaking; }, 3000,
               bogus_ack ? wedge : Rewrite{})) {
        std::puts("no answer");
        return 1;
    }
    if (!conn->is_established()) return report(conn->close_info());
    // A server that refuses the test (or the wedge) closes right after the handshake.
    if (drive(*conn, fd, [&] { return !conn->is_established(); }, bogus_ack ? 3000 : 1000))
        return report(conn->close_info());
    if (bogus_ack) {
        std::puts("no close");
        return 1;
    }

    // From here on the probe speaks for the client in hand-made 1-RTT packets
    // (numbered well past the client's own) and reads the server's raw.
    std::uint64_t pn = conn->stats(steady_now()).packets_sent + 100;
    Close close;
    bool found = false;
    const auto send_frames = [&](const std::vector<wire::Frame>& frames) {
        const auto pkt = test::seal(*conn, transport::PacketSpace::application, pn++, test::encode(frames));
        if (send(fd, pkt.data(), pkt.size(), 0) < 0) usage("send failed");
    };
    const auto await_close = [&](int ms) {
        for (auto d = receive(fd, ms); !d.empty() && !found; d = receive(fd, 0)) found = find_close(*conn, d, close);
    };
    // Keep the connection alive with PINGs until the server closes it.
    for (int i = 0; i < 200 && !found && keepalive; ++i) {
        send_frames({wire::PingFrame{}});
        await_close(300);
    }
    if (!found && close_with) {
        // The test runs: end it from this side, the reason byte for byte.
        wire::ConnectionCloseFrame c;
        c.application = true;
        c.reason = *close_with;
        send_frames({c});
        std::puts("sent close");
        return 0;
    }
    if (!found) {
        std::puts("no close");
        return 1;
    }
    return report({close.error_code, close.reason, true, false});
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
        wire::quic::PacketView v;
        if (wire::quic::parse_packet_header(d, wire::kShortCidLength, v) != wire::quic::HeaderError::none ||
            v.kind != wire::quic::PacketKind::initial)
            continue;
        // In an Initial packet, with the Initial keys of the client's DCID
        // (RFC 9001 §5.2): a client that has not seen the ServerHello has no
        // Handshake keys and drops Handshake packets.
        crypto::LevelKeys keys = crypto::initial_keys(v.dcid, true, *crypto::known_version(v.version));
        wire::quic::LongHeader h;
        h.version = v.version;  // RFC 9369 §4.1: the answer comes in the client's version
        h.dcid = wire::ConnectionId::from(v.scid);
        h.scid = random_cid();
        h.packet_number = 0;
        wire::ConnectionCloseFrame c;
        c.error_code = static_cast<std::uint64_t>(CloseCode::protocol_violation);
        c.reason = reason;
        std::vector<std::uint8_t> out(kMinDatagramSize);
        wire::quic::PacketBuilder b(out, 0, h);
        wire::Writer w(b.payload_space());
        if (!b.ok() || !wire::encode_frame(w, c)) usage("close does not fit");
        out.resize(b.finish(w.position(), keys.write));
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
