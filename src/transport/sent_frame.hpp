// What a sent packet carried, remembered so that the connection can
// retransmit lost information (not lost packets: RFC 9000 §13.3) and release
// acknowledged data.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

namespace ndm::transport {

namespace sent {
struct Stream { std::uint64_t id; std::uint64_t offset; std::uint64_t length; bool fin; };
struct Crypto { std::uint64_t length; };           // the handshake message
struct Ack { std::uint64_t largest; };             // for ack-of-ack pruning
struct MaxData { std::uint64_t maximum; };
struct MaxStreamData { std::uint64_t id; std::uint64_t maximum; };
struct MaxStreams { std::uint64_t maximum; };
struct DataBlocked { std::uint64_t limit; };
struct StreamDataBlocked { std::uint64_t id; std::uint64_t limit; };
struct HandshakeDone {};
struct Ping {};
}  // namespace sent

using SentFrame = std::variant<sent::Stream, sent::Crypto, sent::Ack, sent::MaxData,
                               sent::MaxStreamData, sent::MaxStreams, sent::DataBlocked,
                               sent::StreamDataBlocked, sent::HandshakeDone, sent::Ping>;

}  // namespace ndm::transport
