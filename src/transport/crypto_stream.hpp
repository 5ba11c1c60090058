// The CRYPTO data of one encryption level, both ways (RFC 9000 §19.6, §7.5;
// RFC 9001 §4.1.3): TLS output split into CRYPTO frames, retransmitted where
// lost and released where acknowledged; and received CRYPTO frames
// reassembled into the in-order bytes TLS reads. The connection holds one per
// level (Initial, Handshake, 1-RTT). A SendStream and a RecvStream without
// FIN or flow control do the bookkeeping; this adds the frames, the
// reassembly cap and key discard. Sans-I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "transport/frame_sink.hpp"
#include "transport/sent_frame.hpp"
#include "transport/stream.hpp"

namespace ndm::transport {

// RFC 9000 §7.5: an endpoint MUST buffer at least 4096 bytes of out-of-order CRYPTO data.
inline constexpr std::size_t kMinCryptoBuffer = 4096;

class CryptoStream {
public:
    struct Config {
        // Receive side: most bytes held between the consumed point and the
        // end of the highest frame (what the reassembly buffer costs);
        // at least kMinCryptoBuffer (std::invalid_argument otherwise).
        std::size_t max_buffered = 64 * 1024;
    };
    CryptoStream();
    explicit CryptoStream(Config cfg);

    // ---- send side
    // Appends TLS output of this level (all of it: TLS cannot take it back).
    // std::logic_error after discard().
    void write(std::span<const std::uint8_t> bytes);
    // New or lost bytes await sending (exact: a driver told yes finds a frame).
    [[nodiscard]] bool has_pending() const;
    // Writes one CRYPTO frame, as large as fits, of lost bytes first (the
    // lowest, at their original offsets) then new ones, with the record
    // sent::Crypto{offset, length}. Shorter than the room only where the send
    // buffer's ring wraps (call again). False if nothing fits or is pending.
    bool write_frame(FrameSink& sink);
    // Acknowledged bytes are never resent, whatever is lost later.
    void on_acked(const sent::Crypto& c);
    // Lost bytes are resent, except those acknowledged (before or after).
    void on_lost(const sent::Crypto& c);
    // A PTO probe (RFC 9002 §6.2.4): every sent, unacknowledged byte is pending again.
    void mark_all_lost();
    // Everything written has been acknowledged (true after discard()).
    [[nodiscard]] bool all_acked() const;

    // ---- receive side
    enum class Result : std::uint8_t { ok, buffer_exceeded };
    // Buffers a CRYPTO frame's data; duplicates and overlaps keep the bytes
    // first received (RFC 9000 §2.2: the same data at the same offset).
    // buffer_exceeded, with nothing buffered: the frame ends more than
    // max_buffered bytes past the consumed point; the caller closes with
    // CRYPTO_BUFFER_EXCEEDED (RFC 9000 §7.5). wire::decode_frame already
    // rejects offset + length > 2^62-1 (FRAME_ENCODING_ERROR); called with
    // such a frame anyway, this answers buffer_exceeded, which §19.6 also
    // allows. Ignored (ok) after discard().
    Result on_frame(std::uint64_t offset, std::span<const std::uint8_t> data);
    // The in-order bytes not yet consumed, zero-copy: the longest contiguous
    // run, shorter than all of them where the ring wraps, so hand it to TLS
    // and consume() it until empty. Valid until the next non-const call.
    [[nodiscard]] std::span<const std::uint8_t> readable() const;
    // std::logic_error if n exceeds readable().size().
    void consume(std::size_t n);

    // Key discard (RFC 9001 §4.9): frees both buffers. Afterwards frames,
    // acks and losses are ignored and nothing is pending; write() throws.
    void discard();
    [[nodiscard]] bool discarded() const { return !state_; }

private:
    // A handshake flight is a few KB: a bulk stream's 64 KiB rings, one per
    // direction and level in use, made each half-open server connection
    // hold 244 KB of heap (tests/alloc/idle_connection_memory.cpp).
    static constexpr std::size_t kMinRing = 4096;
    struct State {
        // A constructor, not member initializers: clang cannot use those of a
        // nested class within its enclosing one (state_'s in_place below).
        State() : send(SIZE_MAX, kMinRing), recv(kMinRing) {}  // TLS output is bounded by TLS, not by us
        SendStream send;
        RecvStream recv;
    };
    std::size_t max_buffered_;
    std::optional<State> state_{std::in_place};
};

}  // namespace ndm::transport
