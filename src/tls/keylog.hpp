// NSS key log lines (the SSLKEYLOGFILE format Wireshark reads): "LABEL
// <client random, 64 hex> <secret, hex>", for CLIENT_HANDSHAKE_TRAFFIC_SECRET,
// SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0,
// SERVER_TRAFFIC_SECRET_0 and EXPORTER_SECRET (RFC 8446 §7.1), which is all a
// QUIC decoder needs (RFC 9001 §5.1).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ndm::tls {

// Receives one line, without its newline.
using KeylogSink = std::function<void(std::string_view line)>;

class KeylogError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

std::string keylog_line(std::string_view label, std::span<const std::uint8_t> client_random,
                        std::span<const std::uint8_t> secret);

// A sink that appends each line to `path` (created 0600), one write(2) per
// line with O_APPEND so that processes sharing the file do not interleave.
// Throws KeylogError naming the path when it cannot be opened; a later write
// error is logged once and the rest of the lines are dropped.
KeylogSink keylog_to_file(const std::string& path);

}  // namespace ndm::tls
