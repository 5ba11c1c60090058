#include "io/tx_pool.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ndm::io {

void TxSlot::fill(msghdr& m) {
    iov = {data, len};
    m = {};
    m.msg_name = peer.sa();
    m.msg_namelen = peer.length;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    const auto seg = static_cast<std::uint16_t>(segment);
    if (const std::size_t n = write_tx_cmsgs(control, sizeof control, seg, peer.sa(), ecn)) {
        m.msg_control = control;
        m.msg_controllen = n;
    }
}

TxPool::TxPool(unsigned slots) : mem_(std::size_t{slots} * kTxSlotSize), slots_(slots) {
    free_.reserve(slots);
    // Reversed so that peek()/take() hand out slot 0 first, then 1, ...
    for (unsigned i = slots; i-- > 0;) {
        slots_[i].data = mem_.data() + std::size_t{i} * kTxSlotSize;
        free_.push_back(i);
    }
}

unsigned TxPool::take(std::size_t len, std::size_t segment, const Address& to, Ecn ecn) {
    const unsigned i = free_.back();
    free_.pop_back();
    TxSlot& s = slots_[i];
    s.len = len;
    s.segment = (segment > 0 && len > segment) ? segment : 0;
    s.peer = to;
    s.ecn = ecn;
    return i;
}

bool TxPool::send_now_if_gso_off(int fd, unsigned i, bool gso) {
    TxSlot& s = slots_[i];
    if (!s.segment || gso) return false;
    if (int e = send_segments(fd, s.data, s.len, s.segment, s.peer, s.ecn); e != 0) note_error(s, e);
    release(i);
    return true;
}

void TxPool::on_send_error(int fd, unsigned i, int e, bool& gso) {
    const TxSlot& s = slots_[i];
    if (is_icmp_error(e)) {
        // The send consumed an ICMP error that may be another peer's (a
        // server hears them from every client that went away): these
        // datagrams did not go, so they go again; the error queue, drained
        // in report(), says whose the error was.
        errqueue_pending_ = true;
        e = send_segments(fd, s.data, s.len, s.segment, s.peer, s.ecn, &errqueue_pending_);
        if (e == 0) return;
    }
    if (s.segment && is_gso_refusal(e)) {
        if (gso) {
            spdlog::info("ndm io: UDP GSO refused on the path to {} ({}); sending datagram by datagram",
                         s.peer.to_string(), std::strerror(e));
        }
        gso = false;
        if (int e2 = send_segments(fd, s.data, s.len, s.segment, s.peer, s.ecn); e2 != 0) note_error(s, e2);
    } else {
        note_error(s, e);
    }
}

void TxPool::note_error(const TxSlot& s, int e) {
    ++errors_;
    const auto what = [&] { return fmt::format("cannot send to {}: {}", s.peer.to_string(), std::strerror(e)); };
    if (is_icmp_error(e)) {
        errqueue_pending_ = true;  // the socket error came from an ICMP message
        if (e != ECONNREFUSED) deferred_.push_back({s.peer, e, what()});
    } else if (e == EACCES || e == EPERM || e == EAFNOSUPPORT || e == EADDRNOTAVAIL) {
        deferred_.push_back({s.peer, e, what()});
    } else if (e != EAGAIN && e != ENOBUFS && e != EINTR) {
        // Anything else is lost like a dropped datagram; the transport recovers.
        spdlog::debug("ndm io: send to {} failed: {}", s.peer.to_string(), std::strerror(e));
    }
}

void TxPool::report(int fd, RxHandler& h) {
    if (errqueue_pending_) {
        errqueue_pending_ = false;
        drain_error_queue(fd, h);
    }
    if (deferred_.empty()) return;
    auto errors = std::move(deferred_);
    deferred_.clear();
    for (auto& d : errors) h.on_peer_error(d.peer, d.error, d.what);
}

}  // namespace ndm::io
