// Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02,
// the algorithm of Linux's tcp_rate.c): every packet remembers, when it is
// sent, how much had been delivered and when; an ACK turns the most recently
// sent of the packets it newly acknowledges into a rate sample, the bytes
// delivered since that packet left over the longer of its send interval and
// its ACK interval, so that neither ACK compression nor a send burst
// inflates the rate. Samples taken while the sender had nothing to send are
// marked app-limited (§3.4): they bound the path's rate from below only.
// The core owns this state; controllers get the sample in cc::AckEvent.
#pragma once

#include <cstdint>

#include "ndm/cc.hpp"
#include "ndm/time.hpp"

namespace ndm::transport {

// What a packet remembers of the connection's delivery state when it is
// sent (the draft's per-packet P.delivered, P.delivered_time,
// P.first_sent_time, P.is_app_limited; BBR's P.tx_in_flight and P.lost).
struct RateSnapshot {
    std::uint64_t delivered = 0;
    Instant delivered_time{};
    Instant first_sent_time{};
    std::uint64_t lost = 0;          // bytes declared lost before it was sent
    std::uint64_t tx_in_flight = 0;  // bytes in flight once it was sent
    bool is_app_limited = false;
};

class DeliveryRate {
public:
    // §3.2 OnPacketSent, for a packet that counts in flight: `in_flight_before`
    // is bytes in flight without it. The returned snapshot travels with the
    // packet until it is acknowledged, lost or discarded.
    RateSnapshot on_packet_sent(Instant now, std::uint64_t in_flight_before, std::uint64_t bytes);

    // §3.3 UpdateRateSample, for each newly acknowledged in-flight packet of
    // one ACK, in any order.
    void on_packet_acked(const RateSnapshot& s, Instant time_sent, std::uint64_t bytes, Instant now);
    // Bytes newly declared lost (the next sample's `lost` and `newly_lost`,
    // and BBR's per-packet lost-at-send).
    void on_packets_lost(std::uint64_t bytes) { lost_ += bytes; }
    // §3.3 GenerateRateSample, once per ACK after its packets: the sample,
    // whose `valid` is false when the ACK newly acknowledged nothing, or its
    // interval is shorter than min_rtt (§3.3: such intervals come from ACK
    // compression or packets sent before a reordering, and would overstate
    // the rate). Its newly_lost is what was declared lost since the
    // previous sample.
    cc::RateSample take_sample(Duration min_rtt);

    // §3.4 CheckIfApplicationLimited: the sender has no data to send and the
    // window is not full, so samples from packets sent from now until this
    // much more is delivered reflect the application, not the path.
    void on_app_limited(std::uint64_t bytes_in_flight);

    [[nodiscard]] std::uint64_t delivered() const { return delivered_; }
    [[nodiscard]] std::uint64_t lost() const { return lost_; }
    [[nodiscard]] bool app_limited() const { return app_limited_until_ != 0; }

private:
    std::uint64_t delivered_ = 0;     // C.delivered: bytes acknowledged so far
    Instant delivered_time_{};        // C.delivered_time: when delivered_ last grew
    Instant first_sent_time_{};       // C.first_sent_time: send time of the newest acked packet
    std::uint64_t lost_ = 0;          // bytes declared lost so far
    std::uint64_t lost_at_sample_ = 0;  // lost_ when the previous sample was taken
    std::uint64_t app_limited_until_ = 0;  // C.app_limited: 0, or the delivered_ that ends it
    // The sample being built from this ACK's packets (§3.3's rs).
    struct Pending {
        bool has = false;
        std::uint64_t prior_delivered = 0;
        Instant newest_sent{};
        Duration send_elapsed{0}, ack_elapsed{0};
        std::uint64_t newly_acked = 0;
        std::uint64_t tx_in_flight = 0, lost_at_send = 0;
        bool is_app_limited = false;
        Duration rtt{0};
    } pending_;
};

}  // namespace ndm::transport
