// Hex test vectors (RFC 9001 Appendix A is printed in hex with spaces and
// line breaks) as bytes, and bytes back as hex for readable failures.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/suite.hpp"

namespace ndm::test {

inline std::vector<std::uint8_t> unhex(std::string_view text) {
    std::vector<std::uint8_t> out;
    int hi = -1;
    for (const char c : text) {
        int v = -1;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        else if (c == ' ' || c == '\n' || c == ':') continue;
        else throw std::invalid_argument("unhex: bad character");
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(static_cast<std::uint8_t>(hi << 4 | v));
            hi = -1;
        }
    }
    if (hi >= 0) throw std::invalid_argument("unhex: odd number of digits");
    return out;
}

inline std::string hex(std::span<const std::uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (const std::uint8_t b : bytes) {
        out += kDigits[b >> 4];
        out += kDigits[b & 0x0f];
    }
    return out;
}

// RFC 9001 Appendix A: the client's first Destination Connection ID, which
// the Initial keys, the A.2/A.3 packets and the A.4 Retry are built from.
inline const std::vector<std::uint8_t>& rfc9001_dcid() {
    static const std::vector<std::uint8_t> dcid = unhex("8394c8f03e515708");
    return dcid;
}

// A traffic secret from its bytes (32 or 48).
inline crypto::Secret secret_of(const std::vector<std::uint8_t>& bytes) {
    crypto::Secret s;
    if (bytes.size() > s.bytes.size()) throw std::invalid_argument("secret_of: longer than 48 bytes");
    std::copy(bytes.begin(), bytes.end(), s.bytes.begin());
    s.size = static_cast<std::uint8_t>(bytes.size());
    return s;
}

}  // namespace ndm::test
