// iperf3's -T, --logfile and --forceflush (tools/cli/output.hpp): what
// reaches the log file, with which prefix, and when.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "tools/cli/output.hpp"

namespace {
std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
std::filesystem::path temp_log(const char* name) {
    return std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()) + ".txt");
}
}  // namespace

TEST_CASE("output: -T prefixes every line, --logfile appends, --forceflush flushes each line") {
    const auto log = temp_log("ndm-output-test");
    std::filesystem::remove(log);
    {
        ndm::tools::OutputRedirect r("run 1", log.string(), true);
        std::cout << "first\nsecond ";
        CHECK(slurp(log) == "run 1:  first\n");  // flushed at the line's end, not before
        std::cout << "line\n";
        CHECK(slurp(log) == "run 1:  first\nrun 1:  second line\n");
    }
    {
        ndm::tools::OutputRedirect r("", log.string(), false);
        std::cout << "third\n";
        CHECK(slurp(log).find("third") == std::string::npos);  // buffered until a flush
        std::cout << std::flush;
        CHECK(slurp(log) == "run 1:  first\nrun 1:  second line\nthird\n");  // appended, no prefix
    }
    std::filesystem::remove(log);
    CHECK_THROWS_WITH_AS(ndm::tools::OutputRedirect("", "/nonexistent-dir/x.log", false),
                         doctest::Contains("--logfile /nonexistent-dir/x.log"), std::invalid_argument);
}
