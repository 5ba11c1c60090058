// The two ends of a bulk stream, as ndm-send, ndm-recv and the real-socket
// runs of ndm/experiment.hpp drive them. BulkWriter: the test payload as a
// generated stream (made into each packet as it is sent), or the bytes of a
// source (ndm-send -F's file) into the connection's send buffer; hashed for
// the byte-exactness check unless the receiver checks the payload against
// its generator; and only a little more than the congestion window ahead of what the peer
// acknowledged, so that the sender never starves and a timed send phase
// leaves no seconds of queued data behind it. drain(): the reader's side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>

#include "ndm/connection.hpp"
#include "ndm/workload.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm::workload {

class BulkWriter {
public:
    // Fills `out` with the stream's bytes at `offset`.
    using Source = std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)>;
    static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
    // The largest write into the stream at once.
    static constexpr std::size_t kChunk = 64 * 1024;
    // The most written and not yet sent. An endpoint turn sends at most 512
    // KiB of a connection (eight pacer quanta), so this never starves one;
    // and bytes written just before they are sealed are still in the cache,
    // where megabytes queued ahead were written and then read from memory.
    static constexpr std::uint64_t kLead = 16 * kChunk;

    // Writes Payload(seed); with a limit, that many bytes and then FIN. The
    // payload goes through no send buffer: the stream is a generated one
    // (Connection::set_stream_source), made into each packet as it is sent,
    // and the hash is taken from a second copy made in a cached buffer.
    explicit BulkWriter(std::uint64_t seed, std::uint64_t limit = kUnlimited) : payload_(seed), limit_(limit) {}
    // Writes `source`'s bytes instead of the payload, and no more than `size`.
    void use_source(Source source, std::uint64_t size);
    // Hashes nothing from now on (digest() is then meaningless): for a
    // receiver that checks the payload itself (workload::PayloadCheck).
    void skip_hash() { hashing_ = false; }

    // How much write() would write now, up to stream offset `upto`: no more
    // than max(2 cwnd, 4 chunks) outstanding beyond what the peer acknowledged,
    // no more than kLead beyond what was sent, and no more than a chunk
    // beyond `send_limit`, the offset the peer's flow control allows now
    // (Connection::stream_send_limit). Bytes past that limit only wait in the
    // ring: with 128 connections, each with a 128 KiB share of the peer's
    // receive budget and a cwnd twice that, two cwnds ahead made ndm-send
    // 163 MB resident, against 64 MB (bench/results/2026-12-06-sender-rings.md).
    [[nodiscard]] std::uint64_t allowance(const ConnectionStats& st, std::uint64_t send_limit,
                                          std::uint64_t upto) const;
    // Writes what allowance() allows and the stream's send buffer takes; the
    // last byte of a limit goes with FIN.
    void write(Connection& c, StreamId id, const ConnectionStats& st, std::uint64_t upto = kUnlimited);

    [[nodiscard]] std::uint64_t written() const { return written_; }
    [[nodiscard]] std::uint64_t limit() const { return limit_; }
    [[nodiscard]] bool done() const { return written_ >= limit_; }
    // Whether the stream ends with its last byte rather than at a time.
    [[nodiscard]] bool limited() const { return limit_ != kUnlimited; }
    // StreamHash of everything written so far.
    [[nodiscard]] std::uint64_t digest() const { return hash_.digest(); }

private:
    // Whether the stream generates payload_ itself (not a source's bytes),
    // set up at the first write.
    bool generating(Connection& c, StreamId id);

    Payload payload_;
    Source source_;  // instead of payload_ when set
    bool generating_ = false;
    StreamHash hash_;
    std::uint64_t limit_;
    std::uint64_t written_ = 0;
    bool hashing_ = true;
};

// Takes every in-order byte of the stream that has arrived, in place: f sees
// each contiguous run (a std::span<const std::uint8_t>). Returns the count.
template <typename F>
std::size_t drain(Connection& c, StreamId id, F&& f) {
    std::size_t total = 0;
    for (auto view = c.peek(id); !view.empty(); view = c.peek(id)) {
        f(view);
        total += view.size();
        c.consume(id, view.size());
    }
    return total;
}

}  // namespace ndm::workload

#pragma GCC visibility pop
