#include "tools/cli/output_dir.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include <fmt/format.h>

namespace ndm::tools {

void make_output_dir(const std::string& path, std::string_view flag) {
    namespace fs = std::filesystem;
    if (path.empty()) throw std::invalid_argument(fmt::format("{}: empty path", flag));
    std::error_code ec;
    const fs::path p(path);
    if (fs::exists(p, ec) && !fs::is_directory(p, ec))
        throw std::invalid_argument(fmt::format("{} {}: exists and is not a directory", flag, path));
    if (!fs::create_directories(p, ec) && ec)
        throw std::invalid_argument(fmt::format("{} {}: cannot create the directory: {}", flag, path, ec.message()));
    if (::access(path.c_str(), W_OK | X_OK) != 0)
        throw std::invalid_argument(fmt::format("{} {}: cannot write into the directory: {}", flag, path,
                                                std::strerror(errno)));
}

}  // namespace ndm::tools
