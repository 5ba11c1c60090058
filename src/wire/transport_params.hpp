// QUIC transport parameters (RFC 9000 §18): the v1 set with its ids,
// encodings, defaults and validation (§18.2, §7.4), role-aware, plus ndm's
// own opaque blob under a private id (docs/wire-format.md §8).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ndm/connection.hpp"
#include "ndm/time.hpp"
#include "wire/packet.hpp"  // ConnectionId
#include "wire/varint.hpp"
#include "wire/wire_error.hpp"

namespace ndm::wire {

namespace param_id {
inline constexpr std::uint64_t original_destination_connection_id = 0x00;  // server only
inline constexpr std::uint64_t max_idle_timeout = 0x01;                    // milliseconds
inline constexpr std::uint64_t stateless_reset_token = 0x02;               // server only, 16 bytes
inline constexpr std::uint64_t max_udp_payload_size = 0x03;                // bytes, >= 1200
inline constexpr std::uint64_t initial_max_data = 0x04;
inline constexpr std::uint64_t initial_max_stream_data_bidi_local = 0x05;
inline constexpr std::uint64_t initial_max_stream_data_bidi_remote = 0x06;
inline constexpr std::uint64_t initial_max_stream_data_uni = 0x07;
inline constexpr std::uint64_t initial_max_streams_bidi = 0x08;  // <= 2^60
inline constexpr std::uint64_t initial_max_streams_uni = 0x09;   // <= 2^60
inline constexpr std::uint64_t ack_delay_exponent = 0x0a;        // <= 20
inline constexpr std::uint64_t max_ack_delay = 0x0b;             // milliseconds, < 2^14
inline constexpr std::uint64_t disable_active_migration = 0x0c;  // empty
inline constexpr std::uint64_t preferred_address = 0x0d;         // server only
inline constexpr std::uint64_t active_connection_id_limit = 0x0e;  // >= 2
inline constexpr std::uint64_t initial_source_connection_id = 0x0f;
inline constexpr std::uint64_t retry_source_connection_id = 0x10;  // server only
// RFC 9368 §3: the sender's Chosen Version and its Available Versions.
inline constexpr std::uint64_t version_information = 0x11;
// RFC 9221 §3: the largest DATAGRAM frame (type, length and payload) the
// sender takes; absent or 0: it takes none.
inline constexpr std::uint64_t max_datagram_frame_size = 0x20;
// draft-ietf-quic-ack-frequency-14 §3 (provisional): microseconds, at most
// max_ack_delay; its presence says the sender takes ACK_FREQUENCY and
// IMMEDIATE_ACK frames.
inline constexpr std::uint64_t min_ack_delay = 0xff04de1b;
// ndm's opaque application blob (the ndm-send test parameters): "ndm-ap" in
// ASCII, a randomly chosen 8-byte codepoint outside the IANA registry's
// assigned values and not of greasing form (docs/wire-format.md §8).
inline constexpr std::uint64_t ndm_application_params = 0x6e646d2d6170;
}  // namespace param_id

// RFC 9000 §18.1: ids of the form 31·N + 27 are reserved for greasing.
constexpr bool is_greasing_id(std::uint64_t id) { return id % 31 == 27; }

inline constexpr std::size_t kMaxApplicationParams = 512;
inline constexpr std::uint64_t kMinUdpPayloadSize = 1200;         // RFC 9000 §18.2
inline constexpr std::uint64_t kDefaultUdpPayloadSize = 65527;    // RFC 9000 §18.2
inline constexpr std::uint64_t kMinActiveConnectionIdLimit = 2;   // RFC 9000 §18.2

// Which endpoint sent (or sends) the parameters: a client must not send the
// server-only ones (RFC 9000 §18.2).
enum class Role : std::uint8_t { client, server };

using ResetToken = std::array<std::uint8_t, 16>;  // RFC 9000 §10.3

// RFC 9000 §18.2, Figure 22.
struct PreferredAddress {
    std::array<std::uint8_t, 4> ipv4{};
    std::uint16_t ipv4_port = 0;
    std::array<std::uint8_t, 16> ipv6{};
    std::uint16_t ipv6_port = 0;
    ConnectionId cid;  // 1..20 bytes
    ResetToken reset_token{};
    bool operator==(const PreferredAddress&) const = default;
};

// RFC 9368 §3, Figure 2. Decoding checks §4's parsing rules: a whole number
// of versions, none of them 0, and a client's Chosen Version among its
// Available Versions; at most kMaxAvailableVersions are kept.
struct VersionInformation {
    std::uint32_t chosen = 0;
    std::vector<std::uint32_t> available;
    bool operator==(const VersionInformation&) const = default;
};
inline constexpr std::size_t kMaxAvailableVersions = 64;

// Absent parameters hold the RFC 9000 §18.2 defaults.
struct TransportParams {
    std::optional<ConnectionId> original_destination_connection_id;
    std::uint64_t max_idle_timeout_ms = 0;  // 0: no idle timeout
    std::optional<ResetToken> stateless_reset_token;
    // Any value >= 1200 is valid on the wire; ndm caps what it uses at
    // kMaxDatagramSize (65507), the largest UDP payload over IPv4.
    std::uint64_t max_udp_payload_size = kDefaultUdpPayloadSize;
    std::uint64_t initial_max_data = 0;
    std::uint64_t initial_max_stream_data_bidi_local = 0;   // streams the sender opens
    std::uint64_t initial_max_stream_data_bidi_remote = 0;  // streams the receiver opens
    std::uint64_t initial_max_stream_data_uni = 0;          // streams the receiver opens
    std::uint64_t initial_max_streams_bidi = 0;
    std::uint64_t initial_max_streams_uni = 0;
    std::uint64_t ack_delay_exponent = 3;
    std::uint64_t max_ack_delay_ms = 25;
    bool disable_active_migration = false;
    std::optional<PreferredAddress> preferred_address;
    std::uint64_t active_connection_id_limit = kMinActiveConnectionIdLimit;
    std::optional<ConnectionId> initial_source_connection_id;
    std::optional<ConnectionId> retry_source_connection_id;
    std::optional<VersionInformation> version_information;
    std::optional<std::uint64_t> min_ack_delay_us;  // absent: no ACK frequency extension
    // RFC 9221 §3: 0 (the default, not sent) takes no DATAGRAM frames.
    std::uint64_t max_datagram_frame_size = 0;
    std::vector<std::uint8_t> application_params;  // ndm_application_params, <= 512 bytes
    bool operator==(const TransportParams&) const = default;
};

// Writes the parameters in id order: integers that differ from their
// default, the present optional ones, one greasing parameter if grease_seed
// is given (its id and 4-byte value derived from the seed, so its size is
// fixed: reproducible packet sizes), and the ndm blob last if non-empty.
// Refuses (writing nothing) values the peer would reject, including
// server-only parameters when sender is a client.
bool encode_transport_params(Writer& w, const TransportParams& p, Role sender,
                             std::optional<std::uint32_t> grease_seed = std::nullopt);
// Decodes parameters the sender wrote. Fails, with TRANSPORT_PARAMETER_ERROR
// in err.code, on truncation, duplicate ids, a wrong length or out-of-range
// value, or a server-only parameter from a client; unknown and greasing ids
// are skipped (RFC 9000 §7.4.2, §18.1). On failure out is left untouched.
bool decode_transport_params(std::span<const std::uint8_t> in, Role sender, TransportParams& out, Error& err);

// The public view (ndm/connection.hpp) of decoded parameters.
ndm::TransportParameters to_public(const TransportParams& p);

}  // namespace ndm::wire
