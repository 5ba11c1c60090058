// Where the library's log lines go in every tool: stderr. stdout carries the
// tool's own output, which -J turns into one JSON document, so a log line
// there (e.g. "io_uring unavailable ... using the epoll fallback") would
// corrupt it.
#pragma once

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ndm::tools {

// Call once, first thing in main().
inline void log_to_stderr() { spdlog::set_default_logger(spdlog::stderr_color_mt("ndm")); }

}  // namespace ndm::tools
