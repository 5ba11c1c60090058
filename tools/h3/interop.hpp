// ndm-h3 interop: the endpoint contract of the QUIC Interop Runner
// (quic-interop/quic-interop-runner, its README's "Building a QUIC
// endpoint"): ROLE (client or server) and TESTCASE
// from the environment, the client's URLs in REQUESTS (space separated) saved
// into the downloads directory, the server's files from the www directory,
// SSLKEYLOGFILE and QLOGDIR honoured. Exit 127 for a test case this endpoint
// does not support. Every case runs over HTTP/3 (ALPN h3): the public runner
// uses hq-interop (HTTP/0.9) for all but http3, which nghttp3 does not speak,
// so these cases interoperate with h3 peers only (docs/interop.md).
#pragma once

#include <cstdint>
#include <string>

#include "tools/h3/get.hpp"
#include "tools/h3/serve.hpp"

namespace ndm::tools::h3 {

struct InteropOptions {
    std::string www = "/www", downloads = "/downloads", certs = "/certs";
    std::string bind = "::";
    std::uint16_t port = 443;
    CommonOptions common;  // --no-gso, --cc, --qlog (QLOGDIR when unset) ...
};

// What an endpoint does for a test case. The runner hands an endpoint the
// case's "test name" (testcases.py's testname(): longrtt, multiplexing,
// blackhole, transferloss, ipv6, goodput ... run as "transfer" or
// "handshake", handshakeloss and handshakecorruption as "multiconnect");
// the case names themselves are accepted too, so that a case can be run by
// hand under its own name.
struct InteropCase {
    bool supported = false;
    std::string why;              // when not supported: what this endpoint lacks
    bool retry = false;           // server: a Retry for every new connection (retry)
    bool chacha20_only = false;   // client: offer TLS_CHACHA20_POLY1305_SHA256 only (chacha20)
    bool one_per_request = false; // client: one connection per URL, in turn (multiconnect)
    bool key_update = false;      // client: a key update as soon as one is allowed (keyupdate, RFC 9001 §6)
    // Seconds a handshake may take, both roles: the runner bounds each case (60 s, 300 s for
    // handshakeloss and handshakecorruption), so an endpoint's own 10 s default must not end one
    // first: amplificationlimit's dropped datagrams leave the handshake to the client's PTO
    // backoff, multiconnect's 30 % loss each way can hold a handshake past 10 s.
    double handshake_timeout_s = 0;
};
InteropCase interop_case(const std::string& testcase, bool client);

// Exit code: the role's (run_get's, run_serve's), 127 for an unsupported
// case, 2 for a missing or unknown ROLE or TESTCASE, or no REQUESTS.
int run_interop(InteropOptions& o);

}  // namespace ndm::tools::h3
