// The UDP relay behind `ndm-emu relay`: datagrams arriving on the listen
// socket go through the emulator's `up` link to the server, replies through
// `down` back to the client that caused them. Several clients at once: each
// client address gets its own upstream socket (so the server sees distinct
// peers), while all clients share one emulated path per direction, as they
// would share a real bottleneck.
//
// I/O at the edges, the model in the middle: recvmmsg batches of up to kBatch
// datagrams in, UDP GSO super-datagrams out (sendmmsg where GSO is refused),
// steady_now() timestamps into the same pure EmulatedLink the simulator
// drives in virtual time. With no impairment configured every datagram still
// runs the (empty) pipeline. The sockets are ndm::UdpSocket (ndm/udp_socket.hpp,
// which says why the relay uses a socket and not the Endpoint): the batching
// and GSO logic is the library's, not a second copy here.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ndm/emu.hpp"
#include "ndm/time.hpp"
#include "ndm/udp_socket.hpp"

namespace ndm::tools {

// The endpoint's clock, steady_now(), under the name the relay's callers use.
inline Instant monotonic_now() { return steady_now(); }

// "HOST:PORT", "[v6]:PORT" or ":PORT" (any address); HOST a numeric address
// or a host name (getaddrinfo's first answer); PORT 1..65535, or 0 (any free
// port) when `passive` (binding). Throws std::invalid_argument("<what> ...")
// for a malformed address or port, ndm::ResolveError for a name that does
// not resolve.
sockaddr_storage resolve_udp(const std::string& what, const std::string& text, bool passive, socklen_t& len);

class EmuRelay {
public:
    static constexpr std::size_t kBatch = 64;
    // Clients idle this long (nothing sent or received) lose their upstream socket.
    static constexpr Duration kSessionIdle = std::chrono::seconds(60);

    // Binds `listen` ("127.0.0.1:0" picks a port) and resolves `to`. Throws
    // std::invalid_argument for a malformed address, std::runtime_error when
    // the socket cannot be bound; one line naming the problem either way.
    EmuRelay(const std::string& listen, const std::string& to, const emu::Profile& profile, std::uint64_t seed);
    ~EmuRelay();
    EmuRelay(const EmuRelay&) = delete;
    EmuRelay& operator=(const EmuRelay&) = delete;

    // Forwards until `stop` becomes true (checked at least every 100 ms and
    // after every signal). With stats_every > 0, prints statistics to
    // `stats_out` at that interval.
    void run(const std::atomic<bool>& stop, Duration stats_every = Duration{0}, std::ostream* stats_out = nullptr);

    [[nodiscard]] std::uint16_t listen_port() const;
    [[nodiscard]] const emu::EmulatedLink& up() const { return *up_; }
    [[nodiscard]] const emu::EmulatedLink& down() const { return *down_; }
    // Observe the emulator's decisions (tests, logs); called from run().
    void set_observer(emu::Direction d, std::function<void(const emu::PacketEvent&)> f);
    // Sends each datagram on its own (sendmmsg), never as a GSO super-datagram:
    // a capture on loopback then holds one QUIC datagram per frame, which
    // Wireshark's dissector needs (ndm-emu relay --no-gso).
    void disable_gso() { gso_ = false; }
    // Drops the datagrams numbered `numbers` (1 = the first) that arrive in
    // direction d, before the emulator sees them, as the QUIC Interop
    // Runner's "droplist" scenario (--drops_to_server=2,3,4,5,6,7) does:
    // ndm-emu relay --drop-up / --drop-down. Counted in listed_drops().
    void set_drop_list(emu::Direction d, std::vector<std::uint64_t> numbers);
    [[nodiscard]] std::uint64_t listed_drops(emu::Direction d) const { return listed_[index(d)].dropped; }

    // NAT rebinding (RFC 9000 §9.3: what a NAT does when its mapping times
    // out): from `start` after run() begins and every `every` after that,
    // each client's upstream socket is replaced by a new one, so the server
    // sees its datagrams come from a new source port. What the server still
    // sends to the old port is read and dropped for kRebindLinger (as by a
    // NAT whose mapping is gone: no ICMP error), then the old socket closes.
    static constexpr Duration kRebindLinger = std::chrono::seconds(10);
    void set_rebind(Duration every, Duration start);
    [[nodiscard]] std::uint64_t rebinds() const { return rebinds_; }
    [[nodiscard]] std::uint64_t rebind_dropped() const { return rebind_dropped_; }
    [[nodiscard]] std::size_t sessions_total() const { return sessions_.size(); }
    [[nodiscard]] std::uint64_t send_errors() const { return send_errors_; }
    // Sends that carried several datagrams as one GSO super-datagram.
    [[nodiscard]] std::uint64_t gso_sends() const { return gso_sends_; }
    // Datagrams the emulator delivered for a client whose session had
    // already expired (counted, not sent).
    [[nodiscard]] std::uint64_t orphaned() const { return orphaned_; }
    void print_stats(std::ostream& os) const;

private:
    struct Session {
        sockaddr_storage client{};
        socklen_t client_len = 0;
        std::unique_ptr<UdpSocket> socket;  // connected to `to`; null once expired
        Instant last_active{};
    };
    struct DropList {
        std::vector<std::uint64_t> numbers;  // sorted
        std::uint64_t arrived = 0, dropped = 0;
        bool drop_next();  // counts an arrival; true when its number is listed
    };
    static std::size_t index(emu::Direction d) { return d == emu::Direction::up ? 0 : 1; }
    struct Tagged;  // a link plus the session of each datagram in flight
    struct Batch;

    std::uint32_t session_for(const sockaddr_storage& from, socklen_t len, Instant now);
    void receive_listen(Instant now);
    void receive_upstream(std::uint32_t session, Instant now);
    void deliver_due(Instant now);
    void flush_batch();
    void expire_idle(Instant now);
    void rebind(Instant now);
    void drain_retired(std::size_t i);

    sockaddr_storage to_{};
    socklen_t to_len_ = 0;
    UdpSocket listen_;
    std::unique_ptr<emu::EmulatedLink> up_, down_;
    std::unique_ptr<Tagged> up_tags_, down_tags_;
    std::function<void(const emu::PacketEvent&)> user_observer_[2];
    std::vector<Session> sessions_;
    std::unordered_map<std::string, std::uint32_t> by_client_;
    std::unique_ptr<UdpReceiveBatch> rx_;
    std::unique_ptr<Batch> tx_;
    DropList listed_[2];
    std::uint64_t send_errors_ = 0;
    std::uint64_t orphaned_ = 0;
    std::uint64_t gso_sends_ = 0;
    bool sessions_changed_ = true;
    bool gso_ = true;  // cleared on the first GSO refusal
    struct Retired {
        std::unique_ptr<UdpSocket> socket;
        Instant until;
    };
    std::vector<Retired> retired_;  // upstream sockets a rebinding replaced
    Duration rebind_every_{0}, rebind_start_{0};
    std::uint64_t rebinds_ = 0, rebind_dropped_ = 0;
};

}  // namespace ndm::tools
