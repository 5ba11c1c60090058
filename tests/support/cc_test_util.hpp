// Shared fixtures for the congestion-controller and simulated-transfer tests:
// synthetic ACK and congestion events (no network) and a lossy end-to-end transfer in virtual
// time. Each controller's test file builds its own scenarios from these.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "ndm/cc.hpp"
#include "ndm/sim.hpp"

namespace ndm::test {

// The max datagram size every controller test uses (RFC 9002 §7.2 MDS).
inline constexpr std::uint64_t kMds = 1200;

inline Instant at(Duration d) { return Instant{} + d; }

inline cc::Params cc_params(std::uint64_t mds = kMds) {
    cc::Params p;
    p.max_datagram_size = mds;
    p.now = Instant{};
    return p;
}

// An ACK of `bytes` (in MDS-sized packets) whose largest packet was sent at
// `sent`. With `rtt` it carries an RTT sample with latest = smoothed = min.
inline cc::AckEvent ack_event(Instant now, std::uint64_t bytes, Instant sent,
                              std::optional<Duration> rtt = std::nullopt, bool app_limited = false) {
    cc::AckEvent ev;
    ev.now = now;
    ev.bytes_acked = bytes;
    ev.packets_acked = (bytes + kMds - 1) / kMds;
    if (rtt) {
        ev.has_rtt_sample = true;
        ev.latest_rtt = *rtt;
        ev.smoothed_rtt = *rtt;
        ev.min_rtt = *rtt;
    }
    ev.largest_acked_sent_time = sent;
    ev.app_limited = app_limited;
    return ev;
}

// The loss of `packets` MDS-sized packets, the largest sent at `largest_lost_sent`.
inline cc::CongestionEvent loss_event(Instant now, Instant largest_lost_sent, bool persistent = false,
                                      std::uint64_t packets = 1) {
    cc::CongestionEvent ev;
    ev.now = now;
    ev.bytes_lost = packets * kMds;
    ev.packets_lost = packets;
    ev.largest_lost_sent_time = largest_lost_sent;
    ev.persistent = persistent;
    return ev;
}

// A bulk transfer of `bytes` from a `client_cc` sender to a `server_cc`
// receiver over `link` in both directions. Seeds are `seed`, `seed + 1`, ...
// for the client, the server, the two link directions and the payload.
inline sim::TransferSpec lossy_transfer(const std::string& client_cc, const std::string& server_cc,
                                        const sim::SimpleLinkConfig& link, std::uint64_t bytes,
                                        std::uint64_t seed) {
    using namespace std::chrono_literals;
    sim::TransferSpec spec;
    spec.client.cc = client_cc;
    spec.client.seed = seed;
    spec.server.cc = server_cc;
    spec.server.seed = seed + 1;
    spec.client_to_server = link;
    spec.client_to_server.seed = seed + 2;
    spec.server_to_client = link;
    spec.server_to_client.seed = seed + 3;
    spec.bytes = bytes;
    spec.deadline = 600s;
    spec.seed = seed + 4;
    return spec;
}

// The index of the first element where two runs of equal length (a
// controller's windows after each event, say) differ; got.size() when they
// agree throughout. Check the sizes first: a shorter run is not compared past its end.
template <typename T>
std::size_t first_difference(const std::vector<T>& got, const std::vector<T>& ref) {
    const auto diff = std::mismatch(got.begin(), got.end(), ref.begin(), ref.end()).first;
    return static_cast<std::size_t>(std::distance(got.begin(), diff));
}

}  // namespace ndm::test
