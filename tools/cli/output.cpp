#include "tools/cli/output.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <streambuf>

#include <fmt/format.h>

namespace ndm::tools {

// Unbuffered: each character goes straight to `to`, the prefix before the
// first character of every line.
class OutputRedirect::LineBuf final : public std::streambuf {
public:
    LineBuf(std::streambuf* to, std::string prefix, bool flush_lines)
        : to_(to), prefix_(std::move(prefix)), flush_lines_(flush_lines) {}

protected:
    int overflow(int c) override {
        if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
        if (at_line_start_ && !prefix_.empty() &&
            to_->sputn(prefix_.data(), static_cast<std::streamsize>(prefix_.size())) !=
                static_cast<std::streamsize>(prefix_.size()))
            return traits_type::eof();
        if (traits_type::eq_int_type(to_->sputc(traits_type::to_char_type(c)), traits_type::eof()))
            return traits_type::eof();
        at_line_start_ = c == '\n';
        if (at_line_start_ && flush_lines_ && to_->pubsync() != 0) return traits_type::eof();
        return c;
    }
    int sync() override { return to_->pubsync(); }

private:
    std::streambuf* to_;
    std::string prefix_;
    bool flush_lines_;
    bool at_line_start_ = true;
};

OutputRedirect::OutputRedirect(const std::string& title, const std::string& logfile, bool force_flush) {
    std::streambuf* to = std::cout.rdbuf();
    if (!logfile.empty()) {
        file_.open(logfile, std::ios::app);
        if (!file_) throw std::invalid_argument(fmt::format("--logfile {}: {}", logfile, std::strerror(errno)));
        to = file_.rdbuf();
    }
    buf_ = std::make_unique<LineBuf>(to, title.empty() ? "" : title + ":  ", force_flush);
    previous_ = std::cout.rdbuf(buf_.get());
}

OutputRedirect::~OutputRedirect() {
    std::cout.flush();
    std::cout.rdbuf(previous_);
}

}  // namespace ndm::tools
