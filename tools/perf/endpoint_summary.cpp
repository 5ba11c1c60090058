#include "tools/perf/endpoint_summary.hpp"

#include <fmt/format.h>

#include "tools/cli/units.hpp"

namespace ndm::tools {

std::string endpoint_summary_text(const EndpointStats& s) {
    std::string out = fmt::format("Endpoint: {} datagrams sent in {} send calls, {} received; {} passes, {} connection turns\n",
                                  s.datagrams_sent, s.send_calls, s.datagrams_received, s.turns, s.connection_turns);
    if (s.receive_budget_max > 0)
        out += fmt::format("Endpoint: receive budget {} in use at the end, at most {} (--receive-budget, capped by the "
                           "socket's receive buffer)\n",
                           format_bytes(static_cast<double>(s.receive_budget)),
                           format_bytes(static_cast<double>(s.receive_budget_max)));
    if (s.receive_drops + s.send_errors > 0)
        out += fmt::format("Endpoint: the kernel dropped {} receives for a full buffer (a GSO batch counts once; the "
                           "receive budget was halved {} times for them) and refused {} sends\n",
                           s.receive_drops, s.receive_budget_cuts, s.send_errors);
    return out;
}

nlohmann::json endpoint_summary_json(const EndpointStats& s) {
    return {{"datagrams_sent", s.datagrams_sent}, {"send_calls", s.send_calls},
            {"datagrams_received", s.datagrams_received}, {"receive_drops", s.receive_drops},
            {"receive_budget_cuts", s.receive_budget_cuts}, {"receive_budget", s.receive_budget},
            {"receive_budget_max", s.receive_budget_max},
            {"send_errors", s.send_errors}, {"turns", s.turns}, {"connection_turns", s.connection_turns}};
}

}  // namespace ndm::tools
