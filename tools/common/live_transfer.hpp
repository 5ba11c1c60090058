// One timed bulk transfer over real UDP sockets on loopback: a server
// Endpoint on its own thread, a client Endpoint with the emulator on its
// egress (client → server, "up") and ingress (server → client, "down") path,
// like netem on a loopback interface. Reports what ndm-compare prints.
#pragma once

#include <functional>
#include <string>

#include "common/idle_timeout.hpp"
#include "common/report.hpp"
#include "ndm/loss_detection.hpp"
#include "ndm/endpoint.hpp"

namespace ndm::tools {

struct LiveSpec {
    std::string cc;
    std::string cc_options;
    std::size_t packet_size = 1452;
    double seconds = 10;
    double interval = 1;
    std::uint64_t seed = 1;
    IoBackend backend = IoBackend::automatic;
    LinkFactory up;    // client egress; may be empty
    LinkFactory down;  // client ingress; may be empty
    Duration idle_timeout = idle_timeout_duration(kDefaultIdleTimeoutSeconds);  // both sides (--idle-timeout)
    LossDetection loss_detection = LossDetection::adaptive;  // the sender's (--loss-detection)
    std::function<void(double elapsed_s)> progress;
};

RunResult run_live(const LiveSpec& spec);

}  // namespace ndm::tools
