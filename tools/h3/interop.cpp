#include "tools/h3/interop.hpp"

#include <array>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "tools/cli/printable.hpp"

namespace ndm::tools::h3 {

namespace {
std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// Cases whose endpoint behaviour is plain HTTP/3 file transfer: the runner's
// test names for them and the case names that map onto them.
constexpr std::array<std::string_view, 13> kPlain{
    "handshake", "transfer", "http3", "ecn", "longrtt", "multiplexing", "blackhole", "transferloss",
    "transfercorruption", "amplificationlimit", "ipv6", "goodput", "crosstraffic"};
constexpr std::array<std::string_view, 3> kMulticonnect{"multiconnect", "handshakeloss", "handshakecorruption"};
// Handshake timeouts (InteropCase::handshake_timeout_s): the runner's case timeout, and
// multiconnect's as ngtcp2's interop endpoint gives them (--handshake-timeout=180s).
constexpr double kCaseHandshake = 60, kLongHandshake = 180;

bool in(std::string_view name, auto const& list) {
    for (const auto n : list)
        if (n == name) return true;
    return false;
}
}  // namespace

InteropCase interop_case(const std::string& t, bool client) {
    InteropCase c;
    if (t == "resumption") {
        c.why = "no session resumption: ndm's server sends no session ticket and its client resumes none (docs/tls.md)";
    } else if (t == "zerortt") {
        c.why = "no 0-RTT: no session tickets, early secrets ignored, 0-RTT CRYPTO refused (docs/tls.md)";
    } else if (t == "v2") {
        c.why = "ndm speaks QUIC v2 (RFC 9369) when a client starts in it (--quic-version 2), but not compatible "
                "version negotiation (RFC 9368 §2.3), the switch from v1 this case checks";
    } else if (t == "connectionmigration") {
        c.why = "no preferred_address transport parameter and no client migration (RFC 9000 §9)";
    } else if (t == "rebind-port" || t == "rebind-addr") {
        c.why = "no path validation on a peer address change (RFC 9000 §9.3)";
    } else if (t == "keyupdate") {
        c.supported = true;
        c.key_update = client;
    } else if (t == "chacha20") {
        c.supported = true;
        c.chacha20_only = client;
    } else if (t == "retry") {
        c.supported = true;
        c.retry = !client;
    } else if (in(t, kMulticonnect)) {
        c.supported = true;
        c.one_per_request = client;
        c.handshake_timeout_s = kLongHandshake;
    } else if (in(t, kPlain)) {
        c.supported = true;
    } else {
        c.why = "an unknown test case";
    }
    if (c.supported && c.handshake_timeout_s == 0) c.handshake_timeout_s = kCaseHandshake;
    return c;
}

int run_interop(InteropOptions& o) {
    const std::string role = env("ROLE"), testcase = env("TESTCASE");
    if (role != "client" && role != "server")
        throw std::invalid_argument(fmt::format("ROLE \"{}\": expected client or server", printable(role)));
    if (testcase.empty()) throw std::invalid_argument("TESTCASE is not set");
    const InteropCase c = interop_case(testcase, role == "client");
    if (!c.supported) {
        std::cerr << fmt::format("ndm-h3: test case {} is not supported as the {}: {}\n", printable(testcase), role,
                                 c.why);
        return 127;
    }
    CommonOptions common = o.common;
    if (common.qlog.empty()) common.qlog = env("QLOGDIR");  // SSLKEYLOGFILE: the TLS flags read it
    if (role == "server") {
        ServeOptions s;
        s.root = o.www;
        s.bind = o.bind;
        s.port = o.port;
        s.retry = c.retry ? "always" : "never";
        s.handshake_timeout_s = c.handshake_timeout_s;
        s.tls.cert = o.certs + "/cert.pem";
        s.tls.key = o.certs + "/priv.key";
        s.common = common;
        return run_serve(s);
    }
    GetOptions g;
    std::istringstream requests(env("REQUESTS"));
    std::vector<std::string> urls;
    for (std::string url; requests >> url;) urls.push_back(url);
    if (urls.empty()) throw std::invalid_argument("REQUESTS names no URL");
    g.out_dir = o.downloads;
    g.tls.insecure = true;  // the runner's certificates are made per run, for no name a client could check
    if (c.chacha20_only) g.tls.ciphers = {"chacha20"};
    g.key_update = c.key_update;
    g.connect_timeout_s = c.handshake_timeout_s;
    g.common = common;
    if (!c.one_per_request) {
        g.urls = std::move(urls);
        return run_get(g);
    }
    int rc = 0;  // every URL is tried; the first failure's code is the result
    for (auto& url : urls) {
        GetOptions one = g;
        one.urls = {url};
        if (const int r = run_get(one); r != 0 && rc == 0) rc = r;
    }
    return rc;
}

}  // namespace ndm::tools::h3
