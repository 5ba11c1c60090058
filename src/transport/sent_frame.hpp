// What a sent packet carried, remembered so that the connection can
// retransmit lost information (not lost packets: RFC 9000 §13.3) and release
// acknowledged data.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>

namespace ndm::transport {

namespace sent {
// length: at most a datagram's payload (< 64 KiB), so 32 bits keep the
// record, one per sent packet, a word shorter.
struct Stream { std::uint64_t id; std::uint64_t offset; std::uint32_t length; bool fin; };
struct Crypto { std::uint64_t offset; std::uint64_t length; };  // CRYPTO data of the packet's level
struct Ack { std::uint64_t largest; };             // for ack-of-ack pruning
struct MaxData { std::uint64_t maximum; };
struct MaxStreamData { std::uint64_t id; std::uint64_t maximum; };
struct MaxStreams { std::uint64_t maximum; bool bidi = true; };
struct DataBlocked { std::uint64_t limit; };
struct StreamDataBlocked { std::uint64_t id; std::uint64_t limit; };
struct HandshakeDone {};
struct NewToken {};  // the connection's one token (RFC 9000 §19.7), sent again if lost
struct RetireConnectionId { std::uint64_t sequence; };
struct NewConnectionId { std::uint64_t sequence; };  // RFC 9000 §19.15, resent while the ID is active
struct Ping {};
struct AckFrequency { std::uint64_t sequence; };  // draft-ietf-quic-ack-frequency-14 §4
struct ResetStream { std::uint64_t id; std::uint64_t code; std::uint64_t final_size; };  // RFC 9000 §19.4
struct StopSending { std::uint64_t id; std::uint64_t code; };                            // RFC 9000 §19.5
struct Datagram { std::uint64_t id; };  // RFC 9221 §5.2: told acknowledged or lost, never resent
}  // namespace sent

using SentFrame = std::variant<sent::Stream, sent::Crypto, sent::Ack, sent::MaxData,
                               sent::MaxStreamData, sent::MaxStreams, sent::DataBlocked,
                               sent::StreamDataBlocked, sent::HandshakeDone, sent::RetireConnectionId,
                               sent::Ping, sent::AckFrequency, sent::ResetStream, sent::StopSending,
                               sent::NewConnectionId, sent::Datagram, sent::NewToken>;
// The largest alternative sets SentFrames' inline size (see below).
static_assert(sizeof(sent::Crypto) <= sizeof(sent::Stream) && sizeof(sent::ResetStream) <= sizeof(sent::Stream));
static_assert(sizeof(SentFrame) <= 32);

// The frames of one sent packet. A data packet carries an ACK and a STREAM
// frame or two, so the first few live inline: no allocation per packet
// (malloc/free of per-packet vectors was 4-5 % of a loopback bulk profile).
// More spill to the heap, all of them together. Kept small: the loss
// detector holds one per packet in flight and copies it out when the packet
// is acknowledged or lost (112 bytes; a std::vector for the spill made 152).
class SentFrames {
public:
    static constexpr std::size_t kInline = 3;

    SentFrames() = default;
    SentFrames(const SentFrames& o) : inline_(o.inline_), n_(o.n_), cap_(o.cap_) {
        if (o.heap_) {
            heap_ = std::make_unique<SentFrame[]>(cap_);
            std::copy_n(o.heap_.get(), n_, heap_.get());
        }
    }
    SentFrames& operator=(const SentFrames& o) {
        if (this != &o) *this = SentFrames(o);
        return *this;
    }
    // A moved-from SentFrames is empty (its count must not outlive its frames).
    SentFrames(SentFrames&& o) noexcept : inline_(o.inline_), n_(o.n_), cap_(o.cap_), heap_(std::move(o.heap_)) {
        o.reset();
    }
    SentFrames& operator=(SentFrames&& o) noexcept {
        if (this != &o) {
            inline_ = o.inline_;
            n_ = o.n_;
            cap_ = o.cap_;
            heap_ = std::move(o.heap_);
            o.reset();
        }
        return *this;
    }
    ~SentFrames() = default;

    void push_back(const SentFrame& f) {
        if (!heap_ && n_ < kInline) {
            inline_[n_++] = f;
            return;
        }
        if (!heap_ || n_ == cap_) grow();
        heap_[n_++] = f;
    }
    [[nodiscard]] std::size_t size() const { return n_; }
    [[nodiscard]] bool empty() const { return n_ == 0; }
    [[nodiscard]] const SentFrame* begin() const { return heap_ ? heap_.get() : inline_.data(); }
    [[nodiscard]] const SentFrame* end() const { return begin() + n_; }
    [[nodiscard]] const SentFrame& operator[](std::size_t i) const { return begin()[i]; }

private:
    void reset() {
        n_ = cap_ = 0;
        heap_.reset();
    }
    // The first spill moves the inline frames out too; then capacity doubles.
    void grow() {
        const std::uint32_t cap = heap_ ? 2 * cap_ : 2 * static_cast<std::uint32_t>(kInline);
        auto fresh = std::make_unique<SentFrame[]>(cap);
        std::copy_n(begin(), n_, fresh.get());
        heap_ = std::move(fresh);
        cap_ = cap;
    }

    std::array<SentFrame, kInline> inline_{};
    std::uint32_t n_ = 0;
    std::uint32_t cap_ = 0;                // of heap_
    std::unique_ptr<SentFrame[]> heap_;  // all n_ frames once there are more than kInline
};

}  // namespace ndm::transport
