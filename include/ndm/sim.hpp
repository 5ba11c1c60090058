// ndm::sim: a deterministic virtual-time simulator (model: picoquic's sim_link
// plus virtual time). Two sans-I/O Connections talk over two one-way Links;
// a discrete-event loop jumps from one event to the next, so a minute of
// network time costs only the CPU its packets need, and the same inputs give
// bit-identical runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/link.hpp"
#include "ndm/stats.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::sim {

struct SimpleLinkConfig {
    Duration delay{};         // one-way propagation delay, applied after serialization
    double loss = 0;          // probability per datagram
    double duplicate = 0;     // probability that a second copy is sent
    double corrupt = 0;       // probability that one random bit is flipped
    double reorder = 0;       // probability that a datagram is held back...
    Duration reorder_extra_delay{};  // ...by this much more, so later ones overtake it
    double rate_bps = 0;      // bottleneck rate in bit/s; 0 = unlimited
    std::size_t queue_packets = 1000;  // droptail bound (waiting + serializing) when rate-limited
    // Blackhole windows: everything sent in [first, second) is dropped.
    std::vector<std::pair<Instant, Instant>> outages;
    std::uint64_t seed = 1;
};

// Why two impairment models (docs/architecture.md, "Two links, on purpose"):
// SimpleLink is the minimal deterministic test link of the simulator's own
// tests, of ndm-sim's --delay/--loss/--rate/--queue and of the recorded ACK
// traces, whose digests pin its exact draws and arithmetic. ndm::emu's
// EmulatedLink is the one emulator model users get (profiles, traces, netem's
// order, ndm-compare, ndm-send --emu, ndm-emu). SimpleLink is not a preset of
// it: it drops before it duplicates, holds reordered datagrams back instead of
// sending them early, has time-windowed blackholes, and seeds its streams
// differently, so no EmulatedLink config reproduces its draws bit for bit.
//
// Deterministic impairment: the same config and seed give the same fate for
// every datagram. Each random decision draws from its own seeded stream, so
// enabling, say, duplication does not change which datagrams are lost.
// Pipeline per datagram (cf. netem_enqueue): outage → loss → duplicate; then
// for each copy: queue bound → corrupt → serialization (FIFO) → delay → reorder.
// Without reordering, datagrams leave in the order they were sent. Each
// datagram's ECN codepoint is carried unchanged: SimpleLink never marks.
class SimpleLink final : public Link {
public:
    explicit SimpleLink(SimpleLinkConfig config);
    ~SimpleLink() override;
    SimpleLink(const SimpleLink&) = delete;
    SimpleLink& operator=(const SimpleLink&) = delete;

    void send(const DatagramView& datagram, Instant now) override;
    [[nodiscard]] Instant next_delivery() const override;
    bool deliver(Instant now, Datagram& out) override;
    [[nodiscard]] LinkStats stats() const override { return stats_; }

    [[nodiscard]] const SimpleLinkConfig& config() const { return config_; }
    // Datagrams accepted but not yet delivered (including those in flight).
    [[nodiscard]] std::size_t queued() const;

private:
    struct State;
    SimpleLinkConfig config_;
    LinkStats stats_;
    std::unique_ptr<State> state_;
};

// A discrete-event loop over virtual time driving a client and a server
// Connection over two Links. Ties between events at the same instant are
// broken in a fixed order: delivery to the server, delivery to the client,
// client timer, server timer.
//
// TLS in a simulation (simulation_tls): the handshake is real, with sizes
// that never vary - X25519 and Ed25519 only, and one self-signed Ed25519
// certificate for "ndm-simulator" made once per process (its DER size is
// fixed), which the client pins - and certificates are checked at a fixed
// wall-clock time (2026-01-01), so runs stay identical in timing and sizes.
// connect() applies it to what the configs leave unset.
void simulation_tls(ConnectionConfig& client, ConnectionConfig& server);

class Simulator {
public:
    Simulator(std::unique_ptr<Link> client_to_server, std::unique_ptr<Link> server_to_client,
              Instant start = Instant{});
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    // Creates the client (Connection::connect) and queues its first datagram.
    // The server is created with Connection::accept on the first datagram
    // delivered to it; datagrams accept() rejects are dropped. Both configs
    // go through simulation_tls() first.
    Connection& connect(const ConnectionConfig& client, const ConnectionConfig& server);

    [[nodiscard]] Instant now() const { return now_; }
    // The instant of the next scheduled event, or kNever.
    [[nodiscard]] Instant next_event_time() const;
    // Drains both connections' pending datagrams into the links: call after the
    // application wrote to a stream (step() also does this first).
    void flush();
    // Advances to the next event and processes it; false when nothing is
    // scheduled. Throws std::logic_error if a connection keeps asking to be
    // woken in the past (a bug that would otherwise spin forever).
    bool step();

    // For a driver that knows what its application touched (run_shared_path
    // with many flows): step() without draining both connections first, and
    // a flush of only some. advance() returns the connection the event
    // reached (kClientSide or kServerSide), or 0: a link had nothing to
    // deliver after all, or nothing was scheduled (now() then stays). Whatever
    // the application wrote to a connection must be flushed before advance().
    static constexpr unsigned kClientSide = 1, kServerSide = 2;
    unsigned advance();
    void flush(unsigned sides);
    // Processes every event up to and including t, then sets now() to t.
    void run_until(Instant t);
    // Steps until done() holds (checked before each step) or the next event
    // lies beyond deadline; returns done().
    bool run_until(const std::function<bool()>& done, Instant deadline);

    // The application may change a connection through these (a write moves
    // its timer): they forget its remembered timer. Through a reference kept
    // from connect() or an earlier call, flush() (or step()) after changing it.
    [[nodiscard]] Connection* client() {
        timer_known_[0] = false;
        return client_.get();
    }
    [[nodiscard]] Connection* server() {
        timer_known_[1] = false;
        return server_.get();
    }
    [[nodiscard]] const Connection* client() const { return client_.get(); }
    [[nodiscard]] const Connection* server() const { return server_.get(); }
    [[nodiscard]] Link& client_to_server() { return *links_[0]; }
    [[nodiscard]] Link& server_to_client() { return *links_[1]; }
    [[nodiscard]] LinkStats client_to_server_stats() const { return links_[0]->stats(); }
    [[nodiscard]] LinkStats server_to_client_stats() const { return links_[1]->stats(); }
    // Events processed so far, and datagrams dropped because accept() refused them.
    [[nodiscard]] std::uint64_t steps() const { return steps_; }
    [[nodiscard]] std::uint64_t rejected_datagrams() const { return rejected_; }

private:
    enum class EventKind { to_server, to_client, client_timer, server_timer };
    struct Next {
        Instant at;
        EventKind kind;
    };
    [[nodiscard]] Next next_event() const;
    unsigned process(const Next& next);  // advance()'s work: the sides reached
    [[nodiscard]] Instant timer_of(int side) const;
    void drain(int side);
    void fire_timer(int side);

    std::unique_ptr<Link> links_[2];  // [0] client→server, [1] server→client
    std::unique_ptr<Connection> client_;
    std::unique_ptr<Connection> server_;
    ConnectionConfig server_config_;
    Instant now_;
    // After on_timeout at T a connection is not woken again before T + 1 ns,
    // so a stale next_timeout() cannot freeze virtual time.
    Instant timer_floor_[2] = {Instant::min(), Instant::min()};
    // Each connection's timer as timer_of() last read it, until the
    // connection is next reached (an event, a drain, an accessor): with many
    // flows, asking an idle connection again read ~15 cold cache lines.
    mutable Instant timer_[2] = {kNever, kNever};
    mutable bool timer_known_[2] = {false, false};
    std::uint32_t stale_timeouts_[2] = {0, 0};
    std::uint64_t steps_at_instant_ = 0;
    std::uint64_t steps_ = 0;
    std::uint64_t rejected_ = 0;
};

// One bulk transfer, client → server, on a single stream.
struct TransferSpec {
    ConnectionConfig client;
    ConnectionConfig server;
    SimpleLinkConfig client_to_server;
    SimpleLinkConfig server_to_client;
    // When set, these build the links instead of the SimpleLinkConfigs (so the
    // src/emu emulator can plug in).
    LinkFactory client_to_server_factory;
    LinkFactory server_to_client_factory;
    std::uint64_t bytes = 32u << 20;
    // When positive, the client sends for this long (virtual time, from
    // connect) and then finishes the stream; `bytes` is ignored.
    Duration send_for{0};
    Duration interval = std::chrono::seconds(1);
    Duration deadline = std::chrono::seconds(600);  // virtual, from start
    std::uint64_t seed = 1;                          // the payload's byte pattern
    Instant start{};
};

struct IntervalSample {
    Duration begin{0};  // from the transfer's start
    Duration end{0};
    std::uint64_t bytes = 0;        // delivered to the server application in the interval
    std::uint64_t bytes_sent = 0;   // stream bytes the client sent for the first time in the interval
    std::uint64_t retransmits = 0;  // client packets_retransmitted in the interval
    std::uint64_t packets_lost = 0; // client packets_lost in the interval
    std::uint64_t cwnd = 0;         // client, at the end of the interval
    std::uint64_t bytes_in_flight = 0;
    Duration srtt{0};
};

struct TransferResult {
    bool completed = false;   // the server read every byte and the FIN before the deadline
    bool hash_match = false;  // the hash of what was written equals that of what was read
    std::uint64_t bytes_sent = 0;       // accepted by Connection::write
    std::uint64_t bytes_delivered = 0;  // read by the server application
    std::uint64_t sender_hash = 0;  // 64-bit word hash (ndm/workload.hpp)
    std::uint64_t receiver_hash = 0;
    Duration duration{0};  // virtual: connect → last byte read (or the deadline)
    std::vector<IntervalSample> samples;
    ConnectionStats client_stats;
    ConnectionStats server_stats;
    LinkStats client_to_server;
    LinkStats server_to_client;
    CloseInfo client_close;  // filled if the connection closed
    CloseInfo server_close;
    bool client_closed = false;
    bool server_closed = false;
    std::uint64_t steps = 0;  // simulator events processed
    // Why an incomplete transfer stopped, for humans.
    std::string failure;
};

// Runs the transfer to completion, failure or the deadline. `on_sample`, if
// given, sees each interval as it closes (the demo prints rows live).
// Throws std::invalid_argument on a bad config (as Connection::connect does).
TransferResult run_transfer(const TransferSpec& spec,
                            const std::function<void(const IntervalSample&)>& on_sample = {});

// ---------------------------------------------------------------- shared bottleneck

// Several bulk flows whose client → server datagrams share one bottleneck
// link (a dumbbell): fairness and competition between controllers in
// virtual time. Each flow has its own return path. On the shared link every
// datagram carries a leading tag naming its flow (stripped on delivery): one
// byte up to 255 flows, two beyond, so the bottleneck's byte accounting is
// ~0.07 % (0.14 %) heavier than the flows' own datagrams at 1452 bytes.
struct FlowSpec {
    ConnectionConfig client;  // controller, options, datagram size
    ConnectionConfig server;
    Duration start{0};        // when the flow connects, from the run's start
    std::uint64_t seed = 1;   // the payload's byte pattern
};

struct SharedPathSpec {
    std::vector<FlowSpec> flows;  // 1..65535
    LinkFactory bottleneck;       // the shared client → server link (required)
    LinkFactory return_path;      // called once per flow for its server → client link (required)
    // Every flow sends until this time (from the run's start), then finishes its stream.
    Duration send_until = std::chrono::seconds(10);
    Duration interval = std::chrono::seconds(1);
    Duration deadline = std::chrono::seconds(600);  // virtual, from start
    Instant start{};
};

struct SharedPathResult {
    // Per flow, in spec order; sample times are from the run's start (not the
    // flow's), so flows line up. client_to_server holds the shared link's
    // statistics for every flow.
    std::vector<TransferResult> flows;
    LinkStats bottleneck;
    std::uint64_t misrouted = 0;  // datagrams whose flow tag was corrupted on the link
    std::uint64_t steps = 0;
};

// Runs every flow to completion, failure or the deadline. Throws
// std::invalid_argument on a bad spec.
SharedPathResult run_shared_path(const SharedPathSpec& spec);

}  // namespace ndm::sim

#pragma GCC visibility pop
