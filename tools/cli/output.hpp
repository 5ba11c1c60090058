// iperf3's -T, --logfile and --forceflush for ndm-send and ndm-recv: while an
// OutputRedirect lives, every line written to std::cout starts with the
// title's "TITLE:  " prefix, goes to the log file (appended, as iperf3's)
// instead of standard output, and is flushed at its end when asked.
#pragma once

#include <fstream>
#include <iostream>
#include <memory>
#include <string>

namespace ndm::tools {

class OutputRedirect {
public:
    // Throws std::invalid_argument naming the file when it cannot be opened.
    OutputRedirect(const std::string& title, const std::string& logfile, bool force_flush);
    ~OutputRedirect();
    OutputRedirect(const OutputRedirect&) = delete;
    OutputRedirect& operator=(const OutputRedirect&) = delete;

private:
    class LineBuf;
    std::ofstream file_;
    std::unique_ptr<LineBuf> buf_;
    std::streambuf* previous_ = nullptr;
};

}  // namespace ndm::tools
