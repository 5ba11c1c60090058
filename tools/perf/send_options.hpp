// ndm-send's command line as its client runs it: the flags (ndm_send.cpp
// adds them) and what main() opens from them before any packet is sent.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ndm/endpoint.hpp"
#include "ndm/tls.hpp"
#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"
#include "tools/cli/connection_flags.hpp"
#include "tools/cli/session_file.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/perf/payload_file.hpp"

namespace ndm::tools::send {

struct Options {
    std::string host;
    std::uint16_t port = 5201;
    double seconds = 10;
    std::string bytes;  // -n, iperf3 units
    std::string cc = "cubic";
    double interval = 1;
    std::string emu;
    std::size_t packet_size = 1452;
    unsigned parallel = 1;
    bool reverse = false;
    bool bidir = false;  // --bidir
    std::string window;  // -w
    bool server_output = false;  // --get-server-output
    bool json = false;
    std::string qlog;  // directory
    std::uint64_t seed = 1;
    std::string io = "auto";
    std::chrono::system_clock::time_point started{};  // for the -J provenance record
    // --idle-timeout, --loss-detection, --ack-ranges (of the ACKs this side
    // sends: -R, --bidir), --ack-frequency, --receive-budget, --cc-plugin
    ConnectionFlags conn;
    ClientTlsFlags tls_flags;
    TlsOptions tls;  // from tls_flags, checked before any packet is sent
    SessionFlags session;  // --session-file
    SessionFile kept;      // what it held, read before any packet is sent
    bool no_gso = false;
    bool no_ecn = false;
    std::string bitrate;  // -b RATE[/BURST]
    bool udp = false;     // -u: a datagram test (tools/perf/datagram_client.hpp)
    std::uint32_t connect_timeout_ms = 5000;  // --connect-timeout
    double omit = 0;      // -O seconds
    OutputFlags output;   // -T, --logfile, --forceflush
    bool ipv4 = false, ipv6 = false;
    std::string bind;            // -B: local address ("" = any, dual-stack)
    std::uint16_t cport = 0;     // --cport: local port (0 = ephemeral)
    std::uint64_t blocks = 0;    // -k: blocks of kBlockSize
    bool verbose = false;        // -V
    std::string file;            // -F
    // -F's file, opened before any packet is sent: the one we send, or (-R) the one we write.
    std::shared_ptr<const FileSource> send_file;
    std::shared_ptr<FileSink> recv_file;
};

}  // namespace ndm::tools::send
