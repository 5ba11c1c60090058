// Where HTTP/3 abandons half of a request stream, or learns that the peer
// did (RFC 9114 §4.1.1, §8): nghttp3's reset_stream and stop_sending
// callbacks, a body that cannot be finished, Session::cancel(), and the
// transport's StreamReset and StreamStopped events. QUIC carries each as
// RESET_STREAM or STOP_SENDING with the HTTP/3 error code (RFC 9000 §19.4,
// §19.5); the connection and its other requests go on (docs/h3.md, "Stream
// cancellation"). The Session::Impl members these helpers serve
// (abort_send, abort_receive, on_peer_reset, on_peer_stop, cancel) are
// defined in stream_abort.cpp.
#pragma once

#include <cstdint>

#include "ndm/connection.hpp"

namespace ndm::h3 {

// Our sending half of `id` ends with HTTP/3 error `code` (RESET_STREAM):
// never a FIN, which would let a cut body pass for a whole one. Nothing
// happens for a stream the transport no longer holds (both halves over).
void abandon_send(Connection& c, StreamId id, std::uint64_t code);

// We want nothing more of the peer's sending half of `id` (STOP_SENDING
// with `code`): what it sent and we did not read is dropped, and so is
// what still comes; a consume() after this takes nothing (connection.hpp).
void abandon_receive(Connection& c, StreamId id, std::uint64_t code);

}  // namespace ndm::h3
