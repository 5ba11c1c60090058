#include "tools/perf/datagram_test.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace ndm::tools {

namespace {

void put_u64(std::uint8_t* p, std::uint64_t v) {
    for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}

std::uint64_t get_u64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
    return v;
}

// The filler byte at index i of datagram seq: changes with both, so a
// datagram's bytes or another's in its place show.
std::uint8_t filler(std::uint64_t seq, std::size_t i) {
    return static_cast<std::uint8_t>((seq * 0x9e3779b97f4a7c15ULL + i * 131) >> 56);
}

}  // namespace

void fill_datagram(std::span<std::uint8_t> out, std::uint64_t seq, std::uint64_t send_ns) {
    put_u64(out.data(), seq);
    put_u64(out.data() + 8, send_ns);
    for (std::size_t i = kDatagramHeader; i < out.size(); ++i) out[i] = filler(seq, i);
}

bool DatagramReceiver::seen(std::uint64_t seq) const {
    const std::uint64_t i = seq % kWindow;
    return (bits_[i / 64] >> (i % 64)) & 1;
}

void DatagramReceiver::mark(std::uint64_t seq) {
    const std::uint64_t i = seq % kWindow;
    bits_[i / 64] |= std::uint64_t{1} << (i % 64);
}

void DatagramReceiver::on_datagram(std::span<const std::uint8_t> payload, Instant now) {
    if (payload.size() < kDatagramHeader) {
        ++total_.malformed;
        return;
    }
    const std::uint64_t seq = get_u64(payload.data());
    const std::uint64_t sent_ns = get_u64(payload.data() + 8);
    bool intact = seq < kMaxDatagramSeq;
    for (std::size_t i = kDatagramHeader; intact && i < payload.size(); ++i) intact = payload[i] == filler(seq, i);
    if (!intact) {
        ++total_.malformed;
        return;
    }
    if (seq >= total_.expected) {
        // Forget the window's slots the new highest number passes over.
        for (std::uint64_t s = std::max(total_.expected, seq >= kWindow ? seq - kWindow + 1 : 0);
             s <= seq && s < total_.expected + kWindow; ++s) {
            const std::uint64_t i = s % kWindow;
            bits_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
        }
        total_.expected = seq + 1;
    } else if (total_.expected - seq > kWindow) {
        ++total_.out_of_order;  // too old to tell a duplicate: counted, not delivered twice in the counts
        return;
    } else if (seen(seq)) {
        ++total_.duplicates;
        return;
    } else {
        ++total_.out_of_order;
    }
    mark(seq);
    ++total_.received;
    total_.bytes += payload.size();
    // RFC 3550 §6.4.1: J += (|D(i-1,i)| - J) / 16, D the change in transit time.
    const double transit =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()) -
        static_cast<double>(sent_ns);
    if (have_transit_) jitter_ns_ += (std::fabs(transit - last_transit_ns_) - jitter_ns_) / 16;
    last_transit_ns_ = transit;
    have_transit_ = true;
    total_.jitter_ms = jitter_ns_ / 1e6;
}

DatagramCounts DatagramReceiver::take_interval() {
    DatagramCounts d;
    d.received = total_.received - at_interval_.received;
    d.bytes = total_.bytes - at_interval_.bytes;
    d.expected = total_.expected - at_interval_.expected;
    d.out_of_order = total_.out_of_order - at_interval_.out_of_order;
    d.duplicates = total_.duplicates - at_interval_.duplicates;
    d.malformed = total_.malformed - at_interval_.malformed;
    d.jitter_ms = total_.jitter_ms;
    at_interval_ = total_;
    return d;
}

std::string loss_text(std::uint64_t lost, std::uint64_t total) {
    const double pct = total ? 100.0 * static_cast<double>(lost) / static_cast<double>(total) : 0.0;
    return fmt::format("{}/{} ({:.2g}%)", lost, total, pct);
}

std::string datagram_row(const DatagramCounts& c) {
    return fmt::format("  {:7.3f} ms  {:>18}", c.jitter_ms, loss_text(c.lost(), c.expected));
}

void datagram_json(nlohmann::json& j, const DatagramCounts& c) {
    j["jitter_ms"] = c.jitter_ms;
    j["lost_packets"] = c.lost();
    j["packets"] = c.expected;
    j["lost_percent"] = c.expected ? 100.0 * static_cast<double>(c.lost()) / static_cast<double>(c.expected) : 0.0;
    j["out_of_order"] = c.out_of_order;
    j["duplicates"] = c.duplicates;
    j["malformed"] = c.malformed;
}

ReceiverReport::Datagrams report_of(const DatagramCounts& c) {
    return {c.received, c.expected, c.out_of_order, c.duplicates, c.malformed, c.jitter_ms};
}

}  // namespace ndm::tools
