#include "util/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ndm::util {

namespace {

[[noreturn]] void fail(const std::string& problem) { throw std::invalid_argument(problem); }

const char* file_type(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// Closes the descriptor on every way out.
struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) close(fd);
    }
};

// Opens `path` and checks what it is on the descriptor itself (no window
// between a stat and the open). O_NONBLOCK: opening a FIFO must not wait for
// a writer; it has no effect on the regular files that pass.
int open_checked(const std::string& path, std::uint64_t max_bytes, std::uint64_t& size) {
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) fail(std::strerror(errno));
    Fd guard{fd};
    struct stat st{};
    if (fstat(fd, &st) != 0) fail(std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail("is a directory");
    if (!S_ISREG(st.st_mode)) fail(std::string("is not a regular file (") + file_type(st.st_mode) + ")");
    size = static_cast<std::uint64_t>(st.st_size);
    if (size > max_bytes)
        fail("is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + " allowed");
    guard.fd = -1;
    return fd;
}

}  // namespace

std::string read_input_file(const std::string& path, std::uint64_t max_bytes) {
    std::uint64_t size = 0;
    const Fd f{open_checked(path, max_bytes, size)};
    std::string out;
    out.resize(static_cast<std::size_t>(size));
    std::size_t have = 0;
    // Read to EOF but never past the cap: a file that grows while we read
    // (a log being written) is refused, not followed.
    for (;;) {
        if (have == out.size()) {
            if (out.size() > max_bytes) break;
            out.resize(std::min<std::uint64_t>(max_bytes + 1, out.size() + 65536));
        }
        const ssize_t n = read(f.fd, out.data() + have, out.size() - have);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(std::string("read error: ") + std::strerror(errno));
        }
        if (n == 0) break;
        have += static_cast<std::size_t>(n);
    }
    if (have > max_bytes) fail("grew past the " + std::to_string(max_bytes) + " bytes allowed while being read");
    out.resize(have);
    return out;
}

void check_input_file(const std::string& path, std::uint64_t max_bytes) {
    std::uint64_t size = 0;
    const Fd f{open_checked(path, max_bytes, size)};
}

}  // namespace ndm::util
