// Value equality of decoded wire frames, shared by the frame tests and the
// wire-codec fuzzer (fuzz/packet_parser_fuzz.cpp): a frame that decodes must
// re-encode and decode to an equal frame.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>

#include "wire/frame.hpp"

namespace ndm::test {

inline bool same_bytes(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

namespace frame_equal_detail {

using namespace ndm::wire;

inline bool eq(const PaddingFrame& a, const PaddingFrame& b) { return a.length == b.length; }
inline bool eq(const PingFrame&, const PingFrame&) { return true; }
inline bool eq(const HandshakeDoneFrame&, const HandshakeDoneFrame&) { return true; }
inline bool eq(const AckFrame& a, const AckFrame& b) {
    return a.ranges == b.ranges && a.ack_delay == b.ack_delay && a.ecn == b.ecn;
}
inline bool eq(const CryptoFrame& a, const CryptoFrame& b) { return a.offset == b.offset && same_bytes(a.data, b.data); }
inline bool eq(const StreamFrame& a, const StreamFrame& b) {
    return a.stream_id == b.stream_id && a.offset == b.offset && a.fin == b.fin && same_bytes(a.data, b.data);
}
inline bool eq(const MaxDataFrame& a, const MaxDataFrame& b) { return a.maximum == b.maximum; }
inline bool eq(const MaxStreamDataFrame& a, const MaxStreamDataFrame& b) {
    return a.stream_id == b.stream_id && a.maximum == b.maximum;
}
inline bool eq(const MaxStreamsFrame& a, const MaxStreamsFrame& b) { return a.maximum == b.maximum && a.bidi == b.bidi; }
inline bool eq(const DataBlockedFrame& a, const DataBlockedFrame& b) { return a.limit == b.limit; }
inline bool eq(const StreamDataBlockedFrame& a, const StreamDataBlockedFrame& b) {
    return a.stream_id == b.stream_id && a.limit == b.limit;
}
inline bool eq(const StreamsBlockedFrame& a, const StreamsBlockedFrame& b) {
    return a.limit == b.limit && a.bidi == b.bidi;
}
inline bool eq(const ResetStreamFrame& a, const ResetStreamFrame& b) {
    return a.stream_id == b.stream_id && a.error_code == b.error_code && a.final_size == b.final_size;
}
inline bool eq(const StopSendingFrame& a, const StopSendingFrame& b) {
    return a.stream_id == b.stream_id && a.error_code == b.error_code;
}
inline bool eq(const NewTokenFrame& a, const NewTokenFrame& b) { return same_bytes(a.token, b.token); }
inline bool eq(const NewConnectionIdFrame& a, const NewConnectionIdFrame& b) {
    return a.sequence == b.sequence && a.retire_prior_to == b.retire_prior_to && same_bytes(a.cid, b.cid) &&
           same_bytes(a.reset_token, b.reset_token);
}
inline bool eq(const RetireConnectionIdFrame& a, const RetireConnectionIdFrame& b) { return a.sequence == b.sequence; }
inline bool eq(const PathChallengeFrame& a, const PathChallengeFrame& b) { return a.data == b.data; }
inline bool eq(const PathResponseFrame& a, const PathResponseFrame& b) { return a.data == b.data; }
inline bool eq(const AckFrequencyFrame& a, const AckFrequencyFrame& b) {
    return a.sequence == b.sequence && a.ack_eliciting_threshold == b.ack_eliciting_threshold &&
           a.requested_max_ack_delay_us == b.requested_max_ack_delay_us &&
           a.reordering_threshold == b.reordering_threshold;
}
inline bool eq(const ImmediateAckFrame&, const ImmediateAckFrame&) { return true; }
// A 0x30 frame re-encodes as 0x31 (the encoder always writes the length): the payload is the frame.
inline bool eq(const DatagramFrame& a, const DatagramFrame& b) { return same_bytes(a.data, b.data); }
inline bool eq(const ConnectionCloseFrame& a, const ConnectionCloseFrame& b) {
    return a.error_code == b.error_code && a.application == b.application && a.reason == b.reason &&
           (a.application || a.frame_type == b.frame_type);  // 0x1d carries no frame type (RFC 9000 §19.19)
}

}  // namespace frame_equal_detail

inline bool frames_equal(const wire::Frame& a, const wire::Frame& b) {
    using frame_equal_detail::eq;
    if (a.index() != b.index()) return false;
    return std::visit([&](const auto& x) { return eq(x, std::get<std::decay_t<decltype(x)>>(b)); }, a);
}

}  // namespace ndm::test
