// Transport parameters exchanged in the handshake (RFC 9000 §18 in spirit):
// a sequence of (id varint, length varint, value) entries. Unknown ids are
// ignored so that later versions can add parameters.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ndm/time.hpp"
#include "transport/varint.hpp"
#include "transport/wire_error.hpp"

namespace ndm::wire {

namespace param_id {
inline constexpr std::uint64_t max_idle_timeout = 0x01;     // milliseconds
inline constexpr std::uint64_t max_datagram_size = 0x03;    // bytes, 1200..65507
inline constexpr std::uint64_t initial_max_data = 0x04;
inline constexpr std::uint64_t initial_max_stream_data = 0x05;
inline constexpr std::uint64_t initial_max_streams = 0x08;
inline constexpr std::uint64_t max_ack_delay = 0x0b;        // milliseconds
inline constexpr std::uint64_t application_params = 0x4e44; // opaque bytes
}  // namespace param_id

inline constexpr std::size_t kMaxApplicationParams = 512;

struct TransportParams {
    std::uint64_t max_idle_timeout_ms = 30000;
    std::uint64_t max_datagram_size = 1200;
    std::uint64_t initial_max_data = 0;
    std::uint64_t initial_max_stream_data = 0;
    std::uint64_t initial_max_streams = 0;
    std::uint64_t max_ack_delay_ms = 25;
    std::vector<std::uint8_t> application_params;
    bool operator==(const TransportParams&) const = default;
};

bool encode_transport_params(Writer& w, const TransportParams& p);
// Fails on truncation, duplicate ids, or out-of-range values (datagram size
// outside 1200..65507, max_ack_delay >= 2^14 ms, application blob > 512 bytes).
bool decode_transport_params(std::span<const std::uint8_t> in, TransportParams& out, Error& err);

}  // namespace ndm::wire
