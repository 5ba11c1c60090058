// tools::printable: how every tool shows a peer-supplied string (docs/security.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "tools/cli/printable.hpp"

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
    // C1 controls (0xc2 0x9b is CSI) and invalid UTF-8 are escaped byte by byte.
    CHECK(printable("\xc2\x9b" "31m") == "\\xc2\\x9b31m");
    CHECK(printable("\xff\xfe") == "\\xff\\xfe");
    // The backslash doubles, so an escaped input is told apart from a raw one.
    CHECK(printable("\\x1b") == "\\\\x1b");
    CHECK(printable("\\x1b") != printable("\x1b"));
}

TEST_CASE("printable: well-formed UTF-8 passes, malformed UTF-8 and steering characters are escaped") {
    // A close reason citing a section, accented text, CJK, an emoji (4 bytes).
    CHECK(printable("RFC 9000 \xc2\xa7" "10.2") == "RFC 9000 \xc2\xa7" "10.2");
    CHECK(printable("d\xc3\xa9j\xc3\xa0 \xe6\x97\xa5 \xf0\x9f\x93\xa6") == "d\xc3\xa9j\xc3\xa0 \xe6\x97\xa5 \xf0\x9f\x93\xa6");
    // Overlong forms (0xc0 0xaf is '/', 0xe0 0x80 0xaf too), a UTF-16
    // surrogate (0xed 0xa0 0x80), past U+10FFFF (0xf4 0x90 ...), a lone
    // continuation byte and a sequence cut short: each byte escaped.
    CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");
    CHECK(printable("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");
    CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");
    CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");
    CHECK(printable("\x80" "a") == "\\x80" "a");
    CHECK(printable("\xe2\x82") == "\\xe2\\x82");
    CHECK(printable("\xe2\x82" "a") == "\\xe2\\x82" "a");
    // Valid but steering: a right-to-left override (U+202E), a line
    // separator (U+2028), a first-strong isolate (U+2068), NEL (U+0085).
    CHECK(printable("\xe2\x80\xae" "cod.exe") == "\\xe2\\x80\\xae" "cod.exe");
    CHECK(printable("a\xe2\x80\xa8" "b") == "a\\xe2\\x80\\xa8" "b");
    CHECK(printable("\xe2\x81\xa8") == "\\xe2\\x81\\xa8");
    CHECK(printable("\xc2\x85") == "\\xc2\\x85");
    // The largest code point and the last before the surrogates pass.
    CHECK(printable("\xf4\x8f\xbf\xbf") == "\xf4\x8f\xbf\xbf");
    CHECK(printable("\xed\x9f\xbf") == "\xed\x9f\xbf");
}

namespace {

// Valid UTF-8 by RFC 3629's table, independently of printable().
bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        std::uint32_t cp = n == 1 ? b : b & (0x7f >> n);
        for (std::size_t k = 1; k < n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3f);
        }
        const std::uint32_t min = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n;
    }
    return true;
}

}  // namespace

TEST_CASE("printable: any bytes come out as valid UTF-8 without control characters") {
    std::uint64_t x = 0x9e3779b97f4a7c15;  // a fixed xorshift sequence: deterministic
    for (int round = 0; round < 2000; ++round) {
        std::string in;
        for (int k = 0; k < 24; ++k) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            // Bias towards bytes that start or continue UTF-8 sequences.
            const auto b = static_cast<unsigned char>(x & 1 ? 0x80 | (x >> 8 & 0x7f) : x >> 8);
            in += static_cast<char>(b);
        }
        const std::string out = printable(in);
        CHECK(valid_utf8(out));
        CHECK(std::none_of(out.begin(), out.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }));
    }
}

TEST_CASE("printable: every byte value alone comes out as printable ASCII") {
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    const std::string out = printable(all);
    for (const char c : out) CHECK((c >= 0x20 && c < 0x7f));
    CHECK(out.size() == 95 + 1 + 3 * 2 + (256 - 95 - 3) * 4);  // 95 printable (\\ doubles: +1), \n\r\t, the rest \xHH
}
