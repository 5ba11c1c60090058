// The emulator as the tools use it: one emulated path per direction shared by
// an endpoint's connections (ndm-send --emu and --profile).
#pragma once

#include <memory>

#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"

namespace ndm::tools {

// One emulated path per direction for all the connections an endpoint makes
// or accepts: the connections of one test share the bottleneck (its queue,
// rate or trace and random streams), as they would on a real network, rather
// than each getting its own copy of it. `egress` is the direction this
// endpoint's sends take: up for a client, down for a server.
struct SharedEmuPath {
    std::shared_ptr<emu::SharedLink> egress, ingress;
};
inline SharedEmuPath share_emulated_path(EndpointConfig& cfg, const emu::Profile& profile, std::uint64_t seed,
                                         emu::Direction egress = emu::Direction::up) {
    const emu::Direction ingress = egress == emu::Direction::up ? emu::Direction::down : emu::Direction::up;
    SharedEmuPath p{std::make_shared<emu::SharedLink>(emu::make_link(profile, egress, seed)),
                    std::make_shared<emu::SharedLink>(emu::make_link(profile, ingress, seed))};
    cfg.egress_link = [l = p.egress] { return l->port(); };
    cfg.ingress_link = [l = p.ingress] { return l->port(); };
    return p;
}

}  // namespace ndm::tools
