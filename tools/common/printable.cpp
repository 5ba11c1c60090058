#include "common/printable.hpp"

#include <algorithm>

namespace ndm::tools {

std::string printable(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto b = static_cast<unsigned char>(ch);
        switch (b) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (b >= 0x20 && b < 0x7f) {
                    out += ch;
                } else {
                    out += "\\x";
                    out += kHex[b >> 4];
                    out += kHex[b & 0xf];
                }
        }
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
