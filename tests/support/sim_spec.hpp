// The simulator tests' common path: 100 Mbit/s, 10 ms one way, a queue of
// about one bandwidth-delay product (200 packets), the same seeds each time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "ndm/sim.hpp"

namespace ndm::test {

inline sim::TransferSpec hundred_mbit_spec(std::uint64_t bytes, const std::string& cc = "reno", double loss = 0) {
    using namespace std::chrono_literals;
    sim::TransferSpec spec;
    spec.client.cc = spec.server.cc = cc;
    spec.client.seed = 11;
    spec.server.seed = 12;
    sim::SimpleLinkConfig link;
    link.delay = 10ms;
    link.rate_bps = 100e6;
    link.queue_packets = 200;
    link.loss = loss;
    spec.client_to_server = link;
    spec.client_to_server.seed = 21;
    spec.server_to_client = link;
    spec.server_to_client.seed = 22;
    spec.bytes = bytes;
    spec.deadline = 3600s;
    spec.seed = 31;
    return spec;
}

}  // namespace ndm::test
