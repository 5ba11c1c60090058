// Strings a peer chose (close reasons, test parameters) are shown escaped:
// raw, they could carry terminal escape sequences (retitling or clearing the
// terminal, faking output lines) or bytes that are not UTF-8 (which JSON
// output cannot hold). Every tool prints peer-supplied text through this.
#pragma once

#include <string>
#include <string_view>

namespace ndm::tools {

// Printable ASCII (0x20..0x7e) passes unchanged except the backslash, which
// doubles; \n, \r and \t are written as such; every other byte (controls,
// DEL, anything >= 0x80) becomes \xHH. The result is printable ASCII, so it
// is also valid UTF-8, and distinct inputs stay distinct.
std::string printable(std::string_view s);
// The same line by line, keeping the line breaks: a peer's multi-line text.
std::string printable_lines(std::string_view s);

}  // namespace ndm::tools
