#include "tools/perf/daemon.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace ndm::tools {

PidFile::PidFile(std::string path) : path_(std::move(path)) {
    std::ofstream f(path_, std::ios::trunc);
    if (!f) throw std::invalid_argument(fmt::format("--pidfile {}: {}", path_, std::strerror(errno)));
}

void PidFile::write() const {
    std::ofstream f(path_, std::ios::trunc);
    f << ::getpid() << '\n';
    if (!f.flush()) throw std::runtime_error(fmt::format("--pidfile {}: cannot write", path_));
}

PidFile::~PidFile() { ::unlink(path_.c_str()); }

void daemonize(const std::string& logfile) {
    // daemon(3) with noclose: the redirections below are ours.
    if (::daemon(1, 1) != 0) throw std::runtime_error(fmt::format("-D: cannot detach: {}", std::strerror(errno)));
    const int null = ::open("/dev/null", O_RDWR);
    const int err = logfile.empty() ? null : ::open(logfile.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (null < 0 || err < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || ::dup2(err, 2) < 0)
        throw std::runtime_error(fmt::format("-D: cannot redirect the standard streams: {}", std::strerror(errno)));
    if (err != null) ::close(err);
    ::close(null);
}

}  // namespace ndm::tools
