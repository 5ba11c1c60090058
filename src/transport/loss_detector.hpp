// Sender side of loss detection (RFC 9002 §6, Appendix A) over the three
// packet number spaces (RFC 9000 §12.3): sent packet bookkeeping, ACK
// processing, packet/time-threshold loss, the probe timeout, persistent
// congestion (§7.6) and spurious-loss detection. Each space has its own
// packet numbers, sent packets, largest_acked and loss_time; the RTT
// estimate, bytes_in_flight and pto_count are shared (§A.3). Every call
// defaults to the application space, so a connection that uses only that
// space sees one packet number space. The results are plain structs the
// connection turns into cc:: events.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "ndm/ecn.hpp"
#include "ndm/loss_detection.hpp"
#include "ndm/time.hpp"
#include "transport/delivery_rate.hpp"
#include "wire/frame.hpp"
#include "transport/packet_space.hpp"
#include "transport/rack_reordering.hpp"
#include "transport/rtt_estimator.hpp"
#include "transport/sent_frame.hpp"

namespace ndm::test {
struct InvariantAudit;  // tests/support/invariant_audit.hpp: reads the private state to check invariants
}  // namespace ndm::test

namespace ndm::transport {

// RFC 9002 §6.1.1, §6.1.2, §7.6.1.
inline constexpr std::uint64_t kPacketThreshold = 3;
inline constexpr int kTimeThresholdNum = 9;  // kTimeThreshold = 9/8
inline constexpr int kTimeThresholdDen = 8;
inline constexpr int kPersistentCongestionThreshold = 3;
// Reordering tolerance grows when a loss proves spurious (RFC 9002 §6.1.1 and
// §6.1.2 allow it; RFC 8985 §6.2 does the same with its reordering window).
// Bounds: Linux's default tcp_max_reordering, and twice the RTT.
inline constexpr std::uint64_t kMaxPacketThreshold = 300;
inline constexpr int kMaxTimeThresholdNum = 16;

inline constexpr std::uint64_t kNoPn = ~std::uint64_t{0};

struct SentPacket {
    std::uint64_t pn = 0;
    Instant time_sent{};
    std::uint32_t bytes = 0;   // counted in bytes_in_flight when in_flight
    bool ack_eliciting = false;
    bool in_flight = false;    // RFC 9002 §2: ack-eliciting or PADDING
    Ecn ecn = Ecn::not_ect;    // the datagram's codepoint (RFC 9000 §13.4.2 validates against it)
    RateSnapshot rate;         // the delivery state when it was sent (in flight only)
    SentFrames frames;
};

struct AckOutcome {
    // Acknowledges a packet number never sent in its space (>=
    // next_packet_number(space), or one skipped on purpose) or is malformed:
    // nothing was changed; the caller closes with PROTOCOL_VIOLATION.
    bool invalid = false;
    // Of those, an ACK of a packet number skipped on purpose (RFC 9000
    // §21.4): the peer acknowledges packets it never received.
    bool optimistic = false;
    std::vector<SentPacket> acked;       // newly acked, not previously lost; ascending pn
    std::vector<SentPacket> lost;        // newly declared lost by this ACK; ascending pn
    // Previously declared lost, now acknowledged (each reported once): their
    // frames need no retransmission.
    std::vector<SentPacket> late_acked;
    bool rtt_sample = false;             // RFC 9002 §5.1
    bool persistent_congestion = false;  // RFC 9002 §7.6.2
    // Every in-flight packet of the most recent congestion event has now been
    // acknowledged: the reduction can be undone. Reported before this ACK's
    // own losses (which start a new event): undo first, then react to `lost`.
    bool spurious_congestion = false;
    std::uint64_t prior_bytes_in_flight = 0;
    Instant largest_acked_time_sent{};   // of the largest newly acked packet
    Instant largest_lost_time_sent{};    // of the largest in-flight lost packet
};

struct TimeoutOutcome {
    std::vector<SentPacket> lost;        // time-threshold losses, ascending pn
    bool persistent_congestion = false;
    bool pto = false;                    // the probe timeout fired: send probes
    unsigned probes = 0;                 // RFC 9002 §6.2.4: "MAY send two"
    Instant largest_lost_time_sent{};
    // RFC 9002 §A.9: the space whose loss time fired, or that carries the probes.
    PacketSpace space = PacketSpace::application;
};

class LossDetector {
    friend struct ::ndm::test::InvariantAudit;

public:
    struct Config {
        Duration max_ack_delay = std::chrono::milliseconds{25};  // the peer's
        // Upper bound on the backed-off PTO period (never below the base
        // period); zero: RFC 9002 §6.2.1's doubling without bound. See
        // ConnectionConfig::max_pto_backoff for why a bound exists.
        Duration max_pto_backoff{0};
        // Which thresholds declare a packet lost (ndm/loss_detection.hpp).
        LossDetection detection = LossDetection::adaptive;
    };

    explicit LossDetector(Config cfg);

    static constexpr PacketSpace kApp = PacketSpace::application;

    // Packet numbers are allocated here, per space strictly increasing from 0.
    [[nodiscard]] std::uint64_t next_packet_number(PacketSpace s = kApp) const { return space(s).next_pn; }
    // Uses up space s's next packet number without sending it (RFC 9000
    // §21.4: a sender MAY skip packet numbers to detect optimistic ACKs).
    // An ACK that covers one of the last kSkippedRemembered skipped numbers
    // is invalid (AckOutcome::optimistic).
    void skip_packet_number(PacketSpace s = kApp);
    static constexpr std::size_t kSkippedRemembered = 8;
    // Records a packet sent in space s; p.pn must equal next_packet_number(s).
    // Packets that are not in flight (ACK-only) are tracked too, so that their
    // acknowledgement or loss is reported. Throws std::logic_error once s is
    // discarded (RFC 9001 §4.9: its keys are gone).
    void on_packet_sent(SentPacket p, PacketSpace s = kApp);

    // RFC 9002 §A.7 OnAckReceived for an ACK frame carried in space s: it
    // acknowledges only that space's packets. handshake_confirmed governs the
    // RTT sample alone (§5.3: ack_delay is capped by max_ack_delay only once
    // confirmed); the timer reads set_handshake_confirmed(). Initial and
    // Handshake ACKs' ack_delay is ignored (§5.3 allows it; their ACKs are
    // not delayed). An ACK for a discarded space is ignored: `out` says
    // nothing happened, and it is not invalid.
    AckOutcome on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed,
                               PacketSpace s = kApp);
    // The same into `out`, which is reset first; reusing one AckOutcome keeps
    // its vectors' storage from ACK to ACK.
    void on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed, AckOutcome& out,
                         PacketSpace s = kApp);

    // The application space's PTO period, backed off by pto_count() and
    // bounded by max_pto_backoff.
    [[nodiscard]] Duration pto_backoff_period() const { return pto_backoff_period(cfg_.max_ack_delay); }
    // When on_timeout() wants to run (RFC 9002 §A.8 SetLossDetectionTimer):
    // the earliest loss time over the spaces if a time-threshold loss is
    // pending; else the earliest PTO deadline over the spaces with
    // ack-eliciting packets in flight (the application space only once the
    // handshake is confirmed; only it adds max_ack_delay, §6.2.1); else, for
    // a client whose peer has not completed address validation, the
    // anti-deadlock PTO (§6.2.2.1) from the last call that moved the timer;
    // else kNever.
    [[nodiscard]] Instant timer() const;
    // RFC 9002 §A.9 OnLossDetectionTimeout. Does nothing when now < timer().
    TimeoutOutcome on_timeout(Instant now);

    // RFC 9002 §6.4, §A.11 OnPacketNumberSpaceDiscarded (its keys are
    // discarded, RFC 9001 §4.9): the space's packets leave bytes_in_flight
    // without a congestion event, its timers are cleared, pto_count is reset.
    // Returns the bytes removed from bytes_in_flight. Idempotent.
    std::uint64_t discard_space(PacketSpace s);
    [[nodiscard]] bool discarded(PacketSpace s) const { return (live_ & bit(s)) == 0; }
    // The spaces not discarded: bit i for PacketSpace i.
    [[nodiscard]] unsigned live_spaces() const { return live_; }
    // RFC 9002 §6.3: a Retry restarts the handshake. Space s's packets leave
    // bytes_in_flight and its timers as discard_space() does, but the space
    // stays in use and keeps its packet numbers (RFC 9000 §17.2.5.3). Returns
    // the packets that were outstanding (neither acknowledged nor declared
    // lost), whose frames the caller sends again; none is reported lost.
    std::vector<SentPacket> restart_space(PacketSpace s);

    // Connection state the timer depends on (RFC 9002 §A.8). The defaults
    // (confirmed, address validated) give a single application space today's
    // behaviour; a connection using all three spaces sets the first two to
    // false at creation and true as the handshake progresses (RFC 9001
    // §4.1.2; RFC 9000 §8.1: a server always considers the client's address
    // validation complete).
    void set_handshake_confirmed(bool v) { handshake_confirmed_ = v; }
    void set_peer_completed_address_validation(bool v) { peer_validated_ = v; }
    void set_has_handshake_keys(bool v) { has_handshake_keys_ = v; }

    [[nodiscard]] std::uint64_t bytes_in_flight() const { return bytes_in_flight_; }
    [[nodiscard]] std::size_t ack_eliciting_in_flight(PacketSpace s = kApp) const {
        return space(s).eliciting_in_flight;
    }
    [[nodiscard]] unsigned pto_count() const { return pto_count_; }
    // Current loss thresholds (adapted upwards by spurious losses;
    // LossDetection::adaptive and rfc9002).
    [[nodiscard]] std::uint64_t packet_threshold() const { return packet_threshold_; }
    [[nodiscard]] int time_threshold_eighths() const { return time_threshold_num_; }
    // LossDetection::rack's reordering state.
    [[nodiscard]] const RackReorderingWindow& rack() const { return rack_; }
    [[nodiscard]] const RttEstimator& rtt() const { return rtt_; }
    // RFC 9000 §9.4: a new path starts from kInitialRtt.
    void reset_rtt() { rtt_ = RttEstimator{}; }
    // Packets of space s remembered: outstanding, plus acked/lost ones
    // awaiting cleanup.
    [[nodiscard]] std::size_t outstanding(PacketSpace s = kApp) const {
        return space(s).sent.size() + space(s).lost.size();
    }
    [[nodiscard]] bool has_largest_acked(PacketSpace s = kApp) const { return space(s).has_largest_acked; }
    [[nodiscard]] std::uint64_t largest_acked(PacketSpace s = kApp) const { return space(s).largest_acked; }
    [[nodiscard]] Instant time_of_last_ack_eliciting(PacketSpace s = kApp) const {
        return space(s).last_ack_eliciting_time;
    }

    // The peer's max_ack_delay (known once its transport parameters arrive).
    void set_max_ack_delay(Duration d) { cfg_.max_ack_delay = d; }
    [[nodiscard]] Duration max_ack_delay() const { return cfg_.max_ack_delay; }

    // On close: forget every packet of every space; bytes_in_flight becomes
    // 0. Packet numbers keep increasing.
    void discard_all();

private:
    // skipped: a packet number used up without a packet (skip_packet_number):
    // never outstanding, and no acknowledgement between lost packets.
    enum class State : std::uint8_t { outstanding, acked, lost, skipped };
    struct Slot {
        SentPacket p;
        State state = State::outstanding;
        std::uint64_t event = 0;  // congestion event that declared it lost (0: none)
        Instant declared_lost{};  // when it was (State::lost)
    };

    struct LossBatch {
        bool persistent = false;
        Instant largest_lost_time_sent{};
    };

    // A FIFO of slots in one circular array that doubles when full. (A
    // std::deque allocates a node for every two ~200-byte slots.) Popped
    // slots keep their contents until overwritten.
    class SlotRing {
    public:
        [[nodiscard]] bool empty() const { return n_ == 0; }
        [[nodiscard]] std::size_t size() const { return n_; }
        Slot& front() { return v_[head_]; }
        Slot& operator[](std::size_t i) { return v_[(head_ + i) & (v_.size() - 1)]; }
        const Slot& operator[](std::size_t i) const { return v_[(head_ + i) & (v_.size() - 1)]; }
        // The slot after the last, to be filled in by the caller.
        Slot& push_back() {
            if (n_ == v_.size()) grow();
            return (*this)[n_++];
        }
        void pop_front() {
            head_ = (head_ + 1) & (v_.size() - 1);
            --n_;
        }
        void clear() {
            v_.clear();
            head_ = n_ = 0;
        }

    private:
        void grow() {
            std::vector<Slot> v(std::max<std::size_t>(16, 2 * v_.size()));
            for (std::size_t i = 0; i < n_; ++i) v[i] = std::move((*this)[i]);
            v_.swap(v);
            head_ = 0;
        }
        std::vector<Slot> v_;  // size: a power of two, or 0
        std::size_t head_ = 0;
        std::size_t n_ = 0;
    };

    // One packet number space's state (RFC 9002 §A.3). What timer() reads
    // comes first, in the space's first cache line: with many connections a
    // connection's state is out of the cache at each of its turns (100
    // simulated flows, bench/sim_flows.py: 4.18 -> 3.99 us a packet, 4.6 %
    // fewer misses of a 2 MiB cache under cachegrind; commit 8af9dd8).
    struct alignas(64) Space {
        Instant loss_time = kNever;
        std::size_t eliciting_in_flight = 0;
        Instant last_ack_eliciting_time{};
        bool has_largest_acked = false;
        std::uint64_t largest_acked = 0;
        std::uint64_t next_pn = 0;
        // Contiguous packet numbers: sent[i] holds pn base + i. Acked slots are
        // removed lazily from the front; lost ones move to `lost` when they reach it.
        SlotRing sent;
        std::uint64_t base = 0;
        // Declared lost and no longer in `sent`, remembered for a while so that a
        // late acknowledgement reveals a spurious loss. Keyed by pn.
        std::map<std::uint64_t, Slot> lost;
        // The most recently skipped packet numbers (skip_packet_number), a
        // ring; kNoPn where unused.
        std::array<std::uint64_t, kSkippedRemembered> skipped{kNoPn, kNoPn, kNoPn, kNoPn, kNoPn, kNoPn, kNoPn, kNoPn};
        std::size_t skipped_next = 0;
        // RFC 8985 §6.2 Step 1 (LossDetection::rack): the send time of the
        // latest-sent packet acknowledged, and its RTT.
        Instant rack_xmit_ts{};
        Duration rack_rtt{0};

        Slot& slot(std::uint64_t pn) { return sent[pn - base]; }
    };
    struct SpaceTime {
        Instant time = kNever;
        PacketSpace space = PacketSpace::initial;
    };

    Space& space(PacketSpace s) { return spaces_[static_cast<std::size_t>(s)]; }
    [[nodiscard]] const Space& space(PacketSpace s) const { return spaces_[static_cast<std::size_t>(s)]; }
    enum class AckCheck : std::uint8_t { ok, invalid, optimistic };
    // The ACK's ranges are well formed, below sp's next packet number and
    // clear of the numbers sp skipped.
    [[nodiscard]] static AckCheck check_ack(const Space& sp, const wire::AckFrame& ack);
    // RFC 9002 §A.7 DetectAndRemoveAckedPackets into out.acked / late_acked.
    void take_acked(Space& sp, const wire::AckFrame& ack, AckOutcome& out);
    [[nodiscard]] Duration loss_delay() const;
    // When slot s of sp is lost by the thresholds (at or before now: lost
    // now); `delay` is loss_delay(), `in_recovery` in_rack_recovery(sp).
    [[nodiscard]] Instant loss_deadline(const Space& sp, const Slot& s, Duration delay, bool in_recovery) const;
    // LossDetection::rack's bookkeeping of an ACK (RFC 8985 §6.2 Steps 1, 2, 4).
    void rack_on_ack(Space& sp, const AckOutcome& out, bool had_largest, std::uint64_t prior_largest, Instant now);
    [[nodiscard]] bool in_rack_recovery(const Space& sp) const {
        return rack_recovery_ && sp.rack_xmit_ts <= rack_recovery_start_;
    }
    // RFC 9002 §A.10 DetectAndRemoveLostPackets + §B.8 OnPacketsLost; the
    // lost packets are appended to `lost`.
    LossBatch detect_lost(Space& sp, Instant now, std::vector<SentPacket>& lost);
    [[nodiscard]] bool in_persistent_congestion(const Space& sp, std::size_t first, std::size_t last,
                                                std::uint64_t event) const;
    void late_ack(Space& sp, Slot& s, AckOutcome& out);
    void remove_from_flight(Space& sp, const SentPacket& p);
    std::uint64_t remove_space_from_flight(Space& sp, std::vector<SentPacket>* outstanding);
    void cleanup(Space& sp, Instant now);
    void forget_old_losses(Space& sp, Instant now);
    // Forgets sp's packets and loss time (packet numbers keep increasing).
    static void forget_packets(Space& sp);
    [[nodiscard]] Duration pto_backoff_period(Duration max_ack_delay) const;
    [[nodiscard]] std::size_t total_eliciting_in_flight() const;
    // RFC 9002 §A.8 GetLossTimeAndSpace and GetPtoTimeAndSpace.
    [[nodiscard]] SpaceTime loss_time_and_space() const;
    [[nodiscard]] SpaceTime pto_time_and_space() const;

    Config cfg_;
    RttEstimator rtt_;
    std::array<Space, kPacketSpaces> spaces_;
    // The spaces not discarded, a bit each: loops over the spaces skip the
    // others without reading them (after the handshake, two of three).
    static constexpr unsigned bit(PacketSpace s) { return 1u << static_cast<unsigned>(s); }
    unsigned live_ = (1u << kPacketSpaces) - 1;

    std::uint64_t bytes_in_flight_ = 0;
    unsigned pto_count_ = 0;
    bool handshake_confirmed_ = true;
    bool peer_validated_ = true;
    bool has_handshake_keys_ = false;
    // Where SetLossDetectionTimer last ran (send, ACK, timeout): the
    // anti-deadlock PTO counts from there (RFC 9002 §A.8 "now()").
    Instant timer_anchor_ = kNever;
    std::uint64_t packet_threshold_ = kPacketThreshold;
    int time_threshold_num_ = kTimeThresholdNum;  // in eighths of an RTT
    RackReorderingWindow rack_;
    // RFC 9002 §7.3.2's recovery period, which RACK's window depends on: it
    // began when a loss was declared at rack_recovery_start_, and ends when a
    // packet sent after that is acknowledged.
    bool rack_recovery_ = false;
    Instant rack_recovery_start_{};
    bool has_first_rtt_sample_ = false;
    Instant first_rtt_sample_time_{};

    std::uint64_t event_counter_ = 0;
    std::uint64_t current_event_ = 0;    // most recent congestion event still undoable
    std::size_t event_unacked_ = 0;      // its lost packets not yet acknowledged
};

}  // namespace ndm::transport
