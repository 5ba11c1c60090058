// Pieces run_transfer and run_shared_path share.
#pragma once

#include <memory>

#include "ndm/sim.hpp"

namespace ndm::sim {

// The factory's link, or a SimpleLink from `config` when there is no factory.
// Throws std::invalid_argument (prefixed by `who`) when the factory returns null.
std::unique_ptr<Link> build_link(const LinkFactory& factory, const SimpleLinkConfig& config, const char* who);
// Copies how each side's connection ended into r.
void fill_close_info(const Simulator& sim, TransferResult& r);

}  // namespace ndm::sim
