#include "tools/h3/interop.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace ndm::tools::h3 {

namespace {
std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}
}  // namespace

int run_interop(const InteropOptions& o) {
    const std::string role = env("ROLE"), testcase = env("TESTCASE");
    if (role != "client" && role != "server")
        throw std::invalid_argument(fmt::format("ROLE \"{}\": expected client or server", role));
    if (testcase.empty()) throw std::invalid_argument("TESTCASE is not set");
    if (testcase != "http3") {
        std::cerr << fmt::format("ndm-h3: test case {} is not supported (only http3: the others use ALPN "
                                 "hq-interop)\n", testcase);
        return 127;
    }
    CommonOptions common;
    common.qlog = env("QLOGDIR");  // SSLKEYLOGFILE: the TLS flags read it
    if (role == "server") {
        ServeOptions s;
        s.root = o.www;
        s.port = o.port;
        s.tls.cert = o.certs + "/cert.pem";
        s.tls.key = o.certs + "/priv.key";
        s.common = common;
        return run_serve(s);
    }
    GetOptions g;
    std::istringstream requests(env("REQUESTS"));
    for (std::string url; requests >> url;) g.urls.push_back(url);
    if (g.urls.empty()) throw std::invalid_argument("REQUESTS names no URL");
    g.out_dir = o.downloads;
    g.tls.insecure = true;  // the runner's certificates are made per run, for no name a client could check
    g.common = common;
    return run_get(g);
}

}  // namespace ndm::tools::h3
