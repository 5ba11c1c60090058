#include "transport/stream.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include <sys/mman.h>

namespace ndm::transport {

// ---- OffsetBuffer -----------------------------------------------------------

namespace {
// Rings from this size on are mapped separately, aligned for huge pages.
constexpr std::size_t kHugePage = 2u << 20;

// An anonymous mapping of n bytes starting on a huge-page boundary (over-map
// by one huge page and trim), with MADV_HUGEPAGE: advice, THP may be off.
std::uint8_t* map_aligned(std::size_t n) {
    void* p = ::mmap(nullptr, n + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    auto base = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t aligned = (base + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
    if (aligned > base) ::munmap(p, aligned - base);
    if (std::size_t tail = base + n + kHugePage - (aligned + n); tail > 0)
        ::munmap(reinterpret_cast<void*>(aligned + n), tail);
    auto* ptr = reinterpret_cast<std::uint8_t*>(aligned);
#ifdef MADV_HUGEPAGE
    ::madvise(ptr, n, MADV_HUGEPAGE);
#endif
    return ptr;
}
}  // namespace

OffsetBuffer::Memory::Memory(std::size_t n) : size(n) {
    if (n < kHugePage) {
        // Uninitialised on purpose: pages are committed only when first written.
        ptr = new std::uint8_t[n];
        return;
    }
    ptr = map_aligned(n);
    mapped = true;
}

bool OffsetBuffer::Memory::grow_mapped(std::size_t n) {
    if (!mapped || n <= size) return false;
    std::uint8_t* fresh = map_aligned(n);
    // Move the old pages (already faulted in and zeroed: fresh memory is
    // what a first touch is slow on) to the front of the new mapping.
    void* moved = ::mremap(ptr, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, fresh);
    if (moved == MAP_FAILED) {
        ::munmap(fresh, n);
        return false;
    }
    ptr = fresh;
    size = n;
    return true;
}

OffsetBuffer::Memory& OffsetBuffer::Memory::operator=(Memory&& o) noexcept {
    if (this != &o) {
        release();
        ptr = o.ptr;
        size = o.size;
        mapped = o.mapped;
        o.ptr = nullptr;
    }
    return *this;
}

void OffsetBuffer::Memory::release() {
    if (!ptr) return;
    if (mapped) {
        ::munmap(ptr, size);
    } else {
        delete[] ptr;
    }
    ptr = nullptr;
}

void OffsetBuffer::reserve(std::size_t n) {
    if (n <= cap_) return;
    std::size_t cap = std::max<std::size_t>(cap_ ? cap_ : 1, min_ring_);
    while (cap < n) cap *= 2;
    const std::size_t old_cap = cap_;
    if (cap <= ring_.size || ring_.grow_mapped(cap)) {
        // Same data, same ring indices, in a larger ring over the same pages
        // (memory a shrink left, or a grown mapping): re-base it so that
        // begin_ sits at index 0, as in a fresh ring. A wrapped tail
        // [0, head_ + size_ - old_cap) goes after the old end first, which
        // makes the data one run [head_, head_ + size_).
        std::uint8_t* r = ring_.ptr;
        if (head_ + size_ > old_cap) std::memcpy(r + old_cap, r, head_ + size_ - old_cap);
        if (head_ > 0) std::memmove(r, r + head_, size_);
        cap_ = cap;
        head_ = 0;
        return;
    }
    Memory ring(cap);
    if (size_ > 0) read_at(begin_, {ring.ptr, size_});
    ring_ = std::move(ring);
    cap_ = cap;
    head_ = 0;
}

std::span<const std::uint8_t> OffsetBuffer::contiguous(std::uint64_t off, std::size_t max_len) const {
    std::size_t i = index(off);
    std::size_t n = std::min<std::size_t>({max_len, static_cast<std::size_t>(end() - off), cap_ - i});
    return {ring_.ptr + i, n};
}

void OffsetBuffer::write_at(std::uint64_t off, std::span<const std::uint8_t> bytes) {
    std::size_t i = index(off);
    std::size_t first = std::min(bytes.size(), cap_ - i);
    std::memcpy(ring_.ptr + i, bytes.data(), first);
    std::memcpy(ring_.ptr, bytes.data() + first, bytes.size() - first);
}

void OffsetBuffer::read_at(std::uint64_t off, std::span<std::uint8_t> out) const {
    std::size_t i = index(off);
    std::size_t first = std::min(out.size(), cap_ - i);
    std::memcpy(out.data(), ring_.ptr + i, first);
    std::memcpy(out.data() + first, ring_.ptr, out.size() - first);
}

void OffsetBuffer::prefetch(std::uint64_t off, std::size_t n) const {
    if (off < begin_ || off >= end() || n == 0) return;
    n = std::min<std::size_t>(n, static_cast<std::size_t>(end() - off));
    for (std::size_t done = 0; done < n;) {
        auto run = contiguous(off + done, n - done);
        for (std::size_t i = 0; i < run.size(); i += 64) __builtin_prefetch(run.data() + i);
        __builtin_prefetch(run.data() + run.size() - 1);
        done += run.size();
    }
}

void OffsetBuffer::append(std::span<const std::uint8_t> bytes) {
    prepared_ = 0;  // may move the ring: a prepared span is gone
    if (bytes.empty()) return;
    reserve(size_ + bytes.size());
    std::uint64_t off = end();
    size_ += bytes.size();
    write_at(off, bytes);
}

std::span<std::uint8_t> OffsetBuffer::prepare(std::size_t n) {
    prepared_ = 0;
    if (n == 0) return {};
    reserve(size_ + n);
    const std::size_t i = index(end());
    prepared_ = std::min(n, cap_ - i);
    return {ring_.ptr + i, prepared_};
}

void OffsetBuffer::commit(std::size_t n) {
    if (n > prepared_) throw std::logic_error("commit: more bytes than prepare() offered");
    size_ += n;
    prepared_ = 0;
}

void OffsetBuffer::extend_to(std::uint64_t new_end) {
    prepared_ = 0;
    if (new_end <= end()) return;
    reserve(static_cast<std::size_t>(new_end - begin_));
    size_ = static_cast<std::size_t>(new_end - begin_);
}

void OffsetBuffer::drop_front_to(std::uint64_t off) {
    if (off <= begin_) return;
    off = std::min(off, end());
    std::size_t n = static_cast<std::size_t>(off - begin_);
    if (cap_) head_ = (head_ + n) & (cap_ - 1);
    size_ -= n;
    begin_ = off;
    shrink_if_oversized();
}

void OffsetBuffer::release_to(std::uint64_t off) {
    ring_ = Memory();
    prepared_ = 0;
    cap_ = head_ = size_ = 0;
    begin_ = std::max(begin_, off);
}

// A ring that grew for a burst (slow start, a reader that fell behind) would
// otherwise cycle through all of its capacity for good, touching far more
// memory than it holds: payload written through a 64 MiB ring ran at a
// quarter of the speed of a 4 MiB one (bench/RESULTS.md, "Sender rings").
// Once it holds at most a quarter of its capacity, all of it in the lower
// half, it uses only that half: the stored bytes keep their indices, so
// nothing moves, and the memory stays for growing again (reserve()).
void OffsetBuffer::shrink_if_oversized() {
    if (prepared_ != 0) return;  // a prepared span may reach into the upper half
    while (cap_ > min_ring_ && size_ <= cap_ / 4 && head_ + size_ <= cap_ / 2) cap_ /= 2;
    if (cap_) head_ &= cap_ - 1;  // an empty ring's head may sit at the old half's edge
}

// ---- SendStream -------------------------------------------------------------

std::size_t SendStream::capacity() const {
    if (fin_offset_ || reset_) return 0;
    const std::uint64_t held = end() - begin();
    return held >= buffer_limit_ ? 0 : static_cast<std::size_t>(buffer_limit_ - held);
}

std::size_t SendStream::write(std::span<const std::uint8_t> data) {
    if (source_) return 0;
    std::size_t n = std::min(data.size(), capacity());
    buffer_.append(data.first(n));
    return n;
}

std::span<std::uint8_t> SendStream::prepare(std::size_t max) {
    if (source_) return {};
    return buffer_.prepare(std::min(max, capacity()));
}

bool SendStream::set_source(Source source) {
    if (!source || end() > 0 || fin_offset_ || source_) return false;
    source_ = std::move(source);
    return true;
}

std::size_t SendStream::generate(std::size_t n) {
    if (!source_) return 0;
    n = std::min(n, capacity());
    generated_end_ += n;
    return n;
}

std::span<const std::uint8_t> SendStream::bytes_at(std::uint64_t off, std::size_t max_len) const {
    if (!source_) return buffer_.contiguous(off, max_len);
    // One buffer per thread, in the cache from the previous chunk: the bytes
    // go from the source to the packet without passing through memory.
    thread_local std::vector<std::uint8_t> scratch;
    constexpr std::size_t kMaxChunk = 64u << 10;
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>({max_len, end() - off, kMaxChunk}));
    if (scratch.size() < n) scratch.resize(kMaxChunk);
    const std::span<std::uint8_t> out(scratch.data(), n);
    source_(off, out);
    return out;
}

namespace {
// First offset >= from that is not in `covered`, and the end of the gap that
// starts there (bounded by limit).
std::pair<std::uint64_t, std::uint64_t> next_gap(const RangeSet& covered, std::uint64_t from,
                                                  std::uint64_t limit) {
    std::uint64_t start = covered.contiguous_end(from);
    std::uint64_t end = limit;
    for (const auto& iv : covered) {
        if (iv.lo > start) {
            end = std::min(end, iv.lo);
            break;
        }
    }
    return {start, std::max(start, end)};
}
}  // namespace

std::optional<SendStream::Chunk> SendStream::next_chunk(std::size_t max_len,
                                                        std::uint64_t new_data_limit) const {
    if (reset_) return std::nullopt;
    // Retransmissions first: the lowest lost range that is not acknowledged.
    for (const auto& iv : lost_) {
        std::uint64_t lo = std::max(iv.lo, begin());
        if (lo >= iv.hi) continue;
        auto [start, end] = next_gap(acked_, lo, iv.hi);
        if (start >= end) continue;
        auto data = bytes_at(start, static_cast<std::size_t>(std::min<std::uint64_t>(end - start, max_len)));
        end = start + data.size();
        Chunk c{start, data, false, true};
        c.fin = fin_offset_ && end == *fin_offset_ && !fin_acked_;
        return c;
    }
    if (fin_lost_ && fin_offset_ && !fin_acked_ && sent_end_ == *fin_offset_) {
        return Chunk{*fin_offset_, {}, true, true};
    }
    // New data, within flow control.
    std::uint64_t end = std::min({this->end(), new_data_limit, sent_end_ + max_len});
    if (end > sent_end_) {
        auto data = bytes_at(sent_end_, static_cast<std::size_t>(end - sent_end_));
        end = sent_end_ + data.size();
        Chunk c{sent_end_, data, false, false};
        c.fin = fin_offset_ && end == *fin_offset_;
        return c;
    }
    if (fin_offset_ && !fin_sent_ && sent_end_ == *fin_offset_) return Chunk{sent_end_, {}, true, false};
    return std::nullopt;
}

void SendStream::on_sent(const Chunk& c) {
    std::uint64_t end = c.offset + c.data.size();
    if (c.retransmission) {
        // Everything in lost_ below this chunk is acknowledged (next_chunk
        // picked the lowest unacknowledged lost byte), so drop it all.
        lost_.remove_below(end);
    } else {
        sent_end_ = std::max(sent_end_, end);
    }
    if (c.fin) {
        fin_sent_ = true;
        fin_lost_ = false;
    }
}

std::uint64_t SendStream::reset() {
    if (reset_) return sent_end_;
    reset_ = true;
    // Nothing below sent_end_ is kept, nothing above it will be sent: the
    // stream's written bytes end where its final size does.
    source_ = nullptr;
    buffer_.release_to(sent_end_);
    generated_begin_ = generated_end_ = 0;
    acked_ = RangeSet();  // their memory too
    lost_ = RangeSet();
    fin_lost_ = false;
    return sent_end_;
}

std::uint64_t SendStream::on_acked(std::uint64_t offset, std::uint64_t length, bool fin) {
    if (reset_) return 0;
    std::uint64_t lo = std::max(offset, begin());
    std::uint64_t hi = offset + length;
    std::uint64_t added = hi > lo ? acked_.add(lo, hi) : 0;
    if (fin) {
        fin_acked_ = true;
        fin_lost_ = false;
    }
    release_acked_prefix();
    return added;
}

void SendStream::release_acked_prefix() {
    const std::uint64_t from = acked_.contiguous_end(begin());
    if (from == begin()) return;
    if (source_) {
        generated_begin_ = from;
    } else {
        buffer_.drop_front_to(from);
    }
    acked_.remove_below(from);
    lost_.remove_below(from);
}

void SendStream::on_lost(std::uint64_t offset, std::uint64_t length, bool fin) {
    if (reset_) return;
    std::uint64_t lo = std::max(offset, begin());
    std::uint64_t hi = offset + length;
    if (hi > lo) lost_.add(lo, hi);
    if (fin && !fin_acked_) fin_lost_ = true;
}

bool SendStream::has_pending(std::uint64_t new_data_limit) const {
    if (reset_) return false;
    // Exact, not approximate: a driver that is told there is work and then
    // finds none would spin. Without losses next_chunk() has only new data
    // or the FIN to offer, which this answers without building a chunk (a
    // connection asks several times a packet, for every stream).
    if (lost_.empty() && !fin_lost_) {
        if (std::min(end(), new_data_limit) > sent_end_) return true;
        return fin_offset_ && !fin_sent_ && sent_end_ == *fin_offset_;
    }
    return next_chunk(1, new_data_limit).has_value();
}

bool SendStream::all_acked() const {
    return !reset_ && fin_offset_ && fin_acked_ && end() == begin();
}

// ---- RecvStream -------------------------------------------------------------

RecvStream::Result RecvStream::on_frame(std::uint64_t offset, std::span<const std::uint8_t> data,
                                        bool fin) {
    std::uint64_t end = offset + data.size();
    // RFC 9000 §4.5: the final size never changes and no data lies beyond it.
    if (final_size_ && (end > *final_size_ || (fin && end != *final_size_))) {
        return Result::final_size_error;
    }
    bool new_fin = false;
    if (fin && !final_size_) {
        if (end < highest_) return Result::final_size_error;
        final_size_ = end;
        new_fin = true;
    }
    if (discarding_) {
        // Stopped or reset: counted, not kept (discard()).
        if (end <= highest_) return new_fin ? Result::ok : Result::duplicate;
        skipped_ += end - highest_;
        highest_ = read_offset_ = end;
        buffer_.release_to(end);
        return Result::ok;
    }
    if (end <= read_offset_) return new_fin ? Result::ok : Result::duplicate;

    if (sink_ && offset <= read_offset_ && received_.empty()) {
        // In order with nothing waiting: straight from the packet to the
        // sink, through no buffer (with many connections, every receive
        // ring's lines were cold).
        const std::uint64_t at = read_offset_;
        const auto fresh = data.subspan(static_cast<std::size_t>(at - offset));
        read_offset_ = end;
        highest_ = std::max(highest_, end);
        buffer_.skip_empty_to(end);
        sunk_ += fresh.size();
        sink_(at, fresh);
        return Result::ok;
    }

    // Copy only the gaps: bytes already received are kept as first delivered.
    const std::uint64_t first = std::max(offset, read_offset_);
    std::uint64_t fresh = 0;
    for (std::uint64_t pos = first; pos < end;) {
        auto [gap_lo, gap_hi] = next_gap(received_, pos, end);
        if (gap_lo >= end) break;
        fresh += gap_hi - gap_lo;
        pos = gap_hi;
    }
    highest_ = std::max(highest_, end);
    if (fresh == 0) return new_fin ? Result::ok : Result::duplicate;
    held_ += fresh;
    const bool in_ring = end - read_offset_ <= ring_reach();
    if (in_ring) buffer_.extend_to(end);
    for (std::uint64_t pos = first; pos < end;) {
        auto [gap_lo, gap_hi] = next_gap(received_, pos, end);
        if (gap_lo >= end) break;
        store(offset, data, gap_lo, gap_hi, in_ring);
        pos = gap_hi;
    }
    received_.add(first, end);
    if (!far_.empty()) pull_far_into_ring();
    if (sink_) drain_to_sink();
    return Result::ok;
}

std::uint64_t RecvStream::discard() {
    discarding_ = true;
    const std::uint64_t skipped = highest_ - read_offset_;
    buffer_.release_to(highest_);
    far_ = FarBytes();
    received_ = RangeSet();
    held_ = 0;
    read_offset_ = highest_;
    sink_ = nullptr;
    return skipped;
}

std::uint64_t RecvStream::on_reset(std::uint64_t final_size) {
    std::uint64_t skipped = discard();
    reset_ = true;
    final_size_ = final_size;
    skipped += final_size - highest_;
    highest_ = read_offset_ = final_size;
    buffer_.release_to(final_size);
    return skipped;
}

void RecvStream::store(std::uint64_t offset, std::span<const std::uint8_t> data, std::uint64_t lo, std::uint64_t hi,
                       bool in_ring) {
    const auto bytes = data.subspan(static_cast<std::size_t>(lo - offset), static_cast<std::size_t>(hi - lo));
    if (in_ring) {
        buffer_.write_at(lo, bytes);
    } else {
        far_.insert(lo, bytes);
    }
}

void RecvStream::pull_far_into_ring() {
    far_.take_below(read_offset_ + ring_reach(), [this](std::uint64_t off, std::span<const std::uint8_t> bytes) {
        buffer_.extend_to(off + bytes.size());
        buffer_.write_at(off, bytes);
    });
}

std::size_t RecvStream::memory() const { return buffer_.ring_capacity() + far_.memory(); }

std::size_t RecvStream::set_sink(Sink sink) {
    sink_ = std::move(sink);
    if (!sink_) return 0;
    drain_to_sink();
    return take_sunk();
}

void RecvStream::drain_to_sink() {
    for (auto run = peek(); !run.empty(); run = peek()) {
        sink_(read_offset_, run);
        sunk_ += run.size();
        consume(run.size());
    }
}

std::size_t RecvStream::readable() const {
    return static_cast<std::size_t>(received_.contiguous_end(read_offset_) - read_offset_);
}

std::size_t RecvStream::read(std::span<std::uint8_t> out) {
    std::size_t n = std::min(out.size(), readable());
    if (n == 0) return 0;
    buffer_.read_at(read_offset_, out.first(n));
    consume(n);
    return n;
}

std::span<const std::uint8_t> RecvStream::peek() const {
    const std::size_t n = readable();
    return n == 0 ? std::span<const std::uint8_t>{} : buffer_.contiguous(read_offset_, n);
}

void RecvStream::consume(std::size_t n) {
    if (n > readable()) throw std::logic_error("consume: more bytes than are readable");
    read_offset_ += n;
    held_ -= n;
    buffer_.drop_front_to(read_offset_);
    buffer_.rewind_if_empty();
    received_.remove_below(read_offset_);
}

}  // namespace ndm::transport
