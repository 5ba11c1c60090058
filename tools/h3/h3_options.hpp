// What both of ndm-h3's roles take from the command line, and the endpoint
// configuration made of it: the controller, the emulated path, qlog, the
// socket backend, the connection flags and TLS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ndm/emu.hpp"
#include "ndm/endpoint.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/emu/shared_path.hpp"

namespace ndm::tools::h3 {

struct CommonOptions {
    std::string cc = "cubic";
    std::string emu, profile;  // --emu SPEC, --profile NAME
    std::string qlog;
    std::string io = "auto";
    std::uint64_t seed = 1;
    bool no_gso = false;
    bool verbose = false;
    ConnectionFlags conn;
    // Bytes each stream buffers for sending (ConnectionConfig::stream_send_buffer):
    // the memory a response in progress may hold in the transport.
    std::string send_buffer = "4M";
};

// -C/--congestion, --emu, --profile, --qlog, --io, --seed, --no-gso,
// --idle-timeout, --loss-detection, --receive-budget, --cc-plugin, --send-buffer, -V.
void add_common_options(CLI::App& app, CommonOptions& o);

// Checks what the flags name before any socket exists (the controller, the
// emulator spec or preset, the qlog directory, the backend); throws
// std::invalid_argument naming the problem. Returns the emulated path's profile, if any.
std::optional<emu::Profile> check_common(const CommonOptions& o);

// The endpoint's configuration: ALPN h3, the unidirectional streams HTTP/3
// needs, the controller and the flags. `path` keeps the shared emulated path
// (egress: up for a client, down for a server).
EndpointConfig endpoint_config(const CommonOptions& o, const std::optional<emu::Profile>& profile, TlsOptions tls,
                               emu::Direction egress, std::optional<SharedEmuPath>& path);

}  // namespace ndm::tools::h3
