// SimpleLink: deterministic loss, duplication, corruption, reordering, rate
// limiting with a droptail queue, delay and blackhole windows.
#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <utility>

#include "ndm/sim.hpp"
#include "util/rng.hpp"

namespace ndm::sim {

namespace {
struct Packet {
    Instant at;
    std::uint64_t seq;  // send order: breaks ties so equal times stay FIFO
    std::vector<std::uint8_t> data;
    Ecn ecn;
};
}  // namespace

struct SimpleLink::State {
    explicit State(std::uint64_t seed)
        // Independent streams per decision, so one knob does not shift another's pattern.
        : loss(util::splitmix64(seed ^ 0x6c6f7373)),
          duplicate(util::splitmix64(seed ^ 0x64757020)),
          corrupt(util::splitmix64(seed ^ 0x636f7272)),
          reorder(util::splitmix64(seed ^ 0x72656f72)) {}

    util::Xoshiro256 loss, duplicate, corrupt, reorder;
    // Both queues are sorted by `at`: in-order packets get monotonic times
    // (FIFO transmitter, constant delay) and so do held-back ones (constant extra).
    std::deque<Packet> in_order;
    std::deque<Packet> held;
    std::deque<Instant> tx_end;  // serialization end of each packet still in the queue
    Instant tx_free_at{Instant::min()};
    double tx_carry_ns = 0;  // sub-nanosecond remainder of back-to-back serialization
    Instant last_send{Instant::min()};
    std::uint64_t seq = 0;
    std::vector<std::vector<std::uint8_t>> pool;  // recycled buffers: no allocation in steady state

    std::vector<std::uint8_t> buffer(std::span<const std::uint8_t> bytes) {
        std::vector<std::uint8_t> b;
        if (!pool.empty()) {
            b = std::move(pool.back());
            pool.pop_back();
        }
        b.assign(bytes.begin(), bytes.end());
        return b;
    }
};

SimpleLink::SimpleLink(SimpleLinkConfig config)
    : config_(std::move(config)), state_(std::make_unique<State>(config_.seed)) {
    auto probability = [](double p, const char* what) {
        if (!(p >= 0 && p <= 1)) throw std::invalid_argument(std::string("SimpleLink: ") + what + " must be in [0, 1]");
    };
    probability(config_.loss, "loss");
    probability(config_.duplicate, "duplicate");
    probability(config_.corrupt, "corrupt");
    probability(config_.reorder, "reorder");
    if (config_.delay < Duration::zero() || config_.reorder_extra_delay < Duration::zero())
        throw std::invalid_argument("SimpleLink: delays must be non-negative");
    if (!(config_.rate_bps >= 0) || std::isinf(config_.rate_bps))
        throw std::invalid_argument("SimpleLink: rate must be finite and non-negative");
    if (config_.rate_bps > 0 && config_.queue_packets == 0)
        throw std::invalid_argument("SimpleLink: queue must hold at least one packet");
}

SimpleLink::~SimpleLink() = default;

std::size_t SimpleLink::queued() const { return state_->in_order.size() + state_->held.size(); }

void SimpleLink::send(const DatagramView& sent, Instant now) {
    const std::span<const std::uint8_t> datagram = sent.bytes;
    State& s = *state_;
    now = std::max(now, s.last_send);  // keep the queues sorted even if a caller goes back in time
    s.last_send = now;
    ++stats_.sent;

    for (const auto& [begin, end] : config_.outages) {
        if (now >= begin && now < end) {
            ++stats_.dropped_outage;
            return;
        }
    }
    if (s.loss.chance(config_.loss)) {
        ++stats_.dropped_random;
        return;
    }
    int copies = 1;
    if (s.duplicate.chance(config_.duplicate)) {
        ++stats_.duplicated;
        copies = 2;
    }

    for (int c = 0; c < copies; ++c) {
        Instant at = now;
        if (config_.rate_bps > 0) {
            while (!s.tx_end.empty() && s.tx_end.front() <= now) s.tx_end.pop_front();
            if (s.tx_end.size() >= config_.queue_packets) {
                ++stats_.dropped_queue;
                continue;
            }
            Instant start = now;
            if (s.tx_free_at > now) {
                start = s.tx_free_at;
            } else {
                s.tx_carry_ns = 0;  // the transmitter was idle: no remainder to carry
            }
            const double exact = static_cast<double>(datagram.size()) * 8e9 / config_.rate_bps + s.tx_carry_ns;
            const double whole = std::floor(exact);
            s.tx_carry_ns = exact - whole;
            at = start + Duration(static_cast<Duration::rep>(whole));
            s.tx_free_at = at;
            s.tx_end.push_back(at);
        }
        Packet p{at + config_.delay, s.seq++, s.buffer(datagram), sent.ecn};
        if (!p.data.empty() && s.corrupt.chance(config_.corrupt)) {
            ++stats_.corrupted;
            const std::uint64_t bit = s.corrupt.below(p.data.size() * 8);
            p.data[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        }
        if (s.reorder.chance(config_.reorder)) {
            ++stats_.reordered;
            p.at += config_.reorder_extra_delay;
            s.held.push_back(std::move(p));
        } else {
            s.in_order.push_back(std::move(p));
        }
    }
}

Instant SimpleLink::next_delivery() const {
    const State& s = *state_;
    Instant t = kNever;
    if (!s.in_order.empty()) t = s.in_order.front().at;
    if (!s.held.empty()) t = std::min(t, s.held.front().at);
    return t;
}

bool SimpleLink::deliver(Instant now, Datagram& out) {
    State& s = *state_;
    std::deque<Packet>* q = nullptr;
    if (!s.in_order.empty()) q = &s.in_order;
    if (!s.held.empty()) {
        const Packet& h = s.held.front();
        if (q == nullptr || h.at < q->front().at || (h.at == q->front().at && h.seq < q->front().seq)) q = &s.held;
    }
    if (q == nullptr || q->front().at > now) return false;
    out.bytes.swap(q->front().data);
    out.ecn = q->front().ecn;
    s.pool.push_back(std::move(q->front().data));  // the caller's old buffer, reused later
    q->pop_front();
    ++stats_.delivered;
    return true;
}

}  // namespace ndm::sim
