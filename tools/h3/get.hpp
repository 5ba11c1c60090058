// ndm-h3 get: downloads URLs over one HTTP/3 connection, all requests in
// parallel (as many at once as the server's MAX_STREAMS allows; the rest
// follow as streams finish), each into a file of -o DIR or, in order, to
// standard output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/session_file.hpp"
#include "tools/cli/tls_flags.hpp"
#include "tools/h3/h3_options.hpp"

namespace ndm::tools::h3 {

struct Url {
    std::string text;       // as given
    std::string host;       // without brackets
    std::uint16_t port = 443;
    std::string authority;  // host[:port] as written, for :authority
    std::string path;       // "/..." with the query, never empty
};
// https://HOST[:PORT][/PATH]; throws std::invalid_argument naming the URL and the problem.
Url parse_url(const std::string& text);
// The file name a download gets in -o DIR: the path's last segment without
// the query, "index.html" for a path ending in '/'. Throws
// std::invalid_argument for a name that cannot be a file (".", "..").
std::string file_name(const Url& url);

struct GetOptions {
    std::vector<std::string> urls;
    std::string out_dir;  // -o; empty: standard output
    bool json = false;    // -J
    double connect_timeout_s = 10;
    // --key-update: ask for a 1-RTT key update (RFC 9001 §6) as soon as the
    // connection allows one, as ngtcp2's gtlsclient --key-update does.
    bool key_update = false;
    ClientTlsFlags tls;
    SessionFlags session;  // --session-file, --no-early-data
    CommonOptions common;
};

// Exit code: 0 when every response arrived whole with a 2xx status, 1 when
// one did not or the connection failed (each failure one line on standard
// error), 2 for bad input (checked before any packet is sent).
int run_get(GetOptions& o);

}  // namespace ndm::tools::h3
