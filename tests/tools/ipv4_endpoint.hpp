// The ADDR:PORT arguments of the test tools (ndm_probe, initial_flood): an
// IPv4 address and a port, or nullopt with what is wrong in `error`.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace ndm::test {

inline std::optional<sockaddr_in> parse_ipv4_endpoint(const std::string& s, std::string& error) {
    const auto colon = s.rfind(':');
    if (colon == std::string::npos) {
        error = "address must be ADDR:PORT";
        return std::nullopt;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(s.c_str() + colon + 1)));
    if (inet_pton(AF_INET, s.substr(0, colon).c_str(), &a.sin_addr) != 1) {
        error = "bad IPv4 address " + s.substr(0, colon);
        return std::nullopt;
    }
    return a;
}

}  // namespace ndm::test
