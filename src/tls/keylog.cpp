#include "ndm/tls.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace ndm::tls {

std::string keylog_line(std::string_view label, std::span<const std::uint8_t> client_random,
                        std::span<const std::uint8_t> secret) {
    return fmt::format("{} {:02x} {:02x}", label, fmt::join(client_random, ""), fmt::join(secret, ""));
}

namespace {

struct KeylogFile {
    std::string path;
    int fd = -1;
    bool failed = false;
    ~KeylogFile() {
        if (fd >= 0) ::close(fd);
    }
    void append(std::string_view line) {
        if (failed) return;
        std::string text(line);
        text.push_back('\n');
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n != static_cast<ssize_t>(text.size())) {
            failed = true;
            spdlog::warn("ndm: cannot write key log file {}: {}; no more keys are logged", path,
                         n < 0 ? std::strerror(errno) : "short write");
        }
    }
};

}  // namespace

KeylogSink keylog_to_file(const std::string& path) {
    auto file = std::make_shared<KeylogFile>();
    file->path = path;
    file->fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (file->fd < 0) throw KeylogError(fmt::format("key log file {}: {}", path, std::strerror(errno)));
    return [file](std::string_view line) { file->append(line); };
}

}  // namespace ndm::tls
