#include "io/probe.hpp"

#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

namespace ndm::io {

namespace {

UringProbe probe_once() {
    UringProbe p;
    // Checked first so that the io_uring_disabled sysctl reads as the reason.
    if (std::ifstream f("/proc/sys/kernel/io_uring_disabled"); f) {
        int v = 0;
        if (f >> v && v == 2) {
            p.reason = "kernel.io_uring_disabled=2";
            return p;
        }
        // v == 1 restricts io_uring to io_uring_group: ring creation tells.
    }
    io_uring ring;
    if (int rc = io_uring_queue_init(8, &ring, 0); rc < 0) {
        const int e = -rc;
        p.reason = e == ENOSYS   ? "io_uring_setup: ENOSYS (kernel without io_uring)"
                   : e == EPERM  ? "io_uring_setup: EPERM (blocked by seccomp or io_uring_disabled)"
                                 : fmt::format("io_uring_setup: {}", std::strerror(e));
        return p;
    }
    if (io_uring_probe* pr = io_uring_get_probe_ring(&ring)) {
        for (int op : {IORING_OP_RECVMSG, IORING_OP_SENDMSG, IORING_OP_TIMEOUT, IORING_OP_TIMEOUT_REMOVE}) {
            if (!io_uring_opcode_supported(pr, op)) p.reason = fmt::format("io_uring opcode {} unsupported", op);
        }
        io_uring_free_probe(pr);
    } else {
        p.reason = "io_uring probe not supported (kernel < 5.6)";
    }
    if (p.reason.empty()) {
        // Provided buffer rings need 5.19; multishot recvmsg 6.0 (checked by the
        // backend's first CQE). Register a tiny ring to be sure.
        const long page = sysconf(_SC_PAGESIZE);
        void* mem = mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                         MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        if (mem == MAP_FAILED) {
            p.reason = "mmap failed";
        } else {
            io_uring_buf_reg reg{};
            reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
            reg.ring_entries = 8;
            reg.bgid = 0;
            if (int rc = io_uring_register_buf_ring(&ring, &reg, 0); rc < 0) {
                p.reason = fmt::format("provided buffer rings unsupported: {}", std::strerror(-rc));
            } else {
                io_uring_unregister_buf_ring(&ring, 0);
            }
            munmap(mem, static_cast<std::size_t>(page));
        }
    }
    io_uring_queue_exit(&ring);
    p.available = p.reason.empty();
    return p;
}

}  // namespace

UringProbe probe_uring() {
    if (const char* v = std::getenv("NDM_IO_FORCE_PROBE_FAIL"); v && std::strcmp(v, "1") == 0) {
        return {false, "forced by NDM_IO_FORCE_PROBE_FAIL=1"};
    }
    static std::once_flag once;
    static UringProbe cached;
    std::call_once(once, [] { cached = probe_once(); });
    return cached;
}

}  // namespace ndm::io
