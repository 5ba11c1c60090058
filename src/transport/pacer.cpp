#include "transport/pacer.hpp"

#include <algorithm>
#include <cmath>

namespace ndm::transport {

namespace {
constexpr double kNsPerSecond = 1e9;
}

void Pacer::set_rate(double bytes_per_second, std::size_t max_datagram_size) {
    mds_ = std::max<std::size_t>(max_datagram_size, 1);
    rate_ = std::isfinite(bytes_per_second) && bytes_per_second > 0 ? bytes_per_second : 0;
    if (rate_ == 0) {
        quantum_ = 0;
        started_ = false;  // pacing restarts with a full bucket
        return;
    }
    // ngtcp2: about 1 ms worth of bytes, at least 10 datagrams, at most 64 KiB
    // (but never less than one datagram).
    const double per_ms = rate_ / 1000.0;
    const double lower = 10.0 * static_cast<double>(mds_);
    const double upper = static_cast<double>(std::max<std::size_t>(64 * 1024, mds_));
    quantum_ = static_cast<std::size_t>(std::min(std::max(per_ms, lower), upper));
    tokens_ = std::min(tokens_, static_cast<double>(quantum_));
}

double Pacer::tokens_at(Instant now) const {
    const double q = static_cast<double>(quantum_);
    if (!started_) return q;
    if (now <= last_) return tokens_;
    const double elapsed_ns = static_cast<double>((now - last_).count());
    return std::min(q, tokens_ + rate_ * elapsed_ns / kNsPerSecond);
}

Instant Pacer::next_send_time(Instant now) const {
    if (rate_ <= 0 || !started_) return now;
    // Sending is allowed while the bucket holds a datagram's worth, so a full
    // bucket yields exactly one quantum; a deficit left by a larger send
    // delays the next packet until it is repaid.
    const double need = static_cast<double>(mds_) - tokens_;
    if (need <= 0) return now;
    // Smallest whole number of nanoseconds after last_ that refills `need`
    // (tiny relative slack absorbs floating-point error, never a whole ns).
    const double ns = std::ceil(need / rate_ * kNsPerSecond * (1 - 1e-12));
    if (ns >= static_cast<double>(Duration::max().count() / 2)) return kNever;
    return std::max(now, last_ + Duration{static_cast<Duration::rep>(ns)});
}

std::uint64_t Pacer::budget(Instant now) const {
    if (rate_ <= 0) return UINT64_MAX;
    if (next_send_time(now) > now) return 0;
    return static_cast<std::uint64_t>(std::max(tokens_at(now), static_cast<double>(mds_)));
}

void Pacer::on_sent(Instant now, std::size_t bytes) {
    if (rate_ <= 0) return;
    const double t = tokens_at(now);
    tokens_ = t - static_cast<double>(bytes);
    if (!started_ || now > last_) last_ = now;
    started_ = true;
}

double Pacer::rate_for_window(std::uint64_t cwnd_bytes, Duration smoothed_rtt, double gain) {
    if (smoothed_rtt <= Duration{0}) return 0;
    return gain * static_cast<double>(cwnd_bytes) / to_seconds(smoothed_rtt);
}

}  // namespace ndm::transport
