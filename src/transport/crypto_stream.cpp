#include "transport/crypto_stream.hpp"

#include <algorithm>
#include <stdexcept>

namespace ndm::transport {

namespace {
// CRYPTO data has no flow control (RFC 9000 §7.5: TLS bounds it).
constexpr std::uint64_t kNoLimit = UINT64_MAX;

// The most data bytes a CRYPTO frame at offset carries in `room` bytes:
// type, offset, length (a varint as long as the length it holds) and data.
std::size_t crypto_data_room(std::size_t room, std::uint64_t offset) {
    const std::size_t header = 1 + wire::varint_size(offset);
    if (room <= header) return 0;
    const std::size_t avail = room - header;
    std::size_t n = avail - wire::varint_size(avail);
    // A shorter length field may leave room for a byte or two more.
    while (n < avail && n + 1 + wire::varint_size(n + 1) <= avail) ++n;
    return n;
}
}  // namespace

CryptoStream::CryptoStream() : CryptoStream(Config{}) {}

CryptoStream::CryptoStream(Config cfg) : max_buffered_(cfg.max_buffered) {
    if (max_buffered_ < kMinCryptoBuffer)
        throw std::invalid_argument("CryptoStream: max_buffered below the 4096 bytes RFC 9000 §7.5 requires");
}

// ---- send side

void CryptoStream::write(std::span<const std::uint8_t> bytes) {
    if (!state_) throw std::logic_error("CryptoStream::write after its keys were discarded");
    state_->send.write(bytes);
}

bool CryptoStream::has_pending() const { return state_ && state_->send.has_pending(kNoLimit); }

bool CryptoStream::write_frame(FrameSink& sink) {
    if (!state_) return false;
    SendStream& send = state_->send;
    auto chunk = send.next_chunk(sink.remaining(), kNoLimit);
    if (!chunk) return false;
    // Trimming keeps the chunk's meaning: on_sent() marks only its bytes sent.
    const std::size_t n = std::min(chunk->data.size(), crypto_data_room(sink.remaining(), chunk->offset));
    if (n == 0) return false;
    chunk->data = chunk->data.first(n);
    if (!sink.put(wire::CryptoFrame{chunk->offset, chunk->data}, sent::Crypto{chunk->offset, n})) return false;
    send.on_sent(*chunk);
    return true;
}

void CryptoStream::on_acked(const sent::Crypto& c) {
    if (state_) state_->send.on_acked(c.offset, c.length, false);
}

void CryptoStream::on_lost(const sent::Crypto& c) {
    if (state_) state_->send.on_lost(c.offset, c.length, false);
}

void CryptoStream::mark_all_lost() {
    // SendStream skips what is acknowledged when it retransmits.
    if (state_) state_->send.on_lost(0, state_->send.sent_end(), false);
}

bool CryptoStream::all_acked() const { return !state_ || state_->send.acked_end() == state_->send.written(); }

// ---- receive side

CryptoStream::Result CryptoStream::on_frame(std::uint64_t offset, std::span<const std::uint8_t> data) {
    if (!state_) return Result::ok;
    RecvStream& recv = state_->recv;
    // Neither term exceeds 2^62, so the sum cannot wrap; nor may the frame
    // end past 2^62-1 (RFC 9000 §19.6), whatever max_buffered is.
    const std::uint64_t limit =
        std::min(wire::kVarintMax, recv.read_offset() + std::min<std::uint64_t>(max_buffered_, wire::kVarintMax));
    if (offset > limit || data.size() > limit - offset) return Result::buffer_exceeded;
    if (!data.empty()) recv.on_frame(offset, data, false);  // without FIN it never fails
    return Result::ok;
}

std::span<const std::uint8_t> CryptoStream::readable() const {
    return state_ ? state_->recv.peek() : std::span<const std::uint8_t>{};
}

void CryptoStream::consume(std::size_t n) {
    if (state_) {
        state_->recv.consume(n);
    } else if (n > 0) {
        throw std::logic_error("consume: more bytes than are readable");
    }
}

void CryptoStream::discard() { state_.reset(); }

}  // namespace ndm::transport
