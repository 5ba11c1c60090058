// One bidirectional stream: a send buffer that remembers what is in flight,
// acknowledged or lost, and a receive buffer that reassembles out-of-order
// STREAM frames into a byte-exact in-order sequence (RFC 9000 §2, §3).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "transport/far_bytes.hpp"
#include "transport/range_set.hpp"

namespace ndm::transport {

// Bytes indexed by absolute stream offset, holding [begin, end), in a ring
// that doubles when full and halves when mostly empty (keeping its memory):
// no per-byte compaction, no repeated page faults once the buffer has reached
// the flow's working size, and a cycle through memory not much longer than
// what it holds. The ring's geometry (capacity, where it wraps) decides where
// STREAM frames are split, so it is part of the protocol's observable
// behaviour: it is a function of the buffer's history alone (simulations
// stay deterministic).
class OffsetBuffer {
public:
    // The ring's first capacity, a power of two: a bulk stream's 64 KiB by
    // default; CRYPTO streams, whose flights are a few KB, start smaller.
    static constexpr std::size_t kDefaultMinRing = 64u << 10;
    explicit OffsetBuffer(std::size_t min_ring = kDefaultMinRing) : min_ring_(min_ring) {}
    [[nodiscard]] std::uint64_t begin() const { return begin_; }
    [[nodiscard]] std::uint64_t end() const { return begin_ + size_; }
    [[nodiscard]] std::size_t size() const { return size_; }
    // The longest contiguous run of stored bytes starting at off (begin <=
    // off < end), at most max_len long; shorter only where the ring wraps.
    [[nodiscard]] std::span<const std::uint8_t> contiguous(std::uint64_t off, std::size_t max_len) const;
    void append(std::span<const std::uint8_t> bytes);
    // Room for up to n more bytes at end(), for the caller to fill in place:
    // the longest contiguous run (shorter where the ring wraps, so call again
    // after commit()). Valid until the next non-const call.
    std::span<std::uint8_t> prepare(std::size_t n);
    // Makes the first n bytes of the last prepare() part of the buffer
    // (std::logic_error if n exceeds what it returned).
    void commit(std::size_t n);
    // Grows so that end() >= new_end; the new bytes are unspecified until written.
    void extend_to(std::uint64_t new_end);
    // Copies bytes to/from [off, off + n), which must lie within [begin, end).
    void write_at(std::uint64_t off, std::span<const std::uint8_t> bytes);
    void read_at(std::uint64_t off, std::span<std::uint8_t> out) const;
    // Drops the bytes before off; may shrink the ring (see the class comment).
    void drop_front_to(std::uint64_t off);
    // Drops every byte and gives the ring's memory back: an empty buffer
    // starting at `off` (>= begin()), for a stream whose bytes no longer
    // matter (reset or stopped, RFC 9000 §3.5).
    void release_to(std::uint64_t off);
    // The ring's capacity in use now (0 before the first byte).
    [[nodiscard]] std::size_t ring_capacity() const { return cap_; }
    // An empty buffer's next byte goes to the ring's start, the part most
    // recently written and so the likeliest to be in the cache; a reader that
    // keeps up then cycles through the first few KiB of a large ring instead
    // of all of it. (Only for receive buffers: a send ring's geometry decides
    // where STREAM frames split, see above.)
    void rewind_if_empty() {
        if (size_ == 0) head_ = 0;
    }
    // An empty buffer that starts at `off` (>= begin()), nothing stored:
    // for bytes handed on without being kept (RecvStream's sink).
    void skip_empty_to(std::uint64_t off) {
        begin_ = std::max(begin_, off);
        head_ = 0;
    }
    // Hints the CPU to load the stored bytes of [off, off + n) into the cache.
    void prefetch(std::uint64_t off, std::size_t n) const;

private:
    void reserve(std::size_t n);
    void shrink_if_oversized();
    [[nodiscard]] std::size_t index(std::uint64_t off) const { return (head_ + (off - begin_)) & (cap_ - 1); }

    // Small rings come from the heap; bulk rings are mapped on their own and
    // backed by transparent huge pages where the kernel allows (first-touch
    // page faults dominated the ring's cost in a loopback profile).
    struct Memory {
        std::uint8_t* ptr = nullptr;
        std::size_t size = 0;
        bool mapped = false;
        Memory() = default;
        explicit Memory(std::size_t n);
        Memory(Memory&& o) noexcept : ptr(o.ptr), size(o.size), mapped(o.mapped) { o.ptr = nullptr; }
        Memory& operator=(Memory&& o) noexcept;
        ~Memory() { release(); }
        void release();
        // A mapped block grows to n bytes keeping its pages and contents;
        // false (nothing changed) for heap blocks or when the kernel refuses.
        bool grow_mapped(std::size_t n);
    };

    Memory ring_;
    std::size_t min_ring_;
    std::size_t prepared_ = 0;  // bytes the last prepare() offered
    std::size_t cap_ = 0;   // a power of two, or 0
    std::size_t head_ = 0;  // ring index of begin_
    std::size_t size_ = 0;
    std::uint64_t begin_ = 0;
};

class SendStream {
public:
    explicit SendStream(std::size_t buffer_limit, std::size_t min_ring = OffsetBuffer::kDefaultMinRing)
        : buffer_limit_(buffer_limit), buffer_(min_ring) {}

    // Application side.
    std::size_t write(std::span<const std::uint8_t> data);
    // Zero-copy writing: room for up to max bytes (bounded by capacity()) and
    // then commit(n) of what was filled in. See OffsetBuffer::prepare.
    std::span<std::uint8_t> prepare(std::size_t max);
    void commit(std::size_t n) { buffer_.commit(n); }
    void finish() { if (!fin_offset_ && !reset_) fin_offset_ = end(); }
    // Abandons the stream (RFC 9000 §3.1 "Reset Sent"): unsent and
    // unacknowledged bytes are dropped with their memory, nothing more is
    // sent or resent, acknowledgements and losses of earlier frames change
    // nothing. Returns the final size for RESET_STREAM: the bytes sent so
    // far, which is what the peer's flow control counted (§4.5).
    std::uint64_t reset();
    [[nodiscard]] bool is_reset() const { return reset_; }

    // A generated stream stores nothing: `source` makes the bytes of a
    // chunk each time it is sent or resent (Connection::set_stream_source).
    // Only before the first byte (false after); write() and prepare() then
    // take nothing and generate(n) appends n bytes, bounded by capacity().
    using Source = std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)>;
    bool set_source(Source source);
    std::size_t generate(std::size_t n);
    [[nodiscard]] bool generated() const { return static_cast<bool>(source_); }
    [[nodiscard]] bool finished() const { return fin_offset_.has_value(); }
    [[nodiscard]] std::size_t capacity() const;

    // Transport side. A chunk to put in a STREAM frame: retransmissions first
    // (lowest offset), then new data up to new_data_limit (flow control: the
    // absolute stream offset we may not exceed).
    struct Chunk {
        std::uint64_t offset = 0;
        std::span<const std::uint8_t> data;
        bool fin = false;
        bool retransmission = false;
    };
    std::optional<Chunk> next_chunk(std::size_t max_len, std::uint64_t new_data_limit) const;
    void on_sent(const Chunk& c);
    // Cache hint for data about to be sent (any range; bytes not buffered are skipped).
    void prefetch(std::uint64_t offset, std::size_t length) const { buffer_.prefetch(offset, length); }
    // Returns how many bytes were newly acknowledged.
    std::uint64_t on_acked(std::uint64_t offset, std::uint64_t length, bool fin);
    void on_lost(std::uint64_t offset, std::uint64_t length, bool fin);

    [[nodiscard]] bool has_pending(std::uint64_t new_data_limit) const;
    // Highest offset ever sent (counts against flow control once).
    [[nodiscard]] std::uint64_t sent_end() const { return sent_end_; }
    [[nodiscard]] std::uint64_t written() const { return end(); }
    // Every byte below this offset is acknowledged.
    [[nodiscard]] std::uint64_t acked_end() const { return begin(); }
    [[nodiscard]] bool all_acked() const;
    // Blocked on flow control: data waits beyond the limit.
    [[nodiscard]] bool blocked_at(std::uint64_t new_data_limit) const {
        return end() > sent_end_ && sent_end_ >= new_data_limit;
    }

private:
    void release_acked_prefix();
    // [first unacknowledged byte, end of written data), stored or generated.
    [[nodiscard]] std::uint64_t begin() const { return source_ ? generated_begin_ : buffer_.begin(); }
    [[nodiscard]] std::uint64_t end() const { return source_ ? generated_end_ : buffer_.end(); }
    // Up to max_len bytes from off (begin() <= off < end()): the ring's
    // contiguous run, or the source's bytes in a buffer per thread, valid
    // until the next call on this thread.
    [[nodiscard]] std::span<const std::uint8_t> bytes_at(std::uint64_t off, std::size_t max_len) const;

    std::size_t buffer_limit_;
    OffsetBuffer buffer_;     // [first unacked byte, end of written data), unless generated
    Source source_;
    std::uint64_t generated_begin_ = 0;
    std::uint64_t generated_end_ = 0;
    RangeSet acked_;          // acknowledged ranges at or above buffer_.begin()
    RangeSet lost_;           // ranges to retransmit (minus acked)
    std::uint64_t sent_end_ = 0;
    std::optional<std::uint64_t> fin_offset_;
    bool fin_sent_ = false;
    bool fin_acked_ = false;
    bool fin_lost_ = false;
    bool reset_ = false;
};

// Received bytes wait in a ring that spans [read offset, highest byte), so
// its memory follows the span, not the bytes: a peer sending one byte every
// 2 MiB would make it map megabytes per byte. The ring therefore spans at
// most kSparseFactor times the bytes it would hold (or its first size);
// bytes that arrive beyond that, far past a gap, wait in chunks of their
// own (memory: the bytes plus a node each, and the number of such ranges is
// capped by ConnectionLimits::stream_ranges) and move into the ring once it
// reaches them. Every readable byte is in the ring: readable bytes are
// contiguous, so their span is at most the bytes held.
class RecvStream {
public:
    static constexpr std::uint64_t kSparseFactor = 4;
    explicit RecvStream(std::size_t min_ring = OffsetBuffer::kDefaultMinRing) : buffer_(min_ring), min_ring_(min_ring) {}
    enum class Result { ok, duplicate, final_size_error };
    // Stores a STREAM frame's data. Flow control is checked by the caller.
    Result on_frame(std::uint64_t offset, std::span<const std::uint8_t> data, bool fin);
    std::size_t read(std::span<std::uint8_t> out);
    [[nodiscard]] std::size_t readable() const;
    // Disjoint ranges of received bytes at or above the read offset: 1 plus
    // the holes a peer left (each insertion costs up to this many moves).
    [[nodiscard]] std::size_t range_count() const { return received_.interval_count(); }
    // Zero-copy reading: the longest contiguous run of in-order bytes (shorter
    // than readable() where the ring wraps), then consume() what was used.
    [[nodiscard]] std::span<const std::uint8_t> peek() const;
    void consume(std::size_t n);
    // Delivery without keeping: from now on each in-order byte goes to the
    // sink as the frame carrying it arrives (what is readable now at once);
    // only bytes beyond a gap wait in the buffer, and go once it fills.
    // Returns the bytes handed on now.
    using Sink = std::function<void(std::uint64_t offset, std::span<const std::uint8_t> bytes)>;
    std::size_t set_sink(Sink sink);
    [[nodiscard]] bool has_sink() const { return static_cast<bool>(sink_); }
    // The bytes handed to the sink since the last call (they count as read).
    std::size_t take_sunk() { return std::exchange(sunk_, std::size_t{0}); }
    // FIN received and every byte read by the application (or discarded
    // after discard()); never for a reset stream.
    [[nodiscard]] bool finished() const { return !reset_ && final_size_ && read_offset_ == *final_size_; }
    [[nodiscard]] bool fin_pending() const {
        return final_size_ && readable() == 0 && !fin_reported_ && !discarding_;
    }
    // The receive half has ended, by its FIN or by the peer's reset.
    [[nodiscard]] bool done() const { return reset_ || finished(); }
    // Every byte up to the FIN has arrived (RFC 9000 §3.2 "Data Recvd"),
    // or the stream was reset: nothing more is wanted from the peer.
    [[nodiscard]] bool all_received() const {
        return reset_ || (final_size_ && received_.contiguous_end(read_offset_) == *final_size_);
    }
    // The application stops reading (STOP_SENDING, RFC 9000 §3.5): what is
    // held is dropped with its memory, and from now on frames are checked
    // (final size) and counted but not kept. Returns the bytes this skipped
    // past the read offset, which count as consumed for flow control; later
    // frames' bytes come back from on_frame's skipped().
    std::uint64_t discard();
    // The peer's RESET_STREAM (RFC 9000 §3.2 "Reset Recvd"), its final
    // size checked by the caller: what is held is dropped as by discard().
    // Returns the bytes skipped past the read offset, up to the final size.
    std::uint64_t on_reset(std::uint64_t final_size);
    [[nodiscard]] bool is_reset() const { return reset_; }
    [[nodiscard]] bool discarding() const { return discarding_; }
    // Bytes a discarding stream skipped since the last call (they count as consumed).
    std::uint64_t take_skipped() { return std::exchange(skipped_, std::uint64_t{0}); }
    [[nodiscard]] std::uint64_t highest_received() const { return highest_; }
    [[nodiscard]] std::optional<std::uint64_t> final_size() const { return final_size_; }
    [[nodiscard]] std::uint64_t read_offset() const { return read_offset_; }
    void mark_fin_reported() { fin_reported_ = true; }
    // Memory held for reading: the ring's capacity and the far chunks'.
    [[nodiscard]] std::size_t memory() const;
    // Bytes received and not yet read (in the ring or far chunks).
    [[nodiscard]] std::uint64_t held() const { return held_; }

private:
    OffsetBuffer buffer_;  // [read_offset_, highest_), or less: see far_
    std::size_t min_ring_;
    FarBytes far_;  // bytes beyond the ring's reach (class comment)
    std::uint64_t held_ = 0;
    RangeSet received_;
    std::uint64_t read_offset_ = 0;
    std::uint64_t highest_ = 0;
    std::optional<std::uint64_t> final_size_;
    bool fin_reported_ = false;
    bool discarding_ = false;  // discard() or on_reset(): bytes are counted, not kept
    bool reset_ = false;
    std::uint64_t skipped_ = 0;
    Sink sink_;
    std::size_t sunk_ = 0;

    void drain_to_sink();
    // The ring may span up to read_offset_ + this.
    [[nodiscard]] std::uint64_t ring_reach() const {
        return std::max<std::uint64_t>({buffer_.ring_capacity(), min_ring_, kSparseFactor * held_});
    }
    // Copies [lo, hi) of a frame's data that starts at `offset` where it belongs.
    void store(std::uint64_t offset, std::span<const std::uint8_t> data, std::uint64_t lo, std::uint64_t hi, bool in_ring);
    // Moves far chunks the ring now reaches into it, lowest first.
    void pull_far_into_ring();
};

}  // namespace ndm::transport
