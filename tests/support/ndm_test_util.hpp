// Shared fixtures for the ndm controller and ndm-train tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cc/ndm/model.hpp"
#include "ndm/emu.hpp"
#include "ndm/sim.hpp"

namespace ndm::test {

// A classifier that outputs the same P = σ(bias) for every loss: −20 forgives
// everything, +20 judges every loss congestive (Cubic's reaction).
inline cc::ndm::Model constant_model(float bias) {
    namespace nn = cc::ndm;
    nn::Model m;
    m.input_dim = nn::kFeatureCount;
    nn::Layer head;
    head.kind = nn::LayerKind::dense;
    head.act = nn::Act::sigmoid;
    head.in = nn::kFeatureCount;
    head.out = 1;
    head.params.assign(nn::kFeatureCount + 1, 0.0F);
    head.params.back() = bias;
    m.layers.push_back(head);
    m.validate();
    return m;
}

// A bulk transfer of 1452-byte datagrams from a `cc` sender over `profile`
// (its up direction client → server, down for the ACKs) for `send_for`;
// every seed derives from `seed`.
inline sim::TransferSpec emulated_transfer(const emu::Profile& profile, const std::string& cc, std::uint64_t seed,
                                           Duration send_for) {
    using namespace std::chrono_literals;
    sim::TransferSpec spec;
    spec.client.cc = cc;
    spec.client.max_datagram_size = spec.server.max_datagram_size = 1452;
    spec.client.seed = seed * 2 + 1;
    spec.server.seed = seed * 2 + 2;
    spec.client_to_server_factory = [profile, seed] { return emu::make_link(profile, emu::Direction::up, seed); };
    spec.server_to_client_factory = [profile, seed] { return emu::make_link(profile, emu::Direction::down, seed); };
    spec.send_for = send_for;
    spec.deadline = 120s;
    spec.seed = seed;
    return spec;
}

}  // namespace ndm::test
