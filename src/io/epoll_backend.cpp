// The fallback data path on Asio (epoll): readiness from Asio, the bytes moved
// with recvmmsg (ndm::UdpReceiveBatch) and sendmmsg on the native socket so that GRO control messages and
// per-message UDP_SEGMENT cmsgs still work. Used when io_uring is unavailable
// (seccomp, io_uring_disabled, old kernels) or chosen explicitly.
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "io/backend.hpp"
#include "io/tx_pool.hpp"
#include "ndm/udp_socket.hpp"

namespace ndm::io {

namespace {

constexpr unsigned kRxBatch = 32;
constexpr unsigned kTxSlots = 64;
constexpr std::size_t kRxBufSize = 65536;

std::chrono::steady_clock::time_point to_steady(Instant t) {
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(t.time_since_epoch()));
}

class EpollBackend final : public Backend {
public:
    explicit EpollBackend(const SocketOptions& opt)
        : io_(1), rx_mem_(kRxBatch * kRxBufSize), rx_(kRxBatch, kRxBufSize, {rx_mem_.data(), rx_mem_.size()}),
          tx_(kTxSlots) {
        fd_ = adopt(open_udp_socket(opt));
        try {
            socket_.assign(local_.family() == AF_INET6 ? asio::ip::udp::v6() : asio::ip::udp::v4(), fd_);
        } catch (const std::exception& e) {
            close(fd_);
            throw EndpointError(fmt::format("ndm: asio cannot adopt the UDP socket: {}", e.what()));
        }
        spdlog::debug("ndm io: epoll backend on {} (gso={}, gro={})", local_.to_string(), gso_, gro_);
    }

    ~EpollBackend() override {
        asio::error_code ec;
        socket_.close(ec);  // closes fd_
    }

    [[nodiscard]] IoBackend kind() const override { return IoBackend::epoll; }
    [[nodiscard]] std::uint64_t send_errors() const override { return tx_.errors(); }
    [[nodiscard]] int pollable_fd() const override { return fd_; }

    std::uint8_t* tx_slot() override {
        if (std::uint8_t* p = tx_.peek()) return p;
        flush();  // synchronous sends free the slots at once
        return tx_.peek();
    }

    void tx_queue(std::size_t len, std::size_t segment, const Address& to, Ecn ecn) override {
        const unsigned i = tx_.take(len, segment, to, ecn);
        if (!tx_.send_now_if_gso_off(fd_, i, gso_)) pending_.push_back(i);
    }

    void flush() override {
        std::size_t done = 0;
        while (done < pending_.size()) {
            const std::size_t n = std::min<std::size_t>(pending_.size() - done, kTxSlots);
            mmsghdr msgs[kTxSlots];
            for (std::size_t k = 0; k < n; ++k) {
                tx_[pending_[done + k]].fill(msgs[k].msg_hdr);
                msgs[k].msg_len = 0;
            }
            const int r = sendmmsg(fd_, msgs, static_cast<unsigned>(n), 0);
            if (r > 0) {
                send_calls_ += static_cast<std::uint64_t>(r);
                done += static_cast<std::size_t>(r);
                continue;
            }
            const int e = errno;
            if (e == EINTR) continue;
            if (e == EAGAIN || e == ENOBUFS) {
                want_write_ = true;  // wait() resumes when the socket drains
                break;
            }
            // The first message failed: handle it alone and move on.
            tx_.on_send_error(fd_, pending_[done], e, gso_);
            ++done;
            ++send_calls_;
        }
        for (std::size_t k = 0; k < done; ++k) tx_.release(pending_[k]);
        pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
    }

    void wait(Instant deadline, RxHandler& h) override {
        flush();
        tx_.report(fd_, h);
        if (!drain(h)) {  // budget used up: more is waiting, do not sleep
            return;
        }
        const auto now = steady_now();
        if (deadline > now && received_ == 0) {
            arm();
            // Asio's epoll is edge-triggered: a datagram that arrived between
            // our EAGAIN and the wait being queued raised no new edge. Look
            // once more now that the wait is queued.
            if (drain(h) && received_ == 0) {
                if (io_.stopped()) io_.restart();
                const auto limit = std::min(deadline, now + std::chrono::hours(1));
                io_.run_one_until(to_steady(limit));
                if (readable_) drain(h);
                if (writable_) flush();
                tx_.report(fd_, h);
            }
        }
        readable_ = writable_ = false;
        received_ = 0;
    }

private:
    void arm() {
        if (!read_armed_) {
            read_armed_ = true;
            socket_.async_wait(asio::socket_base::wait_read, [this](const asio::error_code&) {
                read_armed_ = false;
                readable_ = true;
            });
        }
        if (want_write_ && !write_armed_) {
            write_armed_ = true;
            socket_.async_wait(asio::socket_base::wait_write, [this](const asio::error_code&) {
                write_armed_ = false;
                writable_ = true;
                want_write_ = false;
            });
        }
    }

    // Receives until EAGAIN (true) or the batch budget is spent (false).
    bool drain(RxHandler& h) {
        for (int round = 0; round < 8; ++round) {
            const int n = rx_.receive(fd_);
            if (n < 0) {
                const int e = -n;
                if (e == EAGAIN) return true;
                if (e == EINTR) continue;
                if (is_icmp_error(e)) {
                    drain_error_queue(fd_, h);  // the socket error came from ICMP
                    continue;
                }
                spdlog::warn("ndm io: recvmmsg: {}", std::strerror(e));
                return true;
            }
            for (int k = 0; k < n; ++k) {
                if (rx_.truncated(k)) continue;
                ++received_;
                const RxControl control = rx_.info(k);
                note_received(control);
                deliver_split(rx_.payload(k), control, Address::from(rx_.from(k), rx_.from_len(k)), h);
            }
            if (static_cast<unsigned>(n) < kRxBatch) return true;
        }
        return false;
    }

    asio::io_context io_;
    asio::ip::udp::socket socket_{io_};
    int fd_ = -1;
    PageBuffer rx_mem_;
    UdpReceiveBatch rx_;  // in rx_mem_
    TxPool tx_;
    std::vector<unsigned> pending_;
    bool read_armed_ = false, write_armed_ = false;
    bool readable_ = false, writable_ = false, want_write_ = false;
    std::uint64_t received_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_epoll_backend(const SocketOptions& opt) { return std::make_unique<EpollBackend>(opt); }

}  // namespace ndm::io
