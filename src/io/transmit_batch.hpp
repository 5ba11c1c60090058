// Send batching for the Endpoint: datagrams of one destination and one size
// collect in one send slot and leave as one UDP GSO send (UDP_SEGMENT, see
// udp(7)); a change of destination or a datagram that breaks the GSO rule
// flushes the batch and starts the next. msquic batches its sends the same way
// (CXPLAT_SEND_DATA per destination), as do the ngtcp2 examples. The batch
// works over the Backend seam, so the io_uring and the epoll backend share it;
// the Endpoint ends a batch after each pass over the connections with work,
// so connections to one destination (ndm-send -P's share one address) share
// GSO sends, each having added only what its pacer released (RFC 9002 §7.7).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "io/backend.hpp"

namespace ndm::io {

// The sizes of one GSO run (Linux UDP_SEGMENT): every datagram `segment()`
// bytes except the last, which may be shorter; at most kMaxGsoSegments of
// them and kMaxUdpPayload bytes in all. The destination is the owner's check.
// Also used by ndm::UdpSocket::send, so both send paths follow one rule.
class GsoRun {
public:
    // May a datagram of n bytes join this (non-empty) run?
    [[nodiscard]] bool accepts(std::size_t n) const {
        return count_ > 0 && !closed_ && n <= segment_ && count_ < kMaxGsoSegments && len_ + n <= kMaxUdpPayload;
    }
    // Adds a datagram of n bytes (the first sets the segment size).
    void add(std::size_t n) {
        if (count_ == 0) segment_ = n;
        len_ += n;
        ++count_;
        if (n < segment_) closed_ = true;  // only the last may be shorter
    }
    void clear() { *this = GsoRun{}; }
    [[nodiscard]] std::size_t segment() const { return segment_; }
    [[nodiscard]] std::size_t len() const { return len_; }
    [[nodiscard]] std::size_t count() const { return count_; }

private:
    std::size_t segment_ = 0, len_ = 0, count_ = 0;
    bool closed_ = false;
};

class TransmitBatch {
public:
    explicit TransmitBatch(Backend& backend) : backend_(&backend) {}

    // Where the next datagram to `to` of up to `room` bytes is to be written:
    // the open slot, after flushing it when it goes elsewhere or lacks the
    // room, else a new one. nullptr when no slot is free.
    std::uint8_t* reserve(const Address& to, std::size_t room);
    // The n bytes just written at reserve()'s pointer, to be sent with ECN
    // codepoint `ecn`, join the batch, or, when the GSO rule forbids it or
    // the batch has another codepoint (one send has one TOS), start a new one
    // in a fresh slot. Returns false when no slot was free: the datagram is
    // then stashed.
    bool commit(std::size_t n, Ecn ecn = Ecn::not_ect);
    // Copies d into the batch (flushing first when it cannot join); false
    // when no slot is free (nothing copied).
    bool copy(const Address& to, std::span<const std::uint8_t> d, Ecn ecn = Ecn::not_ect);
    // copy(), or the stash when it is not empty or no slot is free (keeps the
    // order); false when the datagram was stashed.
    bool send_or_stash(const Address& to, std::span<const std::uint8_t> d, Ecn ecn = Ecn::not_ect);
    // Sends stashed datagrams while slots are free; true when none is left.
    bool flush_stash();
    [[nodiscard]] bool stash_empty() const { return stash_.empty(); }

    // Queues the open batch with the backend as one send (a GSO send when it
    // holds several datagrams); returns how many datagrams it held.
    std::size_t flush();
    // Datagrams in the open batch.
    [[nodiscard]] std::size_t pending() const { return run_.count(); }
    // Datagrams handed to the backend so far, by every flush (the explicit
    // ones and those reserve(), commit() and copy() make on their own).
    [[nodiscard]] std::uint64_t queued() const { return queued_; }

private:
    [[nodiscard]] bool joins(const Address& to, std::size_t n, Ecn ecn) const {
        return backend_->gso() && run_.accepts(n) && peer_ == to && ecn_ == ecn;
    }
    bool open(const Address& to, Ecn ecn);
    struct Stashed {
        Address to;
        std::vector<std::uint8_t> data;
        Ecn ecn;
    };

    Backend* backend_;
    std::uint8_t* slot_ = nullptr;
    Address peer_;
    Ecn ecn_ = Ecn::not_ect;
    GsoRun run_;
    std::uint64_t queued_ = 0;
    std::deque<Stashed> stash_;  // sends without a free slot
};

}  // namespace ndm::io
