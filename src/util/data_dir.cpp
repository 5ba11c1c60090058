#include "util/data_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

// Set by CMakeLists.txt; empty when a file is compiled without them.
#ifndef NDM_BIN_TO_DATA_DIR
#define NDM_BIN_TO_DATA_DIR ""
#endif
#ifndef NDM_INSTALL_DATA_DIR
#define NDM_INSTALL_DATA_DIR ""
#endif
#ifndef NDM_SOURCE_DATA_DIR
#define NDM_SOURCE_DATA_DIR ""
#endif

namespace ndm::util {

namespace fs = std::filesystem;

std::vector<std::string> data_dirs() {
    std::vector<std::string> candidates;
    std::error_code ec;
    if (*NDM_BIN_TO_DATA_DIR != '\0') {
        const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
        if (!ec) candidates.push_back((exe.parent_path() / NDM_BIN_TO_DATA_DIR).lexically_normal().string());
    }
    candidates.emplace_back(NDM_INSTALL_DATA_DIR);
    if (const char* env = std::getenv("NDM_DATA_DIR"); env != nullptr) candidates.emplace_back(env);
    candidates.emplace_back(NDM_SOURCE_DATA_DIR);
    std::vector<std::string> dirs;
    for (auto& d : candidates) {
        if (d.empty() || !fs::is_directory(d, ec)) continue;
        bool seen = false;  // an install at the compiled-in prefix is found twice
        for (const auto& e : dirs) seen = seen || fs::equivalent(e, d, ec);
        if (!seen) dirs.push_back(std::move(d));
    }
    return dirs;
}

std::string resolve_data_file(const std::string& name, const std::string& kind, const std::string& what) {
    std::error_code ec;
    // Anything that exists by this name is what was meant; its reader says
    // what is wrong with it if it is not a regular file (a device, a FIFO).
    if (fs::exists(fs::symlink_status(name, ec))) return name;
    std::string searched;
    if (name.find('/') == std::string::npos) {
        for (const auto& dir : data_dirs()) {
            const std::string p = dir + "/" + kind + "/" + name;
            if (fs::is_regular_file(p, ec)) return p;
            searched += (searched.empty() ? "" : ", ") + dir + "/" + kind;
        }
    }
    throw std::invalid_argument("cannot read " + what + " '" + name + "': no such file" +
                                (searched.empty() ? std::string() : " (searched " + searched + ")"));
}

}  // namespace ndm::util
