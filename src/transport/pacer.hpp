// Token-bucket pacer (ngtcp2-style, RFC 9002 §7.7): packets leave in bursts
// of at most one send quantum, then at the pacing rate. Time is a parameter;
// tokens are fractional bytes (double) and refill from the exact elapsed
// nanoseconds, so rounding never accumulates into drift at any timescale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ndm/time.hpp"

namespace ndm::transport {

class Pacer {
public:
    // bytes_per_second <= 0 (or never set) disables pacing.
    void set_rate(double bytes_per_second, std::size_t max_datagram_size);

    // Earliest time a packet may leave: now when allowed, else when the
    // bucket holds one datagram's worth of tokens again.
    [[nodiscard]] Instant next_send_time(Instant now) const;
    [[nodiscard]] bool can_send(Instant now) const { return next_send_time(now) <= now; }
    // Bytes that may leave now without waiting (0 when paced out; a send
    // larger than this, e.g. a GSO batch, is allowed and delays the next one).
    [[nodiscard]] std::uint64_t budget(Instant now) const;
    void on_sent(Instant now, std::size_t bytes);

    [[nodiscard]] bool paced() const { return rate_ > 0; }
    [[nodiscard]] double rate() const { return rate_; }
    // Burst size (ngtcp2's send quantum; docs/architecture.md, pacing and GSO): min(max(rate·1 ms, 10·MDS), max(64 KiB, MDS)).
    [[nodiscard]] std::size_t send_quantum() const { return quantum_; }

    // RFC 9002 §7.7: rate = N · cwnd / smoothed_rtt with N = 1.25; 0 (unpaced)
    // when smoothed_rtt is 0.
    static double rate_for_window(std::uint64_t cwnd_bytes, Duration smoothed_rtt,
                                  double gain = 1.25);

private:
    [[nodiscard]] double tokens_at(Instant now) const;

    double rate_ = 0;           // bytes per second
    std::size_t mds_ = 1200;
    std::size_t quantum_ = 0;
    double tokens_ = 0;         // at last_; may be negative after a send
    Instant last_{};
    bool started_ = false;      // before the first send the bucket is full
};

}  // namespace ndm::transport
