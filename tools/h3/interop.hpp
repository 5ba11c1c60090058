// ndm-h3 interop: the endpoint contract of the QUIC Interop Runner
// (quic-interop/quic-interop-runner, its README's "Building a QUIC
// endpoint"): ROLE (client or server) and TESTCASE
// from the environment, the client's URLs in REQUESTS (space separated) saved
// into the downloads directory, the server's files from the www directory,
// SSLKEYLOGFILE and QLOGDIR honoured. Exit 127 for a test case this endpoint
// does not support: every case but http3 needs ALPN hq-interop (HTTP/0.9),
// which nghttp3 does not speak.
#pragma once

#include <cstdint>
#include <string>

#include "tools/h3/get.hpp"
#include "tools/h3/serve.hpp"

namespace ndm::tools::h3 {

struct InteropOptions {
    std::string www = "/www", downloads = "/downloads", certs = "/certs";
    std::uint16_t port = 443;
};

// Exit code: the role's (run_get's, run_serve's), 127 for an unsupported
// case, 2 for a missing or unknown ROLE or TESTCASE, or no REQUESTS.
int run_interop(const InteropOptions& o);

}  // namespace ndm::tools::h3
