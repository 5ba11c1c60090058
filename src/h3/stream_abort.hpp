// The one place where HTTP/3 asks the transport to abandon half of a stream:
// nghttp3's reset_stream and stop_sending callbacks (RFC 9114 §4.1.1, §8),
// which QUIC carries as RESET_STREAM and STOP_SENDING (RFC 9000 §19.4,
// §19.5). ndm::Connection has neither call yet; abandon_send() and
// abandon_receive() use the best it has, and become one Connection call each
// when it does (docs/h3.md, "Stream cancellation").
#pragma once

#include <cstdint>
#include <string>

#include "ndm/connection.hpp"

namespace ndm::h3 {

// Our sending half of `id` must stop with HTTP/3 error `code`. Ending it with
// a FIN would let a cut body pass for a whole one, so, lacking RESET_STREAM,
// the connection is closed with `code` (an application close) and a reason
// naming the stream; the reason is returned so that the session reports it.
std::string abandon_send(Connection& c, StreamId id, std::uint64_t code, Instant now);

// We want nothing more of the peer's sending half of `id` (code as above).
// Lacking STOP_SENDING the peer is not told: what it still sends is read and
// discarded by the session, so its flow-control credit keeps returning.
void abandon_receive(Connection& c, StreamId id, std::uint64_t code);

}  // namespace ndm::h3
