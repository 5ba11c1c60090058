// Strings a peer chose (close reasons, test parameters) are shown escaped:
// raw, they could carry terminal escape sequences (retitling or clearing the
// terminal, faking output lines) or bytes that are not UTF-8 (which JSON
// output cannot hold). Every tool prints peer-supplied text through this.
#pragma once

#include <string>
#include <string_view>

namespace ndm::tools {

// Printable ASCII (0x20..0x7e) passes unchanged except the backslash, which
// doubles; \n, \r and \t are written as such. Well-formed UTF-8 (RFC 3629:
// shortest form, no surrogates, at most U+10FFFF) passes too, so a reason
// "§ 4" reads as such, except the characters that steer a terminal or the
// reading order: the C1 controls U+0080..U+009F (U+009B is CSI), the line and
// paragraph separators U+2028/U+2029 and the bidirectional embeddings,
// overrides and isolates U+202A..U+202E, U+2066..U+2069 (CVE-2021-42574).
// Every other byte (controls, DEL, invalid or truncated UTF-8, and each byte
// of an escaped character) becomes \xHH. The result is valid UTF-8 without
// controls, and distinct inputs stay distinct.
std::string printable(std::string_view s);
// The same line by line, keeping the line breaks: a peer's multi-line text.
std::string printable_lines(std::string_view s);

}  // namespace ndm::tools
