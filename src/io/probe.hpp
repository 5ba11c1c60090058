// Can this process use io_uring for the UDP data path? Seccomp profiles of
// container runtimes answer EPERM, old kernels ENOSYS, and
// kernel.io_uring_disabled may forbid it; the Endpoint then falls back to epoll.
#pragma once

#include <string>

namespace ndm::io {

struct UringProbe {
    bool available = false;
    std::string reason;  // why not, one line (empty when available)
};

// Checks NDM_IO_FORCE_PROBE_FAIL=1 (tests simulate an unavailable io_uring),
// /proc/sys/kernel/io_uring_disabled, ring creation, the opcodes the data path
// uses (RECVMSG, SENDMSG, TIMEOUT, TIMEOUT_REMOVE) and buffer-ring
// registration. Cached after the first call unless the env var is set.
UringProbe probe_uring();

}  // namespace ndm::io
