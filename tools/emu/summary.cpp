#include "tools/emu/summary.hpp"

#include <fmt/format.h>

namespace ndm::tools {

namespace {
std::string direction_line(const char* name, const emu::EmuStats& s) {
    std::string reasons;
    for (std::size_t r = 0; r < emu::kDropReasons; ++r)
        reasons += fmt::format("{}{} {}", r ? ", " : "", emu::to_string(static_cast<emu::DropReason>(r)), s.dropped[r]);
    return fmt::format("[emu] {}: sent {}, delivered {}, dropped {} ({})\n", name, s.sent, s.delivered,
                       s.total_dropped(), reasons);
}
}  // namespace

std::string emu_summary_text(const emu::EmuStats& up, const emu::EmuStats& down) {
    return direction_line("up", up) + direction_line("down", down);
}

nlohmann::json emu_summary_json(const emu::EmuStats& s) {
    nlohmann::json drops = nlohmann::json::object();
    for (std::size_t r = 0; r < emu::kDropReasons; ++r) drops[emu::to_string(static_cast<emu::DropReason>(r))] = s.dropped[r];
    return {{"sent", s.sent}, {"delivered", s.delivered}, {"dropped", s.total_dropped()}, {"drops", drops}};
}

}  // namespace ndm::tools
