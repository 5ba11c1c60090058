#include "tools/cli/printable.hpp"

#include <algorithm>
#include <cstdint>

namespace ndm::tools {

namespace {

// The length of the well-formed UTF-8 sequence of two or more bytes at the
// start of `s` (RFC 3629 §4's table), or 0.
std::size_t utf8_sequence(std::string_view s) {
    auto at = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = at(0);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
    if (b0 >= 0xc2 && b0 <= 0xdf) n = 2;
    else if (b0 == 0xe0) n = 3, lo = 0xa0;
    else if (b0 == 0xed) n = 3, hi = 0x9f;  // no UTF-16 surrogates
    else if (b0 >= 0xe1 && b0 <= 0xef) n = 3;
    else if (b0 == 0xf0) n = 4, lo = 0x90;
    else if (b0 == 0xf4) n = 4, hi = 0x8f;  // at most U+10FFFF
    else if (b0 >= 0xf1 && b0 <= 0xf3) n = 4;
    if (n == 0 || s.size() < n || at(1) < lo || at(1) > hi) return 0;
    for (std::size_t i = 2; i < n; ++i)
        if (at(i) < 0x80 || at(i) > 0xbf) return 0;
    return n;
}

std::uint32_t code_point(std::string_view s, std::size_t n) {
    auto at = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i])); };
    std::uint32_t cp = at(0) & (0x7f >> n);
    for (std::size_t i = 1; i < n; ++i) cp = (cp << 6) | (at(i) & 0x3f);
    return cp;
}

// Characters that are valid but steer the terminal or the reading order.
bool steers(std::uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

void escape_byte(std::string& out, unsigned char b) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
}

}  // namespace

std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        switch (b) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (b >= 0x20 && b < 0x7f) {
                    out += s[i];
                } else if (const std::size_t n = b >= 0x80 ? utf8_sequence(s.substr(i)) : 0; n > 0) {
                    const bool escape = steers(code_point(s.substr(i), n));
                    for (std::size_t k = 0; k < n; ++k) {
                        if (escape)
                            escape_byte(out, static_cast<unsigned char>(s[i + k]));
                        else
                            out += s[i + k];
                    }
                    i += n;
                    continue;
                } else {
                    escape_byte(out, b);
                }
        }
        ++i;
    }
    return out;
}

std::string printable_lines(std::string_view s) {
    std::string out;
    for (std::size_t at = 0; at < s.size();) {
        const std::size_t nl = std::min(s.find('\n', at), s.size());
        out += printable(s.substr(at, nl - at));
        if (nl < s.size()) out += '\n';
        at = nl + 1;
    }
    return out;
}

}  // namespace ndm::tools
