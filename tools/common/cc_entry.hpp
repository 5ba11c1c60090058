// A controller as the tools name it: "name" or "name:key=value:key=value"
// (colons, since commas separate controllers in a list). The whole entry
// labels results, so variants of one controller can be compared.
#pragma once

#include <algorithm>
#include <string>

namespace ndm::tools {

struct CcEntry {
    std::string name;
    std::string options;  // "key=value,key=value", as ndm::cc::make takes them
};

inline CcEntry parse_cc_entry(const std::string& entry) {
    CcEntry c;
    const auto colon = entry.find(':');
    c.name = entry.substr(0, colon);
    if (colon != std::string::npos) {
        c.options = entry.substr(colon + 1);
        std::replace(c.options.begin(), c.options.end(), ':', ',');
    }
    return c;
}

}  // namespace ndm::tools
