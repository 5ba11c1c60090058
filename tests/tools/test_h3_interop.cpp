// ndm-h3 interop's test cases (tools/h3/interop.hpp): what the endpoint does
// for each name the QUIC Interop Runner hands it (testcases.py's testname()),
// and that a case it cannot run says what it lacks (exit 127).
#include <doctest/doctest.h>

#include <string>

#include "tools/h3/interop.hpp"

using ndm::tools::h3::interop_case;

TEST_CASE("interop: the runner's test names an endpoint is given are supported in both roles") {
    for (const char* name : {"handshake", "transfer", "http3", "multiconnect", "chacha20", "retry", "ecn"}) {
        CAPTURE(name);
        CHECK(interop_case(name, true).supported);
        CHECK(interop_case(name, false).supported);
    }
    // Case names that map onto a test name are accepted as well.
    for (const char* name : {"longrtt", "multiplexing", "blackhole", "handshakeloss", "transferloss",
                             "handshakecorruption", "transfercorruption", "amplificationlimit", "ipv6", "goodput"}) {
        CAPTURE(name);
        CHECK(interop_case(name, true).supported);
    }
}

TEST_CASE("interop: each case's own behaviour lands on the role that has it") {
    CHECK(interop_case("retry", false).retry);
    CHECK_FALSE(interop_case("retry", true).retry);
    CHECK(interop_case("chacha20", true).chacha20_only);
    CHECK_FALSE(interop_case("chacha20", false).chacha20_only);
    CHECK(interop_case("multiconnect", true).one_per_request);
    CHECK(interop_case("handshakeloss", true).one_per_request);
    CHECK_FALSE(interop_case("transfer", true).one_per_request);
    CHECK_FALSE(interop_case("handshake", false).retry);
    // The runner's case timeout bounds a handshake, not the endpoint's 10 s default; multiconnect's
    // handshakes under 30 % loss get longer still, in either role.
    CHECK(interop_case("transfer", true).handshake_timeout_s == 60);
    CHECK(interop_case("amplificationlimit", false).handshake_timeout_s == 60);
    CHECK(interop_case("multiconnect", true).handshake_timeout_s == 180);
    CHECK(interop_case("handshakecorruption", false).handshake_timeout_s == 180);
}

TEST_CASE("interop: an unsupported case names what ndm lacks") {
    for (const char* name : {"resumption", "zerortt", "v2", "rebind-port", "rebind-addr", "connectionmigration",
                             "no-such-case"}) {
        CAPTURE(name);
        const auto c = interop_case(name, true);
        CHECK_FALSE(c.supported);
        CHECK_FALSE(c.why.empty());
    }
    // keyupdate: the server answers the peer's update, the client starts one (Connection::request_key_update).
    CHECK(interop_case("keyupdate", false).supported);
    CHECK_FALSE(interop_case("keyupdate", false).key_update);
    const auto client = interop_case("keyupdate", true);
    CHECK(client.supported);
    CHECK(client.key_update);
}
