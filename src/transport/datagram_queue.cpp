// The datagram queues of one connection (datagram_queue.hpp, RFC 9221).
#include "transport/datagram_queue.hpp"

#include "wire/frame.hpp"

namespace ndm::transport {

std::size_t datagram_payload_limit(std::size_t frame_limit) {
    // The length field's size depends on the payload's: take the largest
    // payload below the limit whose frame fits.
    const std::size_t empty = wire::datagram_frame_size(0);
    if (frame_limit < empty) return 0;
    std::size_t n = frame_limit - empty;
    while (n > 0 && wire::datagram_frame_size(n) > frame_limit) --n;
    return n;
}

DatagramQueue::DatagramQueue(std::size_t send_buffer, std::size_t receive_buffer, std::deque<Event>& events)
    : send_cap_(send_buffer), recv_cap_(receive_buffer), events_(events) {}

DatagramSendResult DatagramQueue::push(std::span<const std::uint8_t> payload) {
    const std::size_t charge = payload.size() + kDatagramOverhead;
    if (send_charged_ + charge > send_cap_) {
        ++counters_.refused;
        return {DatagramStatus::queue_full, 0};
    }
    send_.push_back({next_id_, std::vector<std::uint8_t>(payload.begin(), payload.end())});
    send_charged_ += charge;
    send_payload_bytes_ += payload.size();
    return {DatagramStatus::queued, next_id_++};
}

void DatagramQueue::write_frames(FrameSink& sink) {
    while (!send_.empty()) {
        Outgoing& d = send_.front();
        // RFC 9221 §5: never retransmitted; the record only names the datagram.
        if (!sink.put(wire::DatagramFrame{d.payload, true}, sent::Datagram{d.id})) return;
        ++counters_.sent;
        send_charged_ -= d.payload.size() + kDatagramOverhead;
        send_payload_bytes_ -= d.payload.size();
        send_.pop_front();
    }
}

void DatagramQueue::on_acked(std::uint64_t id) {
    ++counters_.acked;
    events_.push_back(event::DatagramAcked{id});
}

void DatagramQueue::on_lost(std::uint64_t id) {
    ++counters_.lost;
    events_.push_back(event::DatagramLost{id});
}

void DatagramQueue::on_received(std::span<const std::uint8_t> payload) {
    ++counters_.received;
    const std::size_t charge = payload.size() + kDatagramOverhead;
    if (charge > recv_cap_) {  // larger than the whole buffer: it alone is dropped
        note_dropped(1);
        return;
    }
    std::uint64_t dropped = 0;
    while (recv_charged_ + charge > recv_cap_) {  // the oldest make room (recv_ is not empty here)
        recv_charged_ -= recv_.front().size() + kDatagramOverhead;
        recv_.pop_front();
        ++dropped;
    }
    if (recv_.empty()) events_.push_back(event::DatagramReceived{});
    recv_.emplace_back(payload.begin(), payload.end());
    recv_charged_ += charge;
    if (dropped > 0) note_dropped(dropped);
}

void DatagramQueue::note_dropped(std::uint64_t n) {
    counters_.dropped += n;
    if (drop_told_) return;
    events_.push_back(event::DatagramsDropped{});
    drop_told_ = true;
}

std::optional<std::vector<std::uint8_t>> DatagramQueue::pop_received() {
    drop_told_ = false;
    if (recv_.empty()) return std::nullopt;
    std::vector<std::uint8_t> d = std::move(recv_.front());
    recv_.pop_front();
    recv_charged_ -= d.size() + kDatagramOverhead;
    return d;
}

}  // namespace ndm::transport
