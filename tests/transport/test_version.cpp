// include/ndm/version.hpp: the release and git commit baked in at build time
// (cmake/git_commit.cmake) and the provenance record the JSON outputs carry.
#include <doctest/doctest.h>

#include <sys/utsname.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "ndm/version.hpp"

TEST_CASE("version: release and commit baked in, and the provenance of this process") {
    CHECK(std::regex_match(std::string(ndm::version()), std::regex(R"(\d+\.\d+\.\d+)")));
    const std::string commit(ndm::git_commit());
    CAPTURE(commit);
    // cmake/git_commit.cmake reads the commit with git: a hash in a checkout
    // where git is installed, "unknown" outside a checkout (a source tarball).
    // A checkout without git (a fresh minbase Debian) has "unknown" too, and
    // where git came after configuring, whichever the build found.
    const bool checkout = std::filesystem::exists(NDM_SOURCE_DIR "/.git");
    const std::string git = NDM_GIT_EXECUTABLE;  // found when configuring (tests/CMakeLists.txt), or ""
    const bool has_git = !git.empty() && std::filesystem::exists(git);
    const std::regex hash("[0-9a-f]{40}(-dirty)?");
    CAPTURE(checkout);
    CAPTURE(git);
    if (!checkout)
        CHECK(commit == "unknown");
    else if (has_git)
        CHECK(std::regex_match(commit, hash));
    else
        CHECK((commit == "unknown" || std::regex_match(commit, hash)));

    using namespace std::chrono;
    CHECK(ndm::iso8601_utc(system_clock::time_point(milliseconds(1796160604123))) == "2026-12-01T21:30:04.123Z");
    CHECK(ndm::iso8601_utc(system_clock::time_point(milliseconds(0))) == "1970-01-01T00:00:00.000Z");

    const auto start = system_clock::time_point(milliseconds(1796160604123));
    const ndm::Provenance p = ndm::provenance(start);
    CHECK(p.version == ndm::version());
    CHECK(p.git_commit == commit);
    CHECK(p.start_time == "2026-12-01T21:30:04.123Z");
    CHECK(p.command_line.find("ndm_tests") != std::string::npos);
    utsname u{};
    REQUIRE(uname(&u) == 0);
    CHECK(p.host == u.nodename);
    CHECK(p.kernel == std::string(u.sysname) + " " + u.release + " " + u.version + " " + u.machine);

    // Every rendering uses the same six keys.
    std::map<std::string, std::string> keys;
    ndm::for_each_field(p, [&](const char* k, const std::string& v) { keys[k] = v; });
    CHECK(keys.size() == 6);
    CHECK(keys.at("ndm_version") == p.version);
    CHECK(keys.at("git_commit") == p.git_commit);
    CHECK(keys.at("command_line") == p.command_line);
    CHECK(keys.at("start_time") == p.start_time);
    CHECK(keys.at("host") == p.host);
    CHECK(keys.at("kernel") == p.kernel);
}
