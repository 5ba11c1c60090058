#include "tools/perf/payload_file.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace ndm::tools {

namespace {
std::string why(const std::string& path, const char* what) {
    return fmt::format("-F {}: {}: {}", path, what, std::strerror(errno));
}
}  // namespace

FileSource::FileSource(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait, silently
    // and for ever, for a writer; it is refused below either way.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw std::invalid_argument(why(path, "cannot open for reading"));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        throw std::invalid_argument(fmt::format(
            "-F {}: not a regular file{}: a lost packet's bytes are read again at their offset, which a pipe or "
            "device cannot give (copy it to a file first)",
            path, S_ISFIFO(st.st_mode) ? " but a FIFO" : ""));
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
}

FileSource::~FileSource() { ::close(fd_); }

void FileSource::read(std::uint64_t offset, std::span<std::uint8_t> out) const {
    for (std::size_t done = 0; done < out.size();) {
        const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(why(path_, "read failed"));
        if (n == 0) throw std::runtime_error(fmt::format("-F {}: the file shrank while it was sent", path_));
        done += static_cast<std::size_t>(n);
    }
}

FileSink::FileSink(const std::string& path, Duration wait_for_reader, const std::function<void()>& waiting)
    : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
        open_fifo(wait_for_reader, waiting);
        return;
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::invalid_argument(why(path, "cannot open for writing"));
}

// A FIFO opens for writing only once a reader has it open (open(2) would
// block until then, fifo(7)): O_NONBLOCK fails with ENXIO meanwhile, so the
// wait is polled, said once, and bounded. The writes then block as a pipe's do.
void FileSink::open_fifo(Duration wait_for_reader, const std::function<void()>& waiting) {
    const auto give_up = std::chrono::steady_clock::now() + wait_for_reader;
    for (bool said = false;; said = true) {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd_ >= 0) break;
        if (errno != ENXIO) throw std::invalid_argument(why(path_, "cannot open for writing"));
        if (std::chrono::steady_clock::now() >= give_up)
            throw std::runtime_error(fmt::format("-F {}: no reader opened the FIFO within {:g} s", path_,
                                                 std::chrono::duration<double>(wait_for_reader).count()));
        if (!said && waiting) waiting();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A reader that leaves makes the next write fail (EPIPE, a runtime
    // failure named by write()) rather than end the process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        ::close(fd_);
        throw std::runtime_error(why(path_, "cannot make the FIFO blocking"));
    }
}

FileSink::~FileSink() { ::close(fd_); }

void FileSink::write(std::span<const std::uint8_t> data) {
    for (std::size_t done = 0; done < data.size();) {
        const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(why(path_, "write failed"));
        done += static_cast<std::size_t>(n);
    }
}

void check_file_path(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    if (fs::exists(p, ec)) {
        if (!fs::is_regular_file(p, ec)) throw std::invalid_argument(fmt::format("-F {}: not a regular file", path));
        return;
    }
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw std::invalid_argument(fmt::format("-F {}: directory {} does not exist", path, dir.string()));
}

}  // namespace ndm::tools

