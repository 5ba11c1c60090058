// tools::parse_command_line: every numeric flag of every tool refuses NaN,
// infinities, out-of-range integers, negative unsigned values and trailing
// junk (CLI11 2.1 alone lets the first three through), exit code 2; sizes go
// through size_in. Every refusal is one line in ndm's words, naming the flag,
// the value and what is expected, never CLI11's own text.
#include <doctest/doctest.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli/command_line.hpp"
#include "tools/cli/general_flags.hpp"

namespace {

struct Flags {
    double seconds = 1, rate = 1;
    std::uint64_t seed = 0;
    std::int64_t offset = 0;
    unsigned streams = 1;
    std::string bytes = "1M";
    std::uint16_t port = 1, listen = 0;
    std::string mode = "auto";
};

// The exit code parse_command_line gives for `args` (0 when parsing went on),
// with the values parsed into `f`.
int parse(std::vector<std::string> args, Flags& f) {
    CLI::App app{"test"};
    app.add_option("-t,--time", f.seconds)->check(ndm::tools::number_in(0.1, 100, "seconds"));
    app.add_option("-r,--rate", f.rate)->check(ndm::tools::positive_number(1e6, "Mbit/s"));
    app.add_option("-p,--port", f.port)->check(ndm::tools::port_number(false));
    app.add_option("--listen", f.listen)->check(ndm::tools::port_number(true));
    app.add_option("--mode", f.mode)->transform(ndm::tools::one_of({"auto", "Always", "never"}, true));
    auto* sub = app.add_subcommand("sub");
    sub->add_option("--seed", f.seed);
    sub->add_option("--offset", f.offset);
    sub->add_option("-P", f.streams)->check(ndm::tools::integer_in(1, 128));
    sub->add_option("-n", f.bytes)->check(ndm::tools::size_in(1, std::uint64_t{1} << 50));
    args.insert(args.begin(), "test");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return ndm::tools::parse_command_line(app, static_cast<int>(argv.size()), argv.data(), "test").value_or(0);
}

int parse(std::vector<std::string> args) {
    Flags f;
    return parse(std::move(args), f);
}

// What parse_command_line prints on standard error for `args`.
std::string error_of(std::vector<std::string> args) {
    std::ostringstream err;
    std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
    Flags f;
    const int rc = parse(std::move(args), f);
    std::cerr.rdbuf(saved);
    CHECK(rc == 2);
    return err.str();
}

}  // namespace

TEST_CASE("cli numbers: good values parse") {
    Flags f;
    CHECK(parse({"-t", "2.5", "sub", "--seed", "18446744073709551615", "--offset", "-9", "-P", "128", "-n", "1024T"}, f) == 0);
    CHECK(f.seconds == 2.5);
    CHECK(f.seed == UINT64_MAX);
    CHECK(f.offset == -9);
    CHECK(f.streams == 128);
}

TEST_CASE("cli numbers: NaN, infinities and overflowing floats are refused, also where CLI::Range lets NaN through") {
    for (const char* bad : {"nan", "NAN", "-nan", "inf", "infinity", "1e999", "2x", "", "0x"}) {
        CAPTURE(bad);
        CHECK(parse({"-t", bad}) == 2);
    }
}

TEST_CASE("cli numbers: negative unsigned values, 64-bit overflow and junk are refused in subcommands too") {
    for (const char* bad : {"-1", "18446744073709551616", "99999999999999999999999", "1.5", "12abc", "nan"}) {
        CAPTURE(bad);
        CHECK(parse({"sub", "--seed", bad}) == 2);
    }
    CHECK(parse({"sub", "--offset", "9223372036854775808"}) == 2);
    CHECK(parse({"sub", "--offset", "-9223372036854775809"}) == 2);
    CHECK(parse({"sub", "-P", "-1"}) == 2);
    CHECK(parse({"sub", "-P", "4294967297"}) == 2);
}

TEST_CASE("cli numbers: sizes out of range, negative, NaN or with junk are refused") {
    for (const char* bad : {"99999999999G", "2000T", "0", "-1M", "nanM", "infK", "5Mx", "1e30", "K", ""}) {
        CAPTURE(bad);
        CHECK(parse({"sub", "-n", bad}) == 2);
    }
    CHECK(parse({"sub", "-n", "1024T"}) == 0);
    CHECK(parse({"sub", "-n", "1"}) == 0);
}

TEST_CASE("cli numbers: a refused value is one line naming the flag, the value and what is expected") {
    CHECK(error_of({"-t", "5s"}) == "test: -t/--time 5s: expected seconds, a number from 0.1 to 100\n");
    CHECK(error_of({"--time", "nan"}) == "test: -t/--time nan: expected seconds, a number from 0.1 to 100\n");
    CHECK(error_of({"-t", ""}) == "test: -t/--time '': expected seconds, a number from 0.1 to 100\n");
    CHECK(error_of({"sub", "-P", "0"}) == "test: -P 0: expected a whole number from 1 to 128\n");
    CHECK(error_of({"sub", "-P", "4294967297"}) == "test: -P 4294967297: expected a whole number from 1 to 128\n");
    CHECK(error_of({"sub", "--seed", "-1"}) == "test: --seed -1: expected a whole number, 0 or more\n");
    CHECK(error_of({"sub", "--seed", "1x"}) == "test: --seed 1x: expected a whole number\n");
    CHECK(error_of({"sub", "-n", "0"}) ==
          "test: -n 0: expected a size in bytes with an optional K, M, G or T suffix (binary), from 1 to 1024T\n");
    CHECK(error_of({"-r", "0"}) == "test: -r/--rate 0: expected Mbit/s, a number above 0 and at most 1000000\n");
    CHECK(error_of({"-p", "70000"}) == "test: -p/--port 70000: expected a UDP port, a whole number from 1 to 65535\n");
    CHECK(error_of({"-p", "0"}) == "test: -p/--port 0: expected a UDP port, a whole number from 1 to 65535\n");
    CHECK(error_of({"--listen", "65536"}) ==
          "test: --listen 65536: expected a UDP port, a whole number from 0 (any free port) to 65535\n");
    CHECK(error_of({"--mode", "sometimes"}) == "test: --mode sometimes: expected one of: auto, Always, never\n");
    // A peer's or a user's control bytes are not echoed raw.
    CHECK(error_of({"-t", "\x1b[2J"}) == "test: -t/--time \\x1b[2J: expected seconds, a number from 0.1 to 100\n");
    // Errors without a value, in ndm's words too.
    CHECK(error_of({"--bogus"}) == "test: unexpected argument: --bogus (see --help)\n");
    CHECK(error_of({"-t"}) == "test: --time: the value is missing (see --help)\n");
}

TEST_CASE("cli numbers: ports, and names matched whatever their case") {
    Flags f;
    CHECK(parse({"-p", "65535", "--listen", "0", "--mode", "ALWAYS"}, f) == 0);
    CHECK(f.port == 65535);
    CHECK(f.listen == 0);
    CHECK(f.mode == "Always");  // the listed spelling
}

TEST_CASE("cli: the old -v for --verbose among other arguments becomes -V, -v alone stays the version") {
    std::string a0 = "tool", a1 = "-v", a2 = "--json", a3 = "--", a4 = "-v";
    char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data()};
    std::ostringstream err;
    std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
    ndm::tools::deprecated_verbose_v(5, argv, "tool");
    std::cerr.rdbuf(saved);
    CHECK(std::string(argv[1]) == "-V");
    CHECK(std::string(argv[4]) == "-v");  // after --: an argument of the command, untouched
    CHECK(err.str().rfind("tool: warning: -v among other arguments is read as -V", 0) == 0);
    char* alone[] = {a0.data(), a4.data()};
    ndm::tools::deprecated_verbose_v(2, alone, "tool");
    CHECK(std::string(alone[1]) == "-v");
}
