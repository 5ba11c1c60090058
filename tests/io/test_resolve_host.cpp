// ndm::resolve_host and Endpoint::connect with host names: literals pass as
// they are, names go to the system's resolver (getaddrinfo), malformed hosts
// are bad input (std::invalid_argument), names that do not resolve a runtime
// failure (ResolveError), as the tools report them (exit 2 and 1).
#include <doctest/doctest.h>

#include <unistd.h>

#include <stdexcept>
#include <string>

#include "ndm/endpoint.hpp"
#include "skip.hpp"

using ndm::AddressFamily;
using ndm::resolve_host;

namespace {

// The message of the std::invalid_argument `host` raises, or "".
std::string malformed(const std::string& host) {
    try {
        (void)resolve_host(host);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("resolve_host: numeric addresses and localhost pass without a lookup") {
    CHECK(resolve_host("127.0.0.1") == "127.0.0.1");
    CHECK(resolve_host("::1") == "::1");
    CHECK(resolve_host("[::1]") == "::1");
    CHECK(resolve_host("[2001:db8::7]", AddressFamily::ipv6) == "2001:db8::7");
    CHECK(resolve_host("localhost") == "127.0.0.1");
    CHECK(resolve_host("192.0.2.1", AddressFamily::ipv4) == "192.0.2.1");
    CHECK_THROWS_WITH_AS(resolve_host("192.0.2.1", AddressFamily::ipv6), "'192.0.2.1' is not an IPv6 address",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(resolve_host("::1", AddressFamily::ipv4), "'::1' is not an IPv4 address", std::invalid_argument);
}

TEST_CASE("resolve_host: a host that is neither a literal nor a host name is bad input, named") {
    const std::string too_long_label(64, 'a');
    std::string too_long_name;
    for (int i = 0; i < 64; ++i) too_long_name += "abc.";
    for (const std::string& bad : {std::string(), std::string("a..b"), std::string(".a"), std::string("-a.example"),
                                   std::string("a-.example"), std::string("bad host"), std::string("a/b"),
                                   std::string("1.2.3.999"), std::string("127.1"), std::string("::1::2"),
                                   too_long_label + ".example", too_long_name + "x"}) {
        CAPTURE(bad);
        CHECK(malformed(bad) == "'" + bad + "' is neither a host name nor a numeric IPv4/IPv6 address");
    }
    CHECK_NOTHROW(ndm::check_host("example.org", "--client"));
    CHECK_NOTHROW(ndm::check_host("under_score.example.", "--client"));  // real zones carry them; a final dot
    CHECK_NOTHROW(ndm::check_host("[::1]", "--client"));
    CHECK_THROWS_WITH_AS(ndm::check_host("a..b", "--client"),
                         "--client: 'a..b' is neither a host name nor a numeric IPv4/IPv6 address", std::invalid_argument);
}

TEST_CASE("resolve_host: a name that does not resolve is a ResolveError naming it, not bad input") {
    // .invalid never resolves (RFC 6761 §6.4); offline, the lookup fails too.
    try {
        (void)resolve_host("nohost.invalid");
        FAIL("nohost.invalid resolved");
    } catch (const std::invalid_argument&) {
        FAIL("a well-formed name reported as bad input");
    } catch (const ndm::ResolveError& e) {
        CHECK(std::string(e.what()).rfind("cannot resolve host name 'nohost.invalid': ", 0) == 0);
    }
    // Endpoint::connect resolves the same way, before any connection exists.
    ndm::EndpointConfig cfg;
    cfg.bind_address = "127.0.0.1";
    ndm::Endpoint ep(cfg);
    CHECK_THROWS_AS((void)ep.connect("nohost.invalid", 4433), ndm::ResolveError);
    CHECK_THROWS_AS((void)ep.connect("a..b", 4433), std::invalid_argument);
    CHECK(ep.connection_count() == 0);
}

TEST_CASE("resolve_host: a name goes through the system's resolver") {
    // The machine's own name, where /etc/hosts maps it to a loopback address.
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || std::string(name).empty() || std::string(name) == "localhost") {
        ndm::test::skip_test("no host name other than localhost");
        return;
    }
    std::string address;
    try {
        address = resolve_host(name, AddressFamily::ipv4);
    } catch (const ndm::ResolveError& e) {
        ndm::test::skip_test(std::string("the host's own name does not resolve here: ") + e.what());
        return;
    }
    CAPTURE(name);
    CHECK(resolve_host(address) == address);  // a literal, which resolves to itself
    CHECK(address.find('.') != std::string::npos);
    CHECK(address.find(':') == std::string::npos);
}
