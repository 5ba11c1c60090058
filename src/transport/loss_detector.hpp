// Sender side of loss detection (RFC 9002 §6, Appendix A) for the single
// packet-number space this transport uses for handshake and data: sent
// packet bookkeeping, ACK processing, packet/time-threshold loss, the probe
// timeout, persistent congestion (§7.6) and spurious-loss detection. The
// results are plain structs the connection turns into cc:: events.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "ndm/time.hpp"
#include "transport/frame.hpp"
#include "transport/rtt_estimator.hpp"
#include "transport/sent_frame.hpp"

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

struct SentPacket {
    std::uint64_t pn = 0;
    Instant time_sent{};
    std::uint32_t bytes = 0;   // counted in bytes_in_flight when in_flight
    bool ack_eliciting = false;
    bool in_flight = false;    // RFC 9002 §2: ack-eliciting or PADDING
    SentFrames frames;
};

struct AckOutcome {
    // Acknowledges a packet number never sent (>= next_packet_number()) or is
    // malformed: nothing was changed; the caller closes with PROTOCOL_VIOLATION.
    bool invalid = false;
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
};

class LossDetector {
public:
    struct Config {
        Duration max_ack_delay = std::chrono::milliseconds{25};  // the peer's
        // Upper bound on the backed-off PTO period (never below the base
        // period); zero: RFC 9002 §6.2.1's doubling without bound. See
        // ConnectionConfig::max_pto_backoff for why a bound exists.
        Duration max_pto_backoff{0};
    };

    explicit LossDetector(Config cfg);

    // Packet numbers are allocated here, strictly increasing from 0.
    [[nodiscard]] std::uint64_t next_packet_number() const { return next_pn_; }
    // Records a sent packet; p.pn must equal next_packet_number(). Packets
    // that are not in flight (ACK-only) are tracked too, so that their
    // acknowledgement or loss is reported.
    void on_packet_sent(SentPacket p);

    // RFC 9002 §A.7 OnAckReceived.
    AckOutcome on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed);
    // The same into `out`, which is reset first; reusing one AckOutcome keeps
    // its vectors' storage from ACK to ACK.
    void on_ack_received(const wire::AckFrame& ack, Instant now, bool handshake_confirmed, AckOutcome& out);

    // When on_timeout() wants to run: the loss time if a time-threshold loss
    // is pending, else the PTO deadline while ack-eliciting packets are in
    // flight, else kNever (RFC 9002 §6.2.1, §A.8).
    // The PTO period, backed off by pto_count() and bounded by max_pto_backoff.
    [[nodiscard]] Duration pto_backoff_period() const;
    [[nodiscard]] Instant timer() const;
    // RFC 9002 §A.9 OnLossDetectionTimeout. Does nothing when now < timer().
    TimeoutOutcome on_timeout(Instant now);

    [[nodiscard]] std::uint64_t bytes_in_flight() const { return bytes_in_flight_; }
    [[nodiscard]] std::size_t ack_eliciting_in_flight() const { return eliciting_in_flight_; }
    [[nodiscard]] unsigned pto_count() const { return pto_count_; }
    // Current loss thresholds (adapted upwards by spurious losses).
    [[nodiscard]] std::uint64_t packet_threshold() const { return packet_threshold_; }
    [[nodiscard]] int time_threshold_eighths() const { return time_threshold_num_; }
    [[nodiscard]] const RttEstimator& rtt() const { return rtt_; }
    // Packets remembered: outstanding, plus acked/lost ones awaiting cleanup.
    [[nodiscard]] std::size_t outstanding() const { return sent_.size() + lost_.size(); }
    [[nodiscard]] bool has_largest_acked() const { return has_largest_acked_; }
    [[nodiscard]] std::uint64_t largest_acked() const { return largest_acked_; }
    [[nodiscard]] Instant time_of_last_ack_eliciting() const { return last_ack_eliciting_time_; }

    // The peer's max_ack_delay (known once its transport parameters arrive).
    void set_max_ack_delay(Duration d) { cfg_.max_ack_delay = d; }
    [[nodiscard]] Duration max_ack_delay() const { return cfg_.max_ack_delay; }

    // On close: forget every packet; bytes_in_flight becomes 0. Packet
    // numbers keep increasing.
    void discard_all();

private:
    enum class State : std::uint8_t { outstanding, acked, lost };
    struct Slot {
        SentPacket p;
        State state = State::outstanding;
        std::uint64_t event = 0;  // congestion event that declared it lost (0: none)
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

    Slot& slot(std::uint64_t pn) { return sent_[pn - base_]; }
    [[nodiscard]] Duration loss_delay() const;
    // RFC 9002 §A.10 DetectAndRemoveLostPackets + §B.8 OnPacketsLost; the
    // lost packets are appended to `lost`.
    LossBatch detect_lost(Instant now, std::vector<SentPacket>& lost);
    [[nodiscard]] bool in_persistent_congestion(std::size_t first, std::size_t last,
                                                std::uint64_t event) const;
    void late_ack(Slot& s, AckOutcome& out);
    void remove_from_flight(const SentPacket& p);
    void cleanup(Instant now);
    void forget_old_losses(Instant now);

    Config cfg_;
    RttEstimator rtt_;
    std::uint64_t next_pn_ = 0;
    // Contiguous packet numbers: sent_[i] holds pn base_ + i. Acked slots are
    // removed lazily from the front; lost ones move to lost_ when they reach it.
    SlotRing sent_;
    std::uint64_t base_ = 0;
    // Declared lost and no longer in sent_, remembered for a while so that a
    // late acknowledgement reveals a spurious loss. Keyed by pn.
    std::map<std::uint64_t, Slot> lost_;

    std::uint64_t bytes_in_flight_ = 0;
    std::size_t eliciting_in_flight_ = 0;
    Instant last_ack_eliciting_time_{};
    bool has_largest_acked_ = false;
    std::uint64_t largest_acked_ = 0;
    Instant loss_time_ = kNever;
    unsigned pto_count_ = 0;
    std::uint64_t packet_threshold_ = kPacketThreshold;
    int time_threshold_num_ = kTimeThresholdNum;  // in eighths of an RTT
    bool has_first_rtt_sample_ = false;
    Instant first_rtt_sample_time_{};

    std::uint64_t event_counter_ = 0;
    std::uint64_t current_event_ = 0;    // most recent congestion event still undoable
    std::size_t event_unacked_ = 0;      // its lost packets not yet acknowledged
};

}  // namespace ndm::transport
