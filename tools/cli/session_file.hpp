// --session-file FILE (ndm-send, ndm-h3 get): what a client keeps between
// runs to resume its next connection to the same server, in one file where
// ngtcp2's gtlsclient uses two (--session-file, --tp-file) and a third for
// its token (--token-file): the latest session ticket with the server's
// transport parameters (tls::ResumptionTicket, RFC 9001 §4.5, RFC 9000
// §7.4.1) and the latest NEW_TOKEN token (RFC 9000 §8.1.3).
// Format: "ndm-resume v1\n", then the ticket's bytes and the token, each a
// 32-bit big-endian length and its bytes (0: none). Written 0600, replaced
// whole (a temporary file renamed over it). A missing file is an empty
// session (the first run makes it); anything unreadable is an error naming
// the file, as a bad command line is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ndm/connection.hpp"
#include "ndm/tls.hpp"

namespace ndm::tools {

struct SessionFile {
    std::optional<tls::ResumptionTicket> ticket;
    std::vector<std::uint8_t> token;

    // Throws std::invalid_argument "--session-file FILE: why" for a file that
    // exists but is not one (or cannot be read); a missing file is empty.
    static SessionFile load(const std::string& path);
    // Throws std::runtime_error "--session-file FILE: why" when it cannot be written.
    void save(const std::string& path) const;

    // Puts the ticket (TlsOptions::resume, with 0-RTT unless `no_early_data`)
    // and the token into a client's connection config.
    void apply(ConnectionConfig& c, bool early_data) const;
    // Keeps what an event gives (event::SessionTicket, event::NewToken);
    // true when it was one of them.
    bool take(const Event& ev);
};

// --session-file FILE, and --no-early-data when `early_data_help` says what it does.
struct SessionFlags {
    std::string file;
    bool no_early_data = false;
};
void add_session_flags(CLI::App& app, SessionFlags& flags, const std::string& early_data_help);

}  // namespace ndm::tools
