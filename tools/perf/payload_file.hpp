// iperf3's -F: a file as the payload a sender writes, or as the place a
// receiver's bytes go. Plain POSIX file descriptors; the tools' edge I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "ndm/time.hpp"

namespace ndm::tools {

// A file read at explicit offsets (pread), so a stream's offset is the
// file's. Throws std::invalid_argument naming the file when it cannot be
// opened or is not a regular file (bad input), std::runtime_error on a
// read failure later (a runtime failure).
class FileSource {
public:
    explicit FileSource(const std::string& path);
    ~FileSource();
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;
    [[nodiscard]] std::uint64_t size() const { return size_; }
    // Fills out with the bytes at offset; all of out must lie within size().
    void read(std::uint64_t offset, std::span<std::uint8_t> out) const;

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

// A file created (or truncated) to receive a stream's bytes in order, or a
// FIFO: written once a reader opens it, waited for up to `wait_for_reader`
// (`waiting` is called once when the wait begins, to say so). Throws
// std::invalid_argument when it cannot be created, std::runtime_error when
// no reader comes in time or a write fails (disk full, a reader gone, ...).
class FileSink {
public:
    explicit FileSink(const std::string& path, Duration wait_for_reader = std::chrono::seconds(10),
                      const std::function<void()>& waiting = {});
    ~FileSink();
    FileSink(const FileSink&) = delete;
    FileSink& operator=(const FileSink&) = delete;
    void write(std::span<const std::uint8_t> data);

private:
    void open_fifo(Duration wait_for_reader, const std::function<void()>& waiting);
    std::string path_;
    int fd_ = -1;
};

// For a server's -F, checked at start-up before the direction is known:
// the file can be read, or created (its directory exists). Throws
// std::invalid_argument naming the problem.
void check_file_path(const std::string& path);

}  // namespace ndm::tools
