// Reading a file the user named (a model, trace, profile, dataset, TLS
// credential): it must be a regular file no larger than a cap stated per kind,
// checked on the opened descriptor before anything is read, and read with that
// bound. A device (/dev/zero), a FIFO or a directory is refused at once rather
// than read until memory runs out or blocked on forever.
#pragma once

#include <cstdint>
#include <string>

namespace ndm::util {

// Caps per kind of input, far above any real file of the kind.
inline constexpr std::uint64_t kMaxModelFileBytes = 1u << 20;        // .ndmm models are a few KB
inline constexpr std::uint64_t kMaxProfileFileBytes = 1u << 20;      // JSON emulator profiles
inline constexpr std::uint64_t kMaxTraceFileBytes = 64u << 20;       // Mahimahi traces (the largest shipped: 1.2 MB)
inline constexpr std::uint64_t kMaxCredentialFileBytes = 4u << 20;   // PEM certificates, keys, CA bundles
inline constexpr std::uint64_t kMaxDatasetFileBytes = 4ull << 30;    // ndm-train datasets (text, streamed)

// The whole content of `path`. Throws std::invalid_argument with the problem
// alone ("No such file or directory", "is a directory", "is not a regular file
// (a character device)", "is 2147483648 bytes, more than the 1048576 allowed"),
// for the caller to prefix with what the file was for.
std::string read_input_file(const std::string& path, std::uint64_t max_bytes);

// The same checks without reading, for readers that stream (datasets).
void check_input_file(const std::string& path, std::uint64_t max_bytes);

}  // namespace ndm::util
