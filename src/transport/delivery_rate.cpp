#include "transport/delivery_rate.hpp"

#include <algorithm>

namespace ndm::transport {

RateSnapshot DeliveryRate::on_packet_sent(Instant now, std::uint64_t in_flight_before, std::uint64_t bytes) {
    // §3.2: after an idle period (nothing in flight) the intervals restart
    // at this send, so the idle time does not dilute the next sample.
    if (in_flight_before == 0) first_sent_time_ = delivered_time_ = now;
    RateSnapshot s;
    s.delivered = delivered_;
    s.delivered_time = delivered_time_;
    s.first_sent_time = first_sent_time_;
    s.lost = lost_;
    s.tx_in_flight = in_flight_before + bytes;
    s.is_app_limited = app_limited_until_ != 0;
    return s;
}

void DeliveryRate::on_packet_acked(const RateSnapshot& s, Instant time_sent, std::uint64_t bytes, Instant now) {
    delivered_ += bytes;
    delivered_time_ = now;
    pending_.newly_acked += bytes;
    // §3.3: the sample comes from the most recently sent packet (Linux
    // tcp_rate_skb_delivered: the newest by send time, then by delivered).
    const bool newest = !pending_.has || time_sent > pending_.newest_sent ||
                        (time_sent == pending_.newest_sent && s.delivered > pending_.prior_delivered);
    if (!newest) return;
    pending_.has = true;
    pending_.prior_delivered = s.delivered;
    pending_.newest_sent = time_sent;
    pending_.send_elapsed = time_sent - s.first_sent_time;
    pending_.ack_elapsed = now - s.delivered_time;
    pending_.tx_in_flight = s.tx_in_flight;
    pending_.lost_at_send = s.lost;
    pending_.is_app_limited = s.is_app_limited;
    pending_.rtt = now - time_sent;
    // The next packet sent measures its send interval from this one's send.
    first_sent_time_ = time_sent;
}

cc::RateSample DeliveryRate::take_sample(Duration min_rtt) {
    // §3.3: the app-limited phase ends once its last packet is delivered.
    if (app_limited_until_ != 0 && delivered_ > app_limited_until_) app_limited_until_ = 0;
    cc::RateSample r;
    r.total_delivered = delivered_;
    r.newly_lost = lost_ - lost_at_sample_;
    lost_at_sample_ = lost_;
    if (!pending_.has) {
        pending_ = {};
        return r;
    }
    r.newly_acked = pending_.newly_acked;
    r.prior_delivered = pending_.prior_delivered;
    r.delivered = delivered_ - pending_.prior_delivered;
    r.is_app_limited = pending_.is_app_limited;
    r.rtt = pending_.rtt;
    r.tx_in_flight = pending_.tx_in_flight;
    r.lost = lost_ - pending_.lost_at_send;
    r.interval = std::max(pending_.send_elapsed, pending_.ack_elapsed);
    pending_ = {};
    // §3.3: an interval under min_rtt (when one is known) is not trusted.
    if (r.interval <= Duration::zero() || (min_rtt > Duration::zero() && r.interval < min_rtt)) return r;
    r.valid = true;
    r.delivery_rate = static_cast<double>(r.delivered) / to_seconds(r.interval);
    return r;
}

void DeliveryRate::on_app_limited(std::uint64_t bytes_in_flight) {
    app_limited_until_ = std::max<std::uint64_t>(delivered_ + bytes_in_flight, 1);
}

}  // namespace ndm::transport
