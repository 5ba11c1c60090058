// The emulator links of one run, virtual (virtual_run.cpp) or on real
// sockets (live_run.cpp): made from the profile when the run asks for them,
// kept so that their statistics outlive the run. Common random numbers:
// every controller run with one seed gets the same impairment streams (the
// emulator draws each decision type from its own).
#pragma once

#include <cstdint>
#include <memory>

#include "ndm/emu.hpp"
#include "ndm/experiment.hpp"

namespace ndm::experiment {
// Internal linkage, as each run's own helper: nothing of it, nor of the
// std::function its factory becomes, reaches the library's symbol table.
namespace {

struct RunLinks {
    std::shared_ptr<emu::EmulatedLink> up, down;

    // Makes the link of direction d (up: sender → receiver) and keeps it.
    LinkFactory factory(const emu::Profile& profile, emu::Direction d, std::uint64_t seed) {
        return [this, &profile, d, seed] {
            auto& link = d == emu::Direction::up ? up : down;
            link = emu::make_link(profile, d, seed);
            return std::make_unique<emu::LinkRef>(link);
        };
    }
    // What the up link measured; nothing before it exists.
    [[nodiscard]] PathMetrics metrics() const { return up ? path_metrics(up->emu_stats()) : PathMetrics{}; }
};

}  // namespace
}  // namespace ndm::experiment
