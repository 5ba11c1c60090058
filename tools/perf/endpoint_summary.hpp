// An endpoint's closing counts (ndm::EndpointStats) for -V and -J: how many
// datagrams crossed the socket in how many system calls and service passes,
// which tells where a test's cost per byte went (e.g. many connections
// sending smaller batches, or more ACK datagrams per data datagram).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ndm/endpoint.hpp"

namespace ndm::tools {

// "Endpoint: 1000 datagrams sent in 40 send calls, 500 received; 300 passes, 310 connection turns\n",
// and a second line for the kernel's drops and send errors when there were any.
[[nodiscard]] std::string endpoint_summary_text(const EndpointStats& s);
// {"datagrams_sent": .., "send_calls": .., "datagrams_received": .., "receive_drops": .., "send_errors": ..,
//  "turns": .., "connection_turns": ..}
[[nodiscard]] nlohmann::json endpoint_summary_json(const EndpointStats& s);

}  // namespace ndm::tools
