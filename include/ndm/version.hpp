// Which ndm produced a result, and where: the version and the git commit
// baked in at build time, and the provenance record (version, commit,
// command line, start time, host, kernel) that the tools' JSON outputs and
// the qlog headers carry so a result can be traced to what produced it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

// The release: CMake's project version, e.g. "0.1.0".
std::string_view version();

// The full git commit hash of the source tree the library was built from,
// with "-dirty" appended when tracked files had uncommitted changes; read at
// every build. "unknown" when built outside a git checkout (a source tarball)
// or without git.
std::string_view git_commit();

struct Provenance {
    std::string version;       // ndm::version()
    std::string git_commit;    // ndm::git_commit()
    std::string command_line;  // this process's argv, shell-quoted where needed, space-separated
    std::string start_time;    // UTC, ISO 8601 with milliseconds: "2026-12-01T21:30:04.123Z"
    std::string host;          // uname(2) nodename
    std::string kernel;        // uname(2) sysname, release, version and machine, as `uname -srvm`
};

// The record's keys as every JSON rendering names them (the tools' outputs,
// the qlog header): f(key, value) for each field in order.
template <class F>
void for_each_field(const Provenance& p, F&& f) {
    f("ndm_version", p.version);
    f("git_commit", p.git_commit);
    f("command_line", p.command_line);
    f("start_time", p.start_time);
    f("host", p.host);
    f("kernel", p.kernel);
}

// This process's provenance for a run that started at `start`. The command
// line comes from /proc/self/cmdline ("unknown" where that is unreadable).
Provenance provenance(std::chrono::system_clock::time_point start = std::chrono::system_clock::now());

// `start` as provenance records it: UTC, ISO 8601, milliseconds, a trailing Z.
std::string iso8601_utc(std::chrono::system_clock::time_point start);

}  // namespace ndm

#pragma GCC visibility pop
