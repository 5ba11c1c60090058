#include "io/transmit_batch.hpp"

#include <cstring>

namespace ndm::io {

bool TransmitBatch::open(const Address& to, Ecn ecn) {
    slot_ = backend_->tx_slot();
    if (!slot_) return false;
    peer_ = to;
    ecn_ = ecn;
    return true;
}

std::size_t TransmitBatch::flush() {
    const std::size_t n = run_.count();
    if (n) backend_->tx_queue(run_.len(), n > 1 ? run_.segment() : 0, peer_, ecn_);
    queued_ += n;
    slot_ = nullptr;
    run_.clear();
    return n;
}

std::uint8_t* TransmitBatch::reserve(const Address& to, std::size_t room) {
    if (slot_ && (!(peer_ == to) || kTxSlotSize - run_.len() < room)) flush();
    if (!slot_ && !open(to, ecn_)) return nullptr;
    return slot_ + run_.len();
}

bool TransmitBatch::commit(std::size_t n, Ecn ecn) {
    if (run_.count() == 0) ecn_ = ecn;  // the codepoint is known only now, after the write
    if (run_.count() == 0 || joins(peer_, n, ecn)) {
        run_.add(n);
        return true;
    }
    // Larger than the batch's segment, another codepoint (or GSO off): it
    // starts a new slot. The old slot's bytes stay intact until the backend
    // reuses it.
    const std::size_t off = run_.len();
    std::uint8_t* old = slot_;
    const Address to = peer_;
    flush();
    if (!open(to, ecn)) {
        stash_.push_back({to, std::vector<std::uint8_t>(old + off, old + off + n), ecn});
        return false;
    }
    std::memmove(slot_, old + off, n);
    run_.add(n);
    return true;
}

bool TransmitBatch::copy(const Address& to, std::span<const std::uint8_t> d, Ecn ecn) {
    if (!joins(to, d.size(), ecn)) {
        flush();
        if (!open(to, ecn)) return false;
    }
    std::memmove(slot_ + run_.len(), d.data(), d.size());
    run_.add(d.size());
    return true;
}

bool TransmitBatch::send_or_stash(const Address& to, std::span<const std::uint8_t> d, Ecn ecn) {
    if (stash_.empty() && copy(to, d, ecn)) return true;
    stash_.push_back({to, std::vector<std::uint8_t>(d.begin(), d.end()), ecn});
    return false;
}

bool TransmitBatch::flush_stash() {
    while (!stash_.empty()) {
        const Stashed& s = stash_.front();
        if (!copy(s.to, s.data, s.ecn)) return false;
        stash_.pop_front();
    }
    return true;
}

}  // namespace ndm::io
