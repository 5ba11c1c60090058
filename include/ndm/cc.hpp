// The congestion-control interface: plain event structs in, a window and an
// optional pacing rate out (in the spirit of ngtcp2's ngtcp2_cc and mvfst's
// CongestionController). The transport core owns RTT estimation, bytes in
// flight and loss detection (RFC 9002 §5, §6); a controller only reacts.
//
// Controllers are created by name through a registry, so a user-defined
// controller can be plugged in from outside the library:
//
//   ndm::cc::register_controller({"mine", "my experiment", [](auto& p, auto& o) {
//       return std::make_unique<Mine>(p, o); }});
//   auto cc = ndm::cc::make("mine", params, "gain=2");
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::cc {

// A packet carrying in-flight bytes left the sender.
struct PacketSent {
    Instant time;
    std::uint64_t packet_number = 0;
    std::uint64_t bytes = 0;            // size counted in flight
    std::uint64_t bytes_in_flight = 0;  // after adding this packet
    // The window is not what limits the sender after this packet: the same
    // verdict as AckEvent::app_limited, at send time.
    bool app_limited = false;
    // The delivery-rate estimator is in an application-limited phase (its
    // C.app_limited; the packet's RateSample will say is_app_limited): the
    // sender ran out of data since the window was last full. With nothing
    // else in flight, the sender is restarting from idle (BBR's
    // HandleRestartFromIdle).
    bool in_app_limited_phase = false;
};

// One in-flight packet declared lost (RFC 9002 §6.1), reported before the
// CongestionEvent of the losses it is part of, in packet-number order. BBR
// (draft-ietf-ccwg-bbr §5.5.10.2 HandleLostPacket) estimates from each the
// inflight at which losses crossed its threshold.
struct PacketLost {
    Instant now;
    std::uint64_t packet_number = 0;
    std::uint64_t bytes = 0;
    Instant time_sent;
    std::uint64_t tx_in_flight = 0;  // bytes in flight just after it was sent, itself included
    std::uint64_t lost = 0;          // bytes declared lost from its send until now, itself included
    bool is_app_limited = false;     // sent in an application-limited phase
};

// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation-02
// §3.3; Linux's struct rate_sample), taken on every ACK that newly
// acknowledges in-flight packets, from the most recently sent of them (P
// below). Rates are in bytes per second, amounts in bytes.
struct RateSample {
    // A rate was measured. False when the interval is shorter than the
    // minimum RTT (ACK compression, or a packet sent before a reordering:
    // the rate would be overstated) or zero; the other fields still hold.
    bool valid = false;
    double delivery_rate = 0;            // delivered / interval
    // The longer of P's send interval (from the send of the packet whose
    // acknowledgement preceded P's send, to P's send) and its ACK interval
    // (from that acknowledgement to this one), so that neither send bursts
    // nor ACK compression inflate the rate (§3.3).
    Duration interval{0};
    std::uint64_t delivered = 0;         // acknowledged from P's send until this ACK, P included
    std::uint64_t prior_delivered = 0;   // the connection's delivered count when P was sent
    std::uint64_t total_delivered = 0;   // the connection's delivered count after this ACK
    // P left while the sender had nothing to send and the window room
    // (§3.4): the rate measures the application, so it bounds the path's
    // only from below. A model of the path should take such a sample only
    // when it exceeds its current estimate (as BBR does).
    bool is_app_limited = false;
    Duration rtt{0};                     // this ACK's arrival minus P's send time
    std::uint64_t tx_in_flight = 0;      // bytes in flight just after P was sent
    std::uint64_t lost = 0;              // declared lost from P's send until this ACK, its own losses included
    std::uint64_t newly_acked = 0;       // in-flight bytes this ACK newly acknowledged
    std::uint64_t newly_lost = 0;        // bytes this ACK (or the timeout before it) declared lost
};

// One ACK frame's worth of newly acknowledged in-flight packets (RFC 9002 §7.3.2).
struct AckEvent {
    Instant now;
    std::uint64_t bytes_acked = 0;    // newly acknowledged in-flight bytes
    std::uint64_t packets_acked = 0;  // newly acknowledged in-flight packets
    // RTT state after this ACK was processed (RFC 9002 §5). has_rtt_sample is
    // false when the largest acknowledged packet was not newly acknowledged or
    // not ack-eliciting; latest_rtt then repeats the previous sample.
    bool has_rtt_sample = false;
    Duration latest_rtt{0};
    Duration smoothed_rtt{0};
    Duration rttvar{0};
    Duration min_rtt{0};
    std::uint64_t prior_bytes_in_flight = 0;
    std::uint64_t bytes_in_flight = 0;  // after removing the acknowledged packets
    Instant largest_acked_sent_time;    // send time of the largest newly acked packet
    // True when the sender is not cwnd-limited (RFC 9002 §7.8): controllers
    // must not grow the window on this ACK. Not only "no data to send": flow
    // control, an application writing in bursts or a sender slower than its
    // window leave the window unused while data waits. The core decides as
    // Linux's tcp_is_cwnd_limited does (src/transport/cwnd_usage.hpp): false
    // when a send filled cwnd (or would have, but for the pacer) within the
    // last window of sends, and, while cwnd() < ssthresh(), when cwnd is below
    // twice the most bytes in flight in it, so slow start may double what was
    // used. A controller that does not override ssthresh() counts as in slow
    // start. Evaluated with cwnd() and ssthresh() as they are before on_ack().
    bool app_limited = false;
    // The delivery rate this ACK measured (BBR's input; see RateSample).
    RateSample rate;
};

// Packets declared lost by one ACK or timeout (RFC 9002 §7.3.2, §7.6), or
// newly reported CE-marked by the peer's ECN counts (RFC 9002 §7.1, B.7).
struct CongestionEvent {
    Instant now;
    std::uint64_t bytes_lost = 0;
    std::uint64_t packets_lost = 0;
    // Starts a recovery period if after the current one. For an ECN event:
    // the send time of the largest packet the ACK newly acknowledged (B.7),
    // so that one round's marks reduce the window once, as its losses would.
    Instant largest_lost_sent_time;
    // Packets the peer newly reported CE-marked (RFC 9000 §13.4.1): a
    // congestion signal without a loss. bytes_lost and packets_lost are 0 for
    // a pure-ECN event; the core never combines the two in one event. A
    // controller reacts as to a loss (RFC 9002 §7.1; RFC 8311 allows a
    // smaller reduction), but an ECN reduction is never spurious: no
    // SpuriousEvent undoes it.
    std::uint64_t ecn_ce = 0;
    std::uint64_t bytes_in_flight = 0;  // after removing the lost packets
    bool persistent = false;  // persistent congestion (RFC 9002 §7.6): collapse to minimum
};

// Every packet of an earlier congestion event was acknowledged after all:
// the loss was spurious (reordering), undo the reduction (RFC 9438 §4.9).
struct SpuriousEvent {
    Instant now;
};

// What a controller is told when it is created.
struct Params {
    std::uint64_t max_datagram_size = 1200;  // MDS of RFC 9002 §7.2
    Instant now;
};

class Controller {
public:
    virtual ~Controller() = default;

    virtual void on_packet_sent(const PacketSent&) {}
    virtual void on_packet_lost(const PacketLost&) {}
    virtual void on_ack(const AckEvent& ev) = 0;
    virtual void on_congestion_event(const CongestionEvent& ev) = 0;
    virtual void on_spurious_congestion(const SpuriousEvent&) {}
    // The sender was idle for longer than a PTO and restarts (RFC 9002 §7.8).
    virtual void on_idle_restart(Instant) {}

    // Congestion window in bytes.
    [[nodiscard]] virtual std::uint64_t cwnd() const = 0;
    [[nodiscard]] virtual std::uint64_t ssthresh() const { return UINT64_MAX; }
    // Pacing rate in bytes per second, or nullopt to let the core pace at
    // 1.25 * cwnd / smoothed_rtt (RFC 9002 §7.7).
    [[nodiscard]] virtual std::optional<double> pacing_rate() const { return std::nullopt; }
    // A short state name for statistics and qlog ("slow_start", "recovery", ...);
    // state_class() below says how the statistics count it.
    [[nodiscard]] virtual std::string_view state() const = 0;
    [[nodiscard]] virtual std::string_view name() const = 0;
};

// The classes ConnectionStats counts time in (time_in_slow_start, ...).
enum class StateClass : std::uint8_t { slow_start, congestion_avoidance, recovery, other };
inline constexpr std::size_t kStateClasses = 4;

// The class of a state() name. state() stays a free-form name rather than an
// enum: qlog and the stats print it, and controllers written outside the
// library (cc::register_controller) name their own states, so an enum in the
// interface would either break them or grow with every experiment. The core
// calls this once per state change and keys its time accounting by the
// result. Any name ending in "slow_start" is slow start (HyStart++'s
// "conservative_slow_start" too, RFC 9406 §4.2); names it does not know count
// as other.
constexpr StateClass state_class(std::string_view state) {
    if (state.ends_with("slow_start")) return StateClass::slow_start;
    if (state == "congestion_avoidance") return StateClass::congestion_avoidance;
    if (state == "recovery") return StateClass::recovery;
    return StateClass::other;
}

// Options are "key=value" pairs separated by commas ("beta=0.7,hystart=off").
using Options = std::map<std::string, std::string, std::less<>>;
// Throws std::invalid_argument naming the offending part.
Options parse_options(std::string_view text);

// A controller as the tools and the Python bindings name it: "name" or
// "name:key=value:key=value" (colons, since commas separate controllers in a
// list). The whole entry labels results, so variants of one controller can
// be compared.
struct Entry {
    std::string name;
    std::string options;  // "key=value,key=value", as make() takes them
};
Entry parse_entry(std::string_view entry);

using Factory = std::function<std::unique_ptr<Controller>(const Params&, const Options&)>;

struct Registration {
    std::string name;
    std::string description;
    Factory factory;
};

// Adds (or replaces) a controller under its name. Thread-safe.
void register_controller(Registration reg);

// Creates a controller by name; throws std::invalid_argument with a message
// that lists the known names when the name is unknown, or names the option
// a controller rejected.
std::unique_ptr<Controller> make(std::string_view name, const Params& params,
                                 std::string_view options = {});

struct Info {
    std::string name;
    std::string description;
};
// Every registered controller, sorted by name.
std::vector<Info> list();

}  // namespace ndm::cc

#pragma GCC visibility pop
