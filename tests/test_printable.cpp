// tools::printable: how every tool shows a peer-supplied string (issue 13).
#include <doctest/doctest.h>

#include <string>

#include "common/printable.hpp"

using ndm::tools::printable;

TEST_CASE("printable: plain ASCII passes, everything that could drive a terminal is escaped") {
    CHECK(printable("the server is busy running another test") == "the server is busy running another test");
    CHECK(printable("") == "");
    // ANSI clear screen, OSC window title with BEL, a carriage return that
    // would overwrite the line, DEL, NUL.
    CHECK(printable("\x1b[2J\x1b]0;pwned\x07") == "\\x1b[2J\\x1b]0;pwned\\x07");
    CHECK(printable("ok\rFAKE") == "ok\\rFAKE");
    CHECK(printable(std::string("a\0b\x7f", 4)) == "a\\x00b\\x7f");
    CHECK(printable("line\nnext\tcol") == "line\\nnext\\tcol");
    // Bytes >= 0x80: C1 controls (0xc2 0x9b is CSI), invalid UTF-8, any non-ASCII.
    CHECK(printable("\xc2\x9b" "31m") == "\\xc2\\x9b31m");
    CHECK(printable("\xff\xfe") == "\\xff\\xfe");
    // The backslash doubles, so an escaped input is told apart from a raw one.
    CHECK(printable("\\x1b") == "\\\\x1b");
    CHECK(printable("\\x1b") != printable("\x1b"));
}

TEST_CASE("printable: every byte value comes out as printable ASCII") {
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    const std::string out = printable(all);
    for (const char c : out) CHECK((c >= 0x20 && c < 0x7f));
    CHECK(out.size() == 95 + 1 + 3 * 2 + (256 - 95 - 3) * 4);  // 95 printable (\\ doubles: +1), \n\r\t, the rest \xHH
}
