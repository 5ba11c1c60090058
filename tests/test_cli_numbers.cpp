// tools::parse_command_line: every numeric flag of every tool refuses NaN,
// infinities, out-of-range integers, negative unsigned values and trailing
// junk (CLI11 2.1 alone lets the first three through), exit code 2; sizes go
// through size_in.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"

namespace {

struct Flags {
    double seconds = 1;
    std::uint64_t seed = 0;
    std::int64_t offset = 0;
    unsigned streams = 1;
    std::string bytes = "1M";
};

// The exit code parse_command_line gives for `args` (0 when parsing went on),
// with the values parsed into `f`.
int parse(std::vector<std::string> args, Flags& f) {
    CLI::App app{"test"};
    app.add_option("-t,--time", f.seconds)->check(CLI::Range(0.1, 100.0));
    auto* sub = app.add_subcommand("sub");
    sub->add_option("--seed", f.seed);
    sub->add_option("--offset", f.offset);
    sub->add_option("-P", f.streams)->check(CLI::Range(1u, 128u));
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
