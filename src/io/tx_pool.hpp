// The send slots both backends hand out through Backend::tx_slot(): one
// page-aligned buffer cut into kTxSlotSize slots with a free list, what each
// slot will send, and what happens when a send fails (GSO refused → datagram by
// datagram; ICMP and route errors → RxHandler::on_peer_error). The backends
// differ only in how they hand the slots to the kernel.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/backend.hpp"

namespace ndm::io {

struct TxSlot {
    std::uint8_t* data = nullptr;
    std::size_t len = 0;
    std::size_t segment = 0;  // GSO segment size; 0 for a single datagram
    Address peer;
    Ecn ecn = Ecn::not_ect;   // of every datagram in the slot
    iovec iov{};
    msghdr msg{};  // for backends whose header must outlive the call (io_uring)
    alignas(cmsghdr) std::uint8_t control[64]{};

    // Points m at this slot's bytes and peer, with a UDP_SEGMENT cmsg for GSO
    // and an IP_TOS / IPV6_TCLASS one for an ECN codepoint.
    void fill(msghdr& m);
};

class TxPool {
public:
    explicit TxPool(unsigned slots);

    // The bytes of the slot take() will return next, or nullptr if none is free.
    [[nodiscard]] std::uint8_t* peek() const {
        return free_.empty() ? nullptr : slots_[free_.back()].data;
    }
    // Takes that slot for `len` bytes to `to`; `segment` as in Backend::tx_queue.
    unsigned take(std::size_t len, std::size_t segment, const Address& to, Ecn ecn);
    void release(unsigned i) { free_.push_back(i); }
    TxSlot& operator[](unsigned i) { return slots_[i]; }

    // A GSO slot queued after GSO was turned off goes out now, datagram by
    // datagram, and is freed: returns true then.
    bool send_now_if_gso_off(int fd, unsigned i, bool gso);
    // Slot i's send failed with errno e. An ICMP error (which may be another
    // peer's) sends the slot again, datagram by datagram; a GSO refusal turns
    // `gso` off (logged once) and does the same; errors a connection must hear
    // about are kept for report(). The caller still releases the slot.
    void on_send_error(int fd, unsigned i, int e, bool& gso);
    // Delivers the kept errors, first draining the socket error queue when an
    // ICMP error was seen (it says which peer). Sends may fail outside wait(),
    // so errors wait here for a handler.
    void report(int fd, RxHandler& h);
    // Sends that failed for good (after any datagram-by-datagram retry).
    [[nodiscard]] std::uint64_t errors() const { return errors_; }

private:
    void note_error(const TxSlot& s, int e);

    struct PeerError {
        Address peer;
        int error;
        std::string what;
    };
    PageBuffer mem_;
    std::vector<TxSlot> slots_;
    std::vector<unsigned> free_;
    std::vector<PeerError> deferred_;
    bool errqueue_pending_ = false;
    std::uint64_t errors_ = 0;
};

}  // namespace ndm::io
