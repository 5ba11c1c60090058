// This test process's resident set size, for tests that check that memory
// follows the bytes a peer sent (docs/security.md).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <fstream>

namespace ndm::test {

// Resident sizes mean what the tests expect only with the C library's own
// allocator: AddressSanitizer's keeps freed blocks in quarantine and maps
// shadow memory for every touched page, so under it such a case skips.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kResidentSizeMeaningful = false;
#else
inline constexpr bool kResidentSizeMeaningful = true;
#endif

// Bytes resident now (/proc/self/statm's second field, in pages).
inline std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace ndm::test
