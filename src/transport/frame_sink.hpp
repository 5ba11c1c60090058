// The packet being built, as the pieces that fill it see it: frames go in
// until the packet is full, each with the record that loss recovery keeps of
// it (RFC 9000 §13.3 retransmits information, not packets), and, when a
// tracer is attached, its trace form. The connection writes ACK, CRYPTO,
// HANDSHAKE_DONE and PING through it; the stream set its flow-control and
// STREAM frames (as quinn-proto's streams object writes its own frames).
#pragma once

#include <vector>

#include "ndm/connection.hpp"
#include "wire/frame.hpp"
#include "transport/sent_frame.hpp"
#include "wire/varint.hpp"

namespace ndm::transport {

// The trace form of a wire frame (defined in connection_trace.cpp).
trace::Frame trace_frame(const wire::Frame& frame);

class FrameSink {
public:
    // trace may be null: no tracer, no trace frames. ACK frames are encoded
    // with ack_delay_exponent (RFC 9000 §19.3).
    FrameSink(wire::Writer& w, SentFrames& sent, std::vector<trace::Frame>* trace,
              unsigned ack_delay_exponent = wire::kDefaultAckDelayExponent)
        : w_(w), sent_(sent), trace_(trace), ack_delay_exponent_(ack_delay_exponent) {}

    // Encodes f if it fits; false (and nothing written) otherwise.
    bool put(const wire::Frame& f) {
        if (!wire::encode_frame(w_, f, ack_delay_exponent_)) return false;
        eliciting_ |= wire::is_ack_eliciting(f);
        if (trace_) trace_->push_back(trace_frame(f));
        return true;
    }
    // As put(f), and records what loss recovery must know of it.
    bool put(const wire::Frame& f, const SentFrame& record) {
        if (!put(f)) return false;
        sent_.push_back(record);
        return true;
    }
    [[nodiscard]] std::size_t remaining() const { return w_.remaining(); }
    [[nodiscard]] bool eliciting() const { return eliciting_; }

private:
    wire::Writer& w_;
    SentFrames& sent_;
    std::vector<trace::Frame>* trace_;
    unsigned ack_delay_exponent_;
    bool eliciting_ = false;
};

}  // namespace ndm::transport
