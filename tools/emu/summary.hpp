// The emulator's closing counts per direction, for the tools that run it on
// their own socket (ndm-send --emu): what was sent, delivered and dropped for
// which reason (DropReason), so a run's loss can be told from the path's.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ndm/emu.hpp"

namespace ndm::tools {

// "[emu] up: sent 10, delivered 8, dropped 2 (random 0, ..., blackhole 2)\n", one line per direction.
[[nodiscard]] std::string emu_summary_text(const emu::EmuStats& up, const emu::EmuStats& down);
// {"sent": .., "delivered": .., "dropped": .., "drops": {"random": .., ..., "blackhole": ..}}
[[nodiscard]] nlohmann::json emu_summary_json(const emu::EmuStats& s);

}  // namespace ndm::tools
