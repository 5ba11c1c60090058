// The io_uring data path (docs/architecture.md, "A datagram's path"): one multishot recvmsg over a
// provided-buffer ring we register by hand (liburing 2.3 has no
// io_uring_setup_buf_ring), UDP_GRO split on receive, many SENDMSG SQEs with a
// UDP_SEGMENT cmsg per submit, and the wait timer as a TIMEOUT SQE in the same
// ring. SINGLE_ISSUER|DEFER_TASKRUN when the kernel takes them: completions
// then run only when we enter the ring, so nothing interrupts the loop.
//
// Sends run inline in io_uring_enter. NDM_IO_URING_SEND=async hands large ones
// (GSO super-datagrams, 64 KB datagrams) to the ring's io-wq worker
// (IOSQE_ASYNC) so that the kernel send path (copy, UDP/IP, loopback delivery)
// runs on another core while this thread assembles the next packets. It is
// not the default: each hand-off wakes the worker (about 10 µs of CPU per
// wake-up on the 2-vCPU VM we measure on) and slots come back later, and once
// an endpoint turn sends several pacer quanta inline sends were faster (1.07×
// vs 0.92× the epoll fallback; bench/results/2026-11-30-loopback-io-uring.md,
// "more data per turn"). One worker
// (IORING_REGISTER_IOWQ_MAX_WORKERS) keeps async sends in submission order,
// and a small send goes inline only when no asynchronous one is still queued,
// so it cannot overtake; small sends are never handed off (about 2.5 µs of CPU
// per 1452-byte send).
// Each loop turn enters the ring once: the sends and the timer go in with the
// wait, and completions are reaped in one pass.
#include <liburing.h>
#include <netinet/udp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "io/backend.hpp"
#include "io/probe.hpp"
#include "io/tx_pool.hpp"

namespace ndm::io {

namespace {

constexpr std::uint64_t kTagRecv = 1ull << 60;
constexpr std::uint64_t kTagSend = 2ull << 60;
constexpr std::uint64_t kTagTimer = 3ull << 60;
constexpr std::uint64_t kTagTimerUpdate = 4ull << 60;
constexpr std::uint64_t kTagMask = 0xfull << 60;
constexpr std::uint64_t kSendAsync = 1ull << 59;  // with kTagSend: went to the io-wq worker
// Sends at least this large go to the io-wq worker (about 11 datagrams of 1452 B).
constexpr std::size_t kAsyncSendMin = 16 * 1024;
constexpr unsigned kBufGroup = 7;
// 2 MiB of send slots. The pool hands out the most recently freed slot, but
// slots on the io-wq worker's queue (async sends) come back late, so every
// slot that can be in flight cycles through the cache: with 128 (8 MiB)
// packing a datagram wrote to cold memory and the loopback bench spent ~22 %
// more CPU per GB than with 32. Inline sends return their slots at the next
// reap, and a turn sends at most a few pacer quanta.
constexpr unsigned kTxSlots = 32;
// Room for every control message a datagram can bring: UDP_GRO, SO_RXQ_OVFL,
// IP_TOS and IPV6_TCLASS take CMSG_SPACE(4) = 24 bytes each. A shorter buffer
// truncates the last (MSG_CTRUNC), and the ECN codepoint comes last.
constexpr std::size_t kControlSize = 128;

__kernel_timespec to_kernel_ts(Instant t) {
    const auto ns = t.time_since_epoch().count();
    return {ns / 1'000'000'000, ns % 1'000'000'000};
}

class UringBackend final : public Backend {
public:
    explicit UringBackend(const SocketOptions& opt) : tx_(kTxSlots) {
        fd_ = adopt(open_udp_socket(opt));
        try {
            init_ring();
            init_buffers(opt.gro_receive_buffers);
        } catch (...) {
            cleanup();
            throw;
        }
        arm_recv();
        spdlog::debug("ndm io: io_uring backend on {} (flags {:#x}, {} rx buffers of {} B, gso={}, gro={})",
                      local_.to_string(), ring_flags_, nbufs_, buf_size_, gso_, gro_);
    }

    ~UringBackend() override {
        drain_sends();
        cleanup();
    }

    [[nodiscard]] IoBackend kind() const override { return IoBackend::uring; }
    [[nodiscard]] std::uint64_t send_errors() const override { return tx_.errors(); }
    // The ring fd polls readable when completions (or deferred work) wait.
    [[nodiscard]] int pollable_fd() const override { return ring_.ring_fd; }

    std::uint8_t* tx_slot() override {
        if (std::uint8_t* p = tx_.peek()) return p;
        // All slots queued. Inline sends complete within the submit, so hand
        // them to the kernel and take back the slots of those done: without
        // GSO a slot holds one datagram, and a turn would otherwise stop at
        // kTxSlots datagrams (the epoll backend's sendmmsg does the same).
        if (queued_ > 0 && enabled_) {
            flush();
            reap_sends();
        }
        return tx_.peek();
    }

    void tx_queue(std::size_t len, std::size_t segment, const Address& to, Ecn ecn) override {
        const unsigned i = tx_.take(len, segment, to, ecn);
        if (tx_.send_now_if_gso_off(fd_, i, gso_)) return;
        TxSlot& s = tx_[i];
        s.fill(s.msg);
        io_uring_sqe* sqe = get_sqe();
        io_uring_prep_sendmsg(sqe, fd_, &s.msg, 0);
        std::uint64_t tag = kTagSend | i;
        if (async_send_ && (s.len >= kAsyncSendMin || async_in_flight_ > 0)) {
            sqe->flags |= IOSQE_ASYNC;
            tag |= kSendAsync;
            ++async_in_flight_;
        }
        io_uring_sqe_set_data64(sqe, tag);
        ++send_calls_;
        ++queued_;
        ++sends_in_flight_;
    }

    void flush() override {
        if (queued_ == 0 || !enabled_) return;
        io_uring_submit(&ring_);
        queued_ = 0;
    }

    void wait(Instant deadline, RxHandler& h) override {
        handler_ = &h;
        if (!enabled_) {
            if (ring_flags_ & IORING_SETUP_R_DISABLED) {
                // liburing 2.3 declares io_uring_enable_rings but does not export it.
                if (syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0) {
                    throw EndpointError(fmt::format("ndm: io_uring enable rings: {}", std::strerror(errno)));
                }
            }
            enabled_ = true;
            init_async_send();
        }
        const auto now = steady_now();
        if (deadline > now) {
            // One timer in flight; move it earlier in place rather than stacking
            // timers. A later deadline just costs one early, harmless wake.
            if (!timer_armed_) {
                timer_ts_ = to_kernel_ts(deadline);
                io_uring_sqe* sqe = get_sqe();
                io_uring_prep_timeout(sqe, &timer_ts_, 0, IORING_TIMEOUT_ABS);
                io_uring_sqe_set_data64(sqe, kTagTimer);
                timer_armed_ = true;
                timer_at_ = deadline;
            } else if (deadline < timer_at_) {
                timer_ts_ = to_kernel_ts(deadline);
                io_uring_sqe* sqe = get_sqe();
                io_uring_prep_timeout_update(sqe, &timer_ts_, kTagTimer, IORING_TIMEOUT_ABS);
                io_uring_sqe_set_data64(sqe, kTagTimerUpdate);
                timer_at_ = deadline;
            }
            if (io_uring_cq_ready(&ring_) == 0) {
                int rc = io_uring_submit_and_wait(&ring_, 1);
                if (rc == -EEXIST) {
                    throw EndpointError("ndm: io_uring endpoint driven from a second thread (SINGLE_ISSUER ring)");
                }
                if (rc < 0 && rc != -EINTR && rc != -ETIME && rc != -EBUSY) {
                    spdlog::warn("ndm io: io_uring_submit_and_wait: {}", std::strerror(-rc));
                }
            } else {
                io_uring_submit(&ring_);
            }
        } else if (defer_taskrun_) {
            io_uring_submit_and_get_events(&ring_);
        } else {
            io_uring_submit(&ring_);
        }
        queued_ = 0;
        reap();
        tx_.report(fd_, h);
        // The multishot may have ended (out of buffers, error). Re-armed now, not
        // with the next turn's submit: the ring fd must poll readable for a
        // foreign event loop when data arrives.
        if (!recv_armed_) {
            arm_recv();
            io_uring_submit(&ring_);
        }
        handler_ = nullptr;
    }

private:
    void init_ring() {
        io_uring_params p{};
        // Preferred flags first, then fewer: older kernels reject unknown flags.
        const unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
        const unsigned attempts[] = {
            // Created disabled: SINGLE_ISSUER binds the ring to the task that
            // enables it, which is the thread that first runs the endpoint.
            base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
            base | IORING_SETUP_COOP_TASKRUN,
            IORING_SETUP_CQSIZE,
            0,
        };
        int rc = -EINVAL;
        for (unsigned flags : attempts) {
            p = {};
            p.flags = flags;
            p.cq_entries = 4096;
            rc = io_uring_queue_init_params(512, &ring_, &p);
            if (rc == 0) {
                ring_flags_ = flags;
                break;
            }
            if (rc != -EINVAL) break;
        }
        if (rc < 0) throw EndpointError(fmt::format("ndm: io_uring_setup failed: {}", std::strerror(-rc)));
        ring_ok_ = true;
        defer_taskrun_ = (ring_flags_ & IORING_SETUP_DEFER_TASKRUN) != 0;
        if (!(p.features & IORING_FEAT_NODROP)) {
            spdlog::debug("ndm io: kernel without IORING_FEAT_NODROP: completions may be dropped on overflow");
        }
    }

    void init_buffers(unsigned gro_receive_buffers) {
        // Each buffer takes a whole GRO super-datagram (≤ 64 KiB) or one 64 KB
        // datagram, after the recvmsg header, the name and the control data.
        buf_size_ = 65536 + 256;
        // The kernel takes buffers in ring order, so all of them cycle through
        // the cache. With GRO a data receiver's receives mostly fill a buffer,
        // and fewer buffers stay warmer (16 ran ~15 % cheaper than 128 on the
        // receiver); every datagram GRO does not merge takes a whole one
        // (SocketOptions::gro_receive_buffers: more for a client endpoint,
        // whose data sender reads small ACKs). Without GRO every datagram
        // takes a buffer: 128. Running out only parks data in the socket
        // buffer until the re-arm.
        nbufs_ = gro_ ? std::bit_ceil(std::max(gro_receive_buffers, 1u)) : 128;  // a buffer ring is a power of two
        const long page = sysconf(_SC_PAGESIZE);
        ring_bytes_ = (nbufs_ * sizeof(io_uring_buf) + static_cast<std::size_t>(page) - 1) &
                      ~(static_cast<std::size_t>(page) - 1);
        void* mem = mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        if (mem == MAP_FAILED) throw EndpointError("ndm: mmap of the provided-buffer ring failed");
        br_ = static_cast<io_uring_buf_ring*>(mem);
        io_uring_buf_reg reg{};
        reg.ring_addr = reinterpret_cast<std::uint64_t>(br_);
        reg.ring_entries = nbufs_;
        reg.bgid = kBufGroup;
        if (int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) {
            throw EndpointError(fmt::format("ndm: io_uring_register_buf_ring failed: {}", std::strerror(-rc)));
        }
        buf_registered_ = true;
        io_uring_buf_ring_init(br_);
        rx_mem_ = PageBuffer(std::size_t{nbufs_} * buf_size_);
        const int mask = io_uring_buf_ring_mask(nbufs_);
        for (unsigned i = 0; i < nbufs_; ++i) {
            io_uring_buf_ring_add(br_, rx_mem_.data() + std::size_t{i} * buf_size_, static_cast<unsigned>(buf_size_),
                                  static_cast<unsigned short>(i), mask, static_cast<int>(i));
        }
        io_uring_buf_ring_advance(br_, static_cast<int>(nbufs_));
        rx_msg_ = {};
        rx_msg_.msg_namelen = sizeof(sockaddr_in6);
        rx_msg_.msg_controllen = kControlSize;
    }

    void cleanup() {
        if (ring_ok_) {
            if (buf_registered_) io_uring_unregister_buf_ring(&ring_, kBufGroup);
            io_uring_queue_exit(&ring_);
            ring_ok_ = false;
        }
        if (br_) munmap(br_, ring_bytes_);
        br_ = nullptr;
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

    io_uring_sqe* get_sqe() {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        while (!sqe) {
            if (int rc = io_uring_submit(&ring_); rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
                throw EndpointError(fmt::format("ndm: io_uring submit failed: {}", std::strerror(-rc)));
            }
            sqe = io_uring_get_sqe(&ring_);
        }
        return sqe;
    }

    void arm_recv() {
        io_uring_sqe* sqe = get_sqe();
        io_uring_prep_recvmsg_multishot(sqe, fd_, &rx_msg_, MSG_TRUNC);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = kBufGroup;
        io_uring_sqe_set_data64(sqe, kTagRecv);
        recv_armed_ = true;
    }

    // One pass over what the enter above completed. What completes meanwhile
    // waits for the next turn's enter (with DEFER_TASKRUN it is not even run
    // before that): entering again here to fetch it would cost a syscall per
    // turn and keep the loop from sending while completions trickle in.
    void reap() {
        unsigned head, seen = 0, returned = 0;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(&ring_, head, cqe) {
            ++seen;
            returned += on_cqe(*cqe);
        }
        // Buffers go back to the kernel in one batch with the CQ advance.
        if (returned) io_uring_buf_ring_advance(br_, static_cast<int>(returned));
        recycled_pending_ = 0;
        if (seen) io_uring_cq_advance(&ring_, seen);
    }

    // Send completions at the head of the CQ, up to the first other one: those
    // are left in order for wait(), whose handler may run only there.
    void reap_sends() {
        unsigned head, seen = 0;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(&ring_, head, cqe) {
            if ((cqe->user_data & kTagMask) != kTagSend) break;
            on_cqe(*cqe);
            ++seen;
        }
        if (seen) io_uring_cq_advance(&ring_, seen);
    }

    // NDM_IO_URING_SEND=async: large sends on the io-wq worker (see the top of
    // this file). On the thread that drives the ring (the io-wq belongs to
    // it): one unbounded worker, so asynchronous sends leave in submission
    // order. io-wq limits are per thread, so this also caps other rings'
    // unbounded workers on this thread. Without the register op (kernel <
    // 5.15) sends stay inline: several workers would reorder them.
    void init_async_send() {
        const char* v = std::getenv("NDM_IO_URING_SEND");
        if (!v || std::strcmp(v, "async") != 0) {
            spdlog::debug("ndm io: io_uring sends inline");
            return;
        }
        unsigned limits[2] = {0, 1};  // bounded: unchanged; unbounded (sockets): 1
        if (int rc = io_uring_register_iowq_max_workers(&ring_, limits); rc < 0) {
            spdlog::debug("ndm io: io_uring sends inline: cannot limit io-wq workers ({})", std::strerror(-rc));
            return;
        }
        async_send_ = true;
        spdlog::debug("ndm io: io_uring large sends asynchronous on one io-wq worker");
    }

    // Returns 1 when a provided buffer was recycled.
    unsigned on_cqe(const io_uring_cqe& cqe) {
        const std::uint64_t tag = cqe.user_data & kTagMask;
        if (tag == kTagRecv) return on_recv(cqe);
        if (tag == kTagSend) {
            if (cqe.user_data & kSendAsync) --async_in_flight_;
            on_send(static_cast<unsigned>(cqe.user_data & ~(kTagMask | kSendAsync)), cqe.res);
        } else if (tag == kTagTimer) {
            // -ETIME when it fired; anything else (e.g. -ECANCELED) also ends it.
            if (!(cqe.flags & IORING_CQE_F_MORE)) timer_armed_ = false;
        }
        return 0;
    }

    unsigned on_recv(const io_uring_cqe& cqe) {
        if (!(cqe.flags & IORING_CQE_F_MORE)) recv_armed_ = false;  // re-armed after the reap
        unsigned recycled = 0;
        if (cqe.flags & IORING_CQE_F_BUFFER) {
            const unsigned bid = cqe.flags >> IORING_CQE_BUFFER_SHIFT;
            std::uint8_t* buf = rx_mem_.data() + std::size_t{bid} * buf_size_;
            if (cqe.res >= 0) deliver(buf, cqe.res);
            io_uring_buf_ring_add(br_, buf, static_cast<unsigned>(buf_size_), static_cast<unsigned short>(bid),
                                  io_uring_buf_ring_mask(nbufs_), static_cast<int>(recycled_pending_++));
            recycled = 1;
        }
        if (cqe.res < 0) {
            const int e = -cqe.res;
            if (e == ENOBUFS) {
                ++enobufs_;  // ran out of provided buffers: re-armed once they are back
            } else if (is_icmp_error(e)) {
                drain_error_queue(fd_, *handler_);
            } else if (e == EINVAL && !saw_recv_) {
                throw EndpointError("ndm: io_uring multishot recvmsg unsupported (kernel < 6.0)");
            } else if (e != ECANCELED && e != EINTR) {
                spdlog::warn("ndm io: io_uring recvmsg: {}", std::strerror(e));
            }
        }
        return recycled;
    }

    void deliver(std::uint8_t* buf, int len) {
        saw_recv_ = true;
        io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, len, &rx_msg_);
        if (!out) return;
        if (out->flags & MSG_TRUNC) {
            spdlog::debug("ndm io: dropped a truncated datagram of {} bytes", out->payloadlen);
            return;
        }
        const Address from = Address::from(static_cast<const sockaddr*>(io_uring_recvmsg_name(out)),
                                           std::min<socklen_t>(out->namelen, rx_msg_.msg_namelen));
        RxControl control;
        // A msghdr view over the returned control data for the CMSG macros:
        // the GRO segment size and the TOS byte's ECN codepoint.
        msghdr view{};
        view.msg_control = io_uring_recvmsg_cmsg_firsthdr(out, &rx_msg_);
        view.msg_controllen = out->controllen;
        if (view.msg_control) control = parse_rx_control(view);
        note_received(control);
        auto* payload = static_cast<const std::uint8_t*>(io_uring_recvmsg_payload(out, &rx_msg_));
        const auto plen = io_uring_recvmsg_payload_length(out, len, &rx_msg_);
        deliver_split({payload, plen}, control, from, *handler_);
    }

    // Closing the ring cancels sends still queued for the io-wq worker, so
    // the last datagrams (an Endpoint's CONNECTION_CLOSEs) would never leave.
    // Waits for them briefly; only the driving thread can reap them.
    void drain_sends() {
        if (!ring_ok_ || !enabled_) return;
        io_uring_submit(&ring_);
        const Instant give_up = steady_now() + std::chrono::milliseconds(200);
        while (sends_in_flight_ > 0 && steady_now() < give_up) {
            __kernel_timespec ts{0, 10'000'000};
            io_uring_cqe* first = nullptr;
            const int rc = io_uring_wait_cqes(&ring_, &first, 1, &ts, nullptr);
            if (rc < 0 && rc != -ETIME && rc != -EINTR) break;  // e.g. -EEXIST: not the ring's thread
            unsigned head, seen = 0;
            io_uring_cqe* cqe;
            io_uring_for_each_cqe(&ring_, head, cqe) {
                ++seen;
                if ((cqe->user_data & kTagMask) == kTagSend) --sends_in_flight_;
            }
            io_uring_cq_advance(&ring_, seen);
        }
    }

    void on_send(unsigned i, int res) {
        --sends_in_flight_;
        if (res < 0) tx_.on_send_error(fd_, i, -res, gso_);
        tx_.release(i);
    }

    int fd_ = -1;
    io_uring ring_{};
    bool ring_ok_ = false;
    unsigned ring_flags_ = 0;
    bool defer_taskrun_ = false;
    bool async_send_ = false;
    io_uring_buf_ring* br_ = nullptr;
    std::size_t ring_bytes_ = 0;
    bool buf_registered_ = false;
    unsigned nbufs_ = 0;
    std::size_t buf_size_ = 0;
    unsigned recycled_pending_ = 0;  // offset for io_uring_buf_ring_add within a batch
    PageBuffer rx_mem_;
    msghdr rx_msg_{};
    bool enabled_ = false;
    bool recv_armed_ = false;
    bool saw_recv_ = false;
    std::uint64_t enobufs_ = 0;
    TxPool tx_;
    unsigned queued_ = 0;
    unsigned sends_in_flight_ = 0;
    unsigned async_in_flight_ = 0;  // of those, on the io-wq worker
    bool timer_armed_ = false;
    Instant timer_at_{};
    __kernel_timespec timer_ts_{};
    RxHandler* handler_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_uring_backend(const SocketOptions& opt) {
    if (auto p = probe_uring(); !p.available) throw EndpointError("ndm: io_uring unavailable: " + p.reason);
    return std::make_unique<UringBackend>(opt);
}

}  // namespace ndm::io
